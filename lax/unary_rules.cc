// jvp, transpose and batching rules of the unary elementwise primitives.
//
// Most jvps are t * f'(x), with f'(x) written in lax ops of the primal input x and output
// y (so the tangent is linear in t, transposes through mul/div, and differentiates again
// for higher orders). Piecewise-constant ops (floor, ceil, round, sign) and ops with integer
// or bool outputs have zero (undefined) tangents. Only neg is linear and has a transpose.
// Every primitive here is elementwise and batches by binding it on the batched operand.
#include "jx/lax/unary_rules.h"

#include <cmath>
#include <numbers>

#include "jx/lax/binary_ops.h"
#include "jx/lax/op_util.h"
#include "jx/lax/primitives.h"
#include "jx/lax/rule_util.h"
#include "jx/lax/unary_ops.h"
#include "jx/transforms/jvp.h"

namespace jx::lax::internal {
namespace {

using Span = absl::Span<const Array>;
constexpr double kPi = std::numbers::pi;

// A 0-d constant of x's dtype (weak, so it never changes the result type): unlike a C++
// double, which becomes a weak f32, it keeps full precision for f64 operands.
Array Like(const Array& x, double v) { return Array::Scalar(v, x.dtype(), /*weak_type=*/true); }

// The tangent of y = f(x) from t (defined), x and y; linear in t.
using TangentFn = Array (*)(const Array& t, const Array& x, const Array& y, const ParamMap& params);

// A jvp binding p on the primal and computing the tangent with tangent_fn; integer and bool
// outputs, and zero input tangents, give a symbolic zero.
JvpRule UnaryJvp(Primitive p, TangentFn tangent_fn) {
  return [p, tangent_fn](Span primals, Span tangents, const ParamMap& params) {
    Array y = BindOp(p, primals, params)[0];
    if (!tangents[0].defined() || !HasTangentSpace(y.dtype())) return JvpResult{{std::move(y)}, {Array()}};
    Array ty = tangent_fn(tangents[0], primals[0], y, params);
    return JvpResult{{std::move(y)}, {std::move(ty)}};
  };
}

// The jvp of an op whose derivative is zero wherever it exists (or whose output has no
// tangent space): the primal and a symbolic zero.
JvpRule ZeroTangentJvp(Primitive p) {
  return [p](Span primals, Span, const ParamMap& params) {
    return JvpResult{{BindOp(p, primals, params)[0]}, {Array()}};
  };
}

// trigamma(x) = digamma'(x) for x >= 0.5: six steps of trigamma(x) = 1/x^2 + trigamma(x + 1),
// then the asymptotic series at z = x + 6 >= 6.5,
//   1/z + 1/(2z^2) + sum_k B_2k / z^(2k+1)   (B2..B14; truncation error < 1e-12 relative).
Array TrigammaAtLeastHalf(const Array& x) {
  Array sum = reciprocal(square(x));
  Array z = add(x, Like(x, 1));
  for (int k = 1; k < 6; ++k) {
    sum = add(sum, reciprocal(square(z)));
    z = add(z, Like(x, 1));
  }
  const Array w = reciprocal(z), w2 = square(w);
  Array p = Like(x, 7.0 / 6);
  for (double b : {-691.0 / 2730, 5.0 / 66, -1.0 / 30, 1.0 / 42, -1.0 / 30, 1.0 / 6}) p = add(mul(w2, p), Like(x, b));
  const Array series = add(add(w, mul(w2, Like(x, 0.5))), mul(mul(w, w2), p));
  return add(sum, series);
}

// trigamma(x) for every x (NaN at the poles 0, -1, -2, ...), by the reflection formula
// trigamma(x) = pi^2 / sin^2(pi x) - trigamma(1 - x) below 0.5. Both branches are evaluated
// on safe inputs, so the unselected one never feeds inf/NaN into derivatives.
Array Trigamma(const Array& x) {
  const Array reflect = lt(x, Like(x, 0.5));
  const Array base = TrigammaAtLeastHalf(select(reflect, sub(Like(x, 1), x), x));
  const Array sin_pi_x = select(reflect, sin(mul(x, Like(x, kPi))), Like(x, 1));
  const Array reflected = sub(div(Like(x, kPi * kPi), square(sin_pi_x)), base);
  return select(reflect, reflected, base);
}

void DefineTangent(Registry& r, Primitive p, TangentFn fn) { r.Define(p).jvp = UnaryJvp(p, fn); }

void RegisterJvps(Registry& r) {
  using P = const ParamMap&;
  using A = const Array&;
  DefineTangent(r, kNeg, [](A t, A, A, P) { return neg(t); });
  // JAX: the tangent passes where x >= 0 (so abs is differentiable from the right at 0).
  DefineTangent(r, kAbs, [](A t, A x, A, P) { return select_n(ge(x, Like(x, 0)), {neg(t), t}); });
  DefineTangent(r, kSquare, [](A t, A x, A, P) { return mul(t, mul(x, Like(x, 2))); });
  DefineTangent(r, kIntegerPow, [](A t, A x, A, P params) {
    // d/dx x^n = n x^(n-1); x^0 is constant (and x^-1 may be inf at 0).
    const int64_t n = params.GetInt("y");
    if (n == 0) return Array();
    return mul(t, mul(integer_pow(x, n - 1), Like(x, static_cast<double>(n))));
  });
  DefineTangent(r, kReciprocal, [](A t, A, A y, P) { return mul(t, neg(square(y))); });

  DefineTangent(r, kExp, [](A t, A, A y, P) { return mul(t, y); });
  DefineTangent(r, kExp2, [](A t, A, A y, P) { return mul(t, mul(y, Like(y, std::numbers::ln2))); });
  DefineTangent(r, kLog, [](A t, A x, A, P) { return div(t, x); });
  DefineTangent(r, kLog1p, [](A t, A x, A, P) { return div(t, add(x, Like(x, 1))); });
  DefineTangent(r, kExpm1, [](A t, A, A y, P) { return mul(t, add(y, Like(y, 1))); });
  DefineTangent(r, kTanh, [](A t, A, A y, P) { return mul(t, sub(Like(y, 1), square(y))); });
  DefineTangent(r, kLogistic, [](A t, A, A y, P) { return mul(t, mul(y, sub(Like(y, 1), y))); });

  DefineTangent(r, kSin, [](A t, A x, A, P) { return mul(t, cos(x)); });
  // JAX's cos jvp, neg(g * sin(x)): the neg stays on the tangent side, as make_jaxpr shows it.
  DefineTangent(r, kCos, [](A t, A x, A, P) { return neg(mul(t, sin(x))); });
  DefineTangent(r, kTan, [](A t, A, A y, P) { return mul(t, add(Like(y, 1), square(y))); });
  DefineTangent(r, kAsin, [](A t, A x, A, P) { return mul(t, rsqrt(sub(Like(x, 1), square(x)))); });
  DefineTangent(r, kAcos, [](A t, A x, A, P) { return mul(t, neg(rsqrt(sub(Like(x, 1), square(x))))); });
  DefineTangent(r, kAtan, [](A t, A x, A, P) { return div(t, add(Like(x, 1), square(x))); });
  DefineTangent(r, kSinh, [](A t, A x, A, P) { return mul(t, cosh(x)); });
  DefineTangent(r, kCosh, [](A t, A x, A, P) { return mul(t, sinh(x)); });
  DefineTangent(r, kAsinh, [](A t, A x, A, P) { return mul(t, rsqrt(add(square(x), Like(x, 1)))); });
  // (x - 1)(x + 1) rather than x^2 - 1: no cancellation near x = 1.
  DefineTangent(r, kAcosh, [](A t, A x, A, P) {
    return mul(t, rsqrt(mul(sub(x, Like(x, 1)), add(x, Like(x, 1)))));
  });
  DefineTangent(r, kAtanh, [](A t, A x, A, P) { return div(t, mul(add(Like(x, 1), x), sub(Like(x, 1), x))); });

  DefineTangent(r, kSqrt, [](A t, A, A y, P) { return div(t, mul(y, Like(y, 2))); });
  DefineTangent(r, kRsqrt, [](A t, A x, A y, P) { return mul(t, mul(div(y, x), Like(y, -0.5))); });
  // cbrt'(x) = 1 / (3 cbrt(x)^2), from the output so that it needs no division by x.
  DefineTangent(r, kCbrt, [](A t, A, A y, P) { return mul(t, mul(integer_pow(y, -2), Like(y, 1.0 / 3))); });

  DefineTangent(r, kErf, [](A t, A x, A, P) {
    return mul(t, mul(exp(neg(square(x))), Like(x, 2 / std::sqrt(kPi))));
  });
  DefineTangent(r, kErfc, [](A t, A x, A, P) {
    return mul(t, mul(exp(neg(square(x))), Like(x, -2 / std::sqrt(kPi))));
  });
  DefineTangent(r, kErfInv, [](A t, A, A y, P) {
    return mul(t, mul(exp(square(y)), Like(y, std::sqrt(kPi) / 2)));
  });
  DefineTangent(r, kLgamma, [](A t, A x, A, P) { return mul(t, digamma(x)); });
  DefineTangent(r, kDigamma, [](A t, A x, A, P) { return mul(t, Trigamma(x)); });

  for (Primitive p : {kSign, kFloor, kCeil, kRound, kIsFinite, kNot}) r.Define(p).jvp = ZeroTangentJvp(p);
}

}  // namespace

void RegisterUnaryRules(Registry& r) {
  RegisterJvps(r);
  r.Define(kNeg).transpose = [](Span cts, absl::Span<const TransposeArg>, const ParamMap&) {
    return Arrays{cts[0].defined() ? neg(cts[0]) : Array()};
  };
  for (Primitive p : {kNeg,     kSign,    kFloor, kCeil, kRound, kIsFinite, kExp,   kExp2,       kLog,
                      kLog1p,   kExpm1,   kTanh,  kLogistic,     kSin,      kCos,   kTan,        kAsin,
                      kAcos,    kAtan,    kSinh,  kCosh,  kAsinh, kAcosh,   kAtanh, kSqrt,       kRsqrt,
                      kCbrt,    kAbs,     kErf,   kErfc,  kErfInv, kLgamma, kDigamma, kIntegerPow, kSquare,
                      kReciprocal, kNot}) {
    PrimitiveRules& rules = r.Define(p);
    rules.batch = BatchElementwise(p);
    if (!rules.transpose) {
      rules.unsupported["transpose"] = "not linear: reverse mode transposes the linear ops of its jvp";
    }
  }
}

}  // namespace jx::lax::internal

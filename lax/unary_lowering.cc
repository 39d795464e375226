// Lowering rules of the unary elementwise primitives. Where XLA has an opcode the primitive
// maps to it; the rest expand into HLO as XLA's expanders do (chlo for JAX): inverse trig and
// hyperbolic functions in closed forms that stay accurate near 0 and do not overflow early;
// erfc, lgamma and digamma from rational/Lanczos approximations evaluated in f64, rounded once
// to the output type; erf_inv as the op sequence the eager kernel runs (lax/kernels/erf_inv.h:
// f64's own, f32's for f32 and narrower). Expansions of 16-bit floats run in f32.
#include <cmath>
#include <functional>
#include <limits>
#include <numbers>

#include "jx/compiler/lower/lower_ops.h"
#include "jx/core/registry.h"
#include "jx/lax/kernels/erf_inv.h"
#include "jx/lax/primitives.h"

namespace jx::lax::internal {
namespace {

using hlo::HloOpcode;
using lower::XOp;

constexpr double kPi = std::numbers::pi;
constexpr double kLn2 = std::numbers::ln2;

void Define(Registry& r, Primitive p, std::function<XOp(const XOp&, LowerContext&)> fn) {
  r.Define(p).lower = [fn = std::move(fn)](LowerContext& ctx) -> absl::Status {
    return lower::Output(ctx, fn(lower::Operands(ctx)[0], ctx));
  };
}
void DefineOpcode(Registry& r, Primitive p, HloOpcode op) {
  Define(r, p, [op](const XOp& x, LowerContext&) { return lower::Unary(op, x); });
}
// An expansion evaluated in at least `type`.
void DefineExpansion(Registry& r, Primitive p, hlo::PrimitiveType type, std::function<XOp(const XOp&)> fn) {
  Define(r, p, [type, fn = std::move(fn)](const XOp& x, LowerContext&) { return lower::ComputeIn(x, type, fn); });
}

XOp Neg(const XOp& x) { return -x; }
XOp CopySignOf(const XOp& x, const XOp& magnitude) { return lower::Select(x < 0.0, Neg(magnitude), magnitude); }

// Where x*x would overflow, asinh/acosh use log(x) + log(2).
double LargeThreshold(hlo::PrimitiveType t) { return t == hlo::F64 ? 1e150 : 1e18; }

XOp Asinh(const XOp& x) {
  const XOp a = lower::Abs(x);
  const XOp small = lower::Log1p(a + a * a / (1.0 + lower::Sqrt(a * a + 1.0)));
  const XOp large = lower::Log(a) + kLn2;
  return CopySignOf(x, lower::Select(a > LargeThreshold(x.type()), large, small));
}

XOp Acosh(const XOp& x) {
  const XOp t = x - 1.0;  // exact near 1, where the result is small
  const XOp small = lower::Log1p(t + lower::Sqrt(t * (t + 2.0)));
  return lower::Select(x > LargeThreshold(x.type()), lower::Log(x) + kLn2, small);
}

// sinh/cosh from h = exp(|x| - log 2) = e^|x| / 2: no overflow before the result overflows.
XOp Sinh(const XOp& x) {
  const XOp a = lower::Abs(x);
  const XOp e = lower::Unary(HloOpcode::kExpm1, a);
  const XOp small = 0.5 * (e + e / (e + 1.0));  // accurate near 0
  const XOp h = lower::Exp(a - kLn2);
  const XOp large = h - 0.25 / h;
  return CopySignOf(x, lower::Select(a < 1.0, small, large));
}

XOp Cosh(const XOp& x) {
  const XOp h = lower::Exp(lower::Abs(x) - kLn2);
  return h + 0.25 / h;
}

// Cephes' rational approximations of erfc (coefficients from the highest power down).
constexpr double kErfcP[] = {2.46196981473530512524E-10, 5.64189564831068821977E-1, 7.46321056442269912687E0,
                             4.86371970985681366614E1,   1.96520832956077098242E2,  5.26445194995477358631E2,
                             9.34528527171957607540E2,   1.02755188689515710272E3,  5.57535335369399327526E2};
constexpr double kErfcQ[] = {1.0,                      1.32281951154744992508E1, 8.67072140885989742329E1,
                             3.54937778887819891062E2, 9.75708501743205489753E2, 1.82390916687909736289E3,
                             2.24633760818710981792E3, 1.65666309194161350182E3, 5.57535340817727675546E2};
constexpr double kErfcR[] = {5.64189583547755073984E-1, 1.27536670759978104416E0, 5.01905042251180477414E0,
                             6.16021097993053585195E0,  7.40974269950448939160E0, 2.97886665372100240670E0};
constexpr double kErfcS[] = {1.0,                      2.26052863220117276590E0, 9.39603524938001434673E0,
                             1.20489539808096656605E1, 1.70814450747565897222E1, 9.60896809063285878198E0,
                             3.36907645100081516050E0};

// erfc for x >= 0 (1 - erf below 1, where no cancellation happens).
XOp ErfcNonNegative(const XOp& a) {
  const XOp z = lower::Exp(Neg(a * a));
  const XOp mid = z * lower::Polynomial(a, kErfcP) / lower::Polynomial(a, kErfcQ);
  const XOp far = z * lower::Polynomial(a, kErfcR) / lower::Polynomial(a, kErfcS);
  const XOp near = 1.0 - lower::Unary(HloOpcode::kErf, a);
  // Past 30 erfc underflows even in f64 (and the rational forms would divide inf by inf).
  const XOp tail = lower::Select(a > 30.0, lower::Like(a, 0.0), far);
  return lower::Select(a < 1.0, near, lower::Select(a < 8.0, mid, tail));
}

XOp Erfc(const XOp& x) {
  const XOp y = ErfcNonNegative(lower::Abs(x));
  return lower::Select(x < 0.0, 2.0 - y, y);
}

// Giles' single-precision erfinv: w = -log((1 - x)(1 + x)) and a polynomial in w.
XOp ErfInvPolynomial(const XOp& x) {
  using kernels::kErfInvCentral;
  using kernels::kErfInvTail;
  const XOp w = Neg(lower::Log((1.0 - x) * (1.0 + x)));
  const XOp central = w < kernels::kErfInvTailW;
  const XOp ws = lower::Select(central, w - 2.5, lower::Sqrt(w) - 3.0);
  auto coefficient = [&](size_t i) {
    return lower::Select(central, lower::Like(x, kErfInvCentral[i]), lower::Like(x, kErfInvTail[i]));
  };
  XOp p = coefficient(0);
  for (size_t i = 1; i < std::size(kErfInvCentral); ++i) p = coefficient(i) + p * ws;
  return p;
}

// f32 (f16 and bf16 through f32): the ops of lax/kernels/erf_inv.h, which the eager kernel
// runs too, so jit and eager agree bit for bit.
XOp ErfInvF32(const XOp& x) {
  const XOp r = ErfInvPolynomial(x) * x;
  return lower::Select(lower::Eq(lower::Abs(x), 1.0), x * std::numeric_limits<double>::infinity(), r);
}

// f64: Giles' double-precision polynomials, the ops of lax/kernels/erf_inv.h that the eager
// kernel runs too (bit for bit).
XOp ErfInvF64(const XOp& x) {
  using kernels::kErfInvF64Central;
  using kernels::kErfInvF64Middle;
  using kernels::kErfInvF64Tail;
  const XOp w = Neg(lower::Log((1.0 - x) * (1.0 + x)));
  const XOp central = w < kernels::kErfInvF64MiddleW;
  const XOp middle = w < kernels::kErfInvF64TailW;  // or central
  const XOp ws = lower::Select(central, w - 3.125,
                               lower::Sqrt(w) - lower::Select(middle, lower::Like(x, 3.25), lower::Like(x, 5.0)));
  auto coefficient = [&](int i) {
    XOp c = lower::Like(x, kErfInvF64Central[i]);
    if (i < kernels::kErfInvF64MiddleSize) c = lower::Select(central, c, lower::Like(x, kErfInvF64Middle[i]));
    if (i < kernels::kErfInvF64TailSize) c = lower::Select(middle, c, lower::Like(x, kErfInvF64Tail[i]));
    return c;
  };
  XOp p = coefficient(0);
  for (int i = 1; i < kernels::kErfInvF64CentralSize; ++i) {
    const XOp next = coefficient(i) + p * ws;
    p = i < kernels::kErfInvF64TailSize ? next
                                        : lower::Select(i < kernels::kErfInvF64MiddleSize ? middle : central, next, p);
  }
  return lower::Select(lower::Eq(lower::Abs(x), 1.0), x * std::numeric_limits<double>::infinity(), p * x);
}

// Lanczos approximation (g = 7, n = 9) of the gamma function.
constexpr double kLanczosG = 7;
constexpr double kLanczosBase = 0.99999999999980993227684700473478;
constexpr double kLanczos[] = {676.520368121885098567009190444019, -1259.13921672240287047156078755283,
                               771.3234287776530788486528258894,   -176.61502916214059906584551354,
                               12.507343278686904814458936853,     -0.13857109526572011689554707,
                               9.984369578019570859563e-6,         1.50563273514931155834e-7};

XOp Lgamma(const XOp& x) {
  // Reflection below 1/2: lgamma(x) = log(pi) - lgamma(1 - x) - log|sin(pi x)|.
  const XOp reflect = x < 0.5;
  const XOp z = lower::Select(reflect, Neg(x), x - 1.0);
  XOp sum = lower::Like(x, kLanczosBase);
  for (size_t i = 0; i < std::size(kLanczos); ++i) sum = sum + kLanczos[i] / (z + static_cast<double>(i + 1));
  const XOp t = z + (kLanczosG + 0.5);
  const XOp log_t = lower::Log1p(z / (kLanczosG + 0.5)) + std::log(kLanczosG + 0.5);
  const XOp log_y = (z + 0.5) * log_t - t + lower::Log(sum) + 0.5 * std::log(2 * kPi);
  // |sin(pi x)| through the fractional part of |x|: exact zeros at the integers.
  const XOp ax = lower::Abs(x);
  const XOp log_sin = lower::Log(lower::Sin(kPi * (ax - lower::Floor(ax))));
  const XOp reflected = lower::Select(lower::IsFinite(log_sin), std::log(kPi) - log_sin - log_y, Neg(log_sin));
  const XOp result = lower::Select(reflect, reflected, log_y);
  // lgamma(+-inf) = +inf; NaN stays NaN.
  const XOp inf = lower::Like(x, INFINITY);
  return lower::Select(lower::IsFinite(x) | lower::Ne(x, x), result, inf);
}

XOp Digamma(const XOp& x) {
  // Reflection below 1/2: digamma(x) = digamma(1 - x) - pi cot(pi x).
  const XOp reflect = x < 0.5;
  const XOp z = lower::Select(reflect, Neg(x), x - 1.0);
  XOp num = lower::Like(x, 0.0), den = lower::Like(x, kLanczosBase);
  for (size_t i = 0; i < std::size(kLanczos); ++i) {
    const XOp zi = z + static_cast<double>(i + 1);
    num = num - kLanczos[i] / (zi * zi);
    den = den + kLanczos[i] / zi;
  }
  const XOp t = z + (kLanczosG + 0.5);
  const XOp log_t = lower::Log1p(z / (kLanczosG + 0.5)) + std::log(kLanczosG + 0.5);
  const XOp y = log_t + num / den - kLanczosG / t;
  // cot has period pi: reduce x to its (exact) distance from the nearest integer, in
  // [-1/2, 1/2), so pi * frac never rounds away the digits that matter near a pole.
  const XOp frac = x - lower::Floor(x + 0.5);
  const XOp reflected = y - kPi * lower::Cos(kPi * frac) / lower::Sin(kPi * frac);
  const XOp result = lower::Select(reflect, reflected, y);
  // Poles at the non-positive integers.
  const XOp pole = (x <= 0.0) & lower::Eq(x, lower::Floor(x));
  return lower::Select(pole, lower::Like(x, NAN), result);
}

// x^n by repeated squaring (integers wrap, as XLA's multiply); negative n takes 1/x^|n|.
XOp IntegerPow(const XOp& x, int64_t n) {
  uint64_t e = n < 0 ? uint64_t(0) - static_cast<uint64_t>(n) : static_cast<uint64_t>(n);
  XOp acc, base = x;
  bool have = false;
  while (e != 0) {
    if (e & 1) {
      acc = have ? acc * base : base;
      have = true;
    }
    e >>= 1;
    if (e != 0) base = base * base;
  }
  if (!have) return lower::Like(x, 1.0);
  return n < 0 ? 1.0 / acc : acc;
}

}  // namespace

void RegisterUnaryLowering(Registry& r) {
  DefineOpcode(r, kNeg, HloOpcode::kNegate);
  DefineOpcode(r, kSign, HloOpcode::kSign);
  DefineOpcode(r, kFloor, HloOpcode::kFloor);
  DefineOpcode(r, kCeil, HloOpcode::kCeil);
  DefineOpcode(r, kIsFinite, HloOpcode::kIsFinite);
  DefineOpcode(r, kExp, HloOpcode::kExp);
  DefineOpcode(r, kLog, HloOpcode::kLog);
  DefineOpcode(r, kLog1p, HloOpcode::kLog1p);
  DefineOpcode(r, kExpm1, HloOpcode::kExpm1);
  DefineOpcode(r, kTanh, HloOpcode::kTanh);
  DefineOpcode(r, kLogistic, HloOpcode::kLogistic);
  DefineOpcode(r, kSin, HloOpcode::kSin);
  DefineOpcode(r, kCos, HloOpcode::kCos);
  DefineOpcode(r, kTan, HloOpcode::kTan);
  DefineOpcode(r, kSqrt, HloOpcode::kSqrt);
  DefineOpcode(r, kRsqrt, HloOpcode::kRsqrt);
  DefineOpcode(r, kCbrt, HloOpcode::kCbrt);
  DefineOpcode(r, kAbs, HloOpcode::kAbs);
  DefineOpcode(r, kErf, HloOpcode::kErf);
  DefineOpcode(r, kNot, HloOpcode::kNot);
  Define(r, kRound, [](const XOp& x, LowerContext& ctx) {
    return lower::Unary(ctx.params().GetInt("rounding_method") == 0 ? HloOpcode::kRoundNearestAfz
                                                                     : HloOpcode::kRoundNearestEven,
                        x);
  });
  Define(r, kSquare, [](const XOp& x, LowerContext&) { return x * x; });
  Define(r, kReciprocal, [](const XOp& x, LowerContext&) { return 1.0 / x; });
  Define(r, kIntegerPow, [](const XOp& x, LowerContext& ctx) {
    const int64_t n = ctx.params().GetInt("y");
    if (!hlo::IsFloatingPointType(x.type())) return IntegerPow(x, n);
    return lower::ComputeIn(x, hlo::F32, [n](const XOp& v) { return IntegerPow(v, n); });
  });
  // exp2(x) = 2^x as one power (exp(x log 2) loses |x| ulps to the rounding of x log 2).
  Define(r, kExp2, [](const XOp& x, LowerContext&) { return lower::Pow(lower::Like(x, 2.0), x); });
  DefineExpansion(r, kAtan, hlo::F32, [](const XOp& x) { return lower::Atan2(x, lower::Like(x, 1.0)); });
  DefineExpansion(r, kAsin, hlo::F32, [](const XOp& x) {
    return 2.0 * lower::Atan2(x, 1.0 + lower::Sqrt(1.0 - x * x));
  });
  DefineExpansion(r, kAcos, hlo::F32, [](const XOp& x) {
    const XOp v = 2.0 * lower::Atan2(lower::Sqrt(1.0 - x * x), 1.0 + x);
    return lower::Select(lower::Ne(x, -1.0), v, lower::Like(x, kPi));
  });
  DefineExpansion(r, kSinh, hlo::F32, Sinh);
  DefineExpansion(r, kCosh, hlo::F32, Cosh);
  DefineExpansion(r, kAsinh, hlo::F32, Asinh);
  DefineExpansion(r, kAcosh, hlo::F32, Acosh);
  DefineExpansion(r, kAtanh, hlo::F32, [](const XOp& x) {
    return 0.5 * (lower::Log1p(x) - lower::Log1p(Neg(x)));
  });
  DefineExpansion(r, kErfc, hlo::F64, Erfc);
  Define(r, kErfInv, [](const XOp& x, LowerContext&) {
    return x.type() == hlo::F64 ? ErfInvF64(x) : lower::ComputeIn(x, hlo::F32, ErfInvF32);
  });
  DefineExpansion(r, kLgamma, hlo::F64, Lgamma);
  DefineExpansion(r, kDigamma, hlo::F64, Digamma);
}

}  // namespace jx::lax::internal

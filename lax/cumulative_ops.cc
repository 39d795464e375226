// Cumulative reductions along one axis: cumsum, cumprod, cummax, cummin, cumlogsumexp. The
// numerics are the kernel library's O(n) scans (lax/kernels/cumulative.h), which the CPU
// backend's scan kernel runs too.
#include "jx/lax/cumulative_ops.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "jx/lax/binary_ops.h"
#include "jx/lax/convert_ops.h"
#include "jx/lax/kernels/cumulative.h"
#include "jx/lax/op_util.h"
#include "jx/lax/primitives.h"
#include "jx/lax/rule_util.h"
#include "jx/lax/shape_ops.h"
#include "jx/lax/slicing_ops.h"
#include "jx/lax/unary_ops.h"

namespace jx::lax {

using internal::BindOp1;

namespace {
Array Cumulative(Primitive p, const Array& x, int64_t axis, bool reverse) {
  const int64_t rank = x.ndim();
  if (axis < 0 && axis >= -rank) axis += rank;
  return BindOp1(p, {x}, ParamMap{{"axis", axis}, {"reverse", reverse}});
}
}  // namespace

Array cumsum(const Array& x, int64_t axis, bool reverse) { return Cumulative(kCumsum, x, axis, reverse); }
Array cumprod(const Array& x, int64_t axis, bool reverse) { return Cumulative(kCumprod, x, axis, reverse); }
Array cummax(const Array& x, int64_t axis, bool reverse) { return Cumulative(kCummax, x, axis, reverse); }
Array cummin(const Array& x, int64_t axis, bool reverse) { return Cumulative(kCummin, x, axis, reverse); }
Array cumlogsumexp(const Array& x, int64_t axis, bool reverse) {
  return Cumulative(kCumlogsumexp, x, axis, reverse);
}

namespace internal {
namespace {

// The operand as [outer, n, inner] around the scanned axis.
struct Layout {
  int64_t O = 1, N = 1, I = 1;
};
Layout MakeLayout(const Shape& shape, int64_t axis) {
  Layout l;
  l.N = shape[static_cast<size_t>(axis)];
  for (int64_t i = 0; i < axis; ++i) l.O *= shape[static_cast<size_t>(i)];
  for (size_t i = static_cast<size_t>(axis) + 1; i < shape.size(); ++i) l.I *= shape[i];
  return l;
}

// ---------------------------------------------------------------------------------------
// Registration.

void DefineCumulative(Registry& r, Primitive p, DTypeClass accepted, kernels::CumulativeOp op) {
  PrimitiveRules& rules = r.Define(p);
  rules.abstract_eval = [p, accepted](InAvals in, const ParamMap& params) -> Avals {
    CheckArity(p.name(), in, 1);
    const ShapedArray& x = *in[0];
    if (!InClass(x.dtype, accepted)) {
      ThrowOpError<TypeError>(p.name(), "does not accept dtype ", dtype_name(x.dtype), " (operand ", x.str(),
                              "); expected a ", ClassName(accepted), " dtype");
    }
    const int64_t axis = params.GetInt("axis");
    params.GetBool("reverse");
    if (axis < 0 || axis >= x.ndim()) {
      ThrowOpError<ShapeError>(p.name(), "axis ", axis, " is out of bounds for operand ", x.str(), " of rank ",
                               x.ndim());
    }
    return {x};
  };
  rules.impl = [op](absl::Span<const Array> in, const ParamMap& params,
                    absl::Span<const ShapedArray> out_avals) -> Arrays {
    Array out = Array::Empty(out_avals[0]);
    if (out.size() == 0) return {out};
    const Layout l = MakeLayout(in[0].shape(), params.GetInt("axis"));
    kernels::Cumulative(in[0].dtype(), op, in[0].data(), out.mutable_data(), l.O, l.N, l.I,
                        params.GetBool("reverse"), /*init=*/nullptr);
    return {out};
  };
}

// ---------------------------------------------------------------------------------------
// Transformation rules (jvp, transpose, batching), written with lax ops.

// x[begin:end] along axis.
Array SliceAxis(const Array& x, int64_t axis, int64_t begin, int64_t end) {
  std::vector<int64_t> start(static_cast<size_t>(x.ndim()), 0), limit;
  for (int64_t d : x.shape()) limit.push_back(d);
  start[static_cast<size_t>(axis)] = begin;
  limit[static_cast<size_t>(axis)] = end;
  return slice(x, start, limit);
}

// A value of a scan and its tangent.
struct Dual {
  Array value, tangent;
};
// Combines a (earlier in scan order) with b: the combined value and its tangent, linear in
// the tangents.
using Combine = Dual (*)(const Dual& a, const Dual& b);

// The tangent of an inclusive scan along axis, by Hillis-Steele doubling (JAX takes the jvp
// of an associative_scan; this is the same idea with log2(n) levels of slices): level s
// combines every element with the one s places earlier in scan order, and the first s pass
// through. Slices, concatenates and the combine's tangent all transpose, and the combine
// never divides, so products stay exact at zeros (unlike cumsum(t / x) * cumprod(x)).
Array ScanTangent(const Array& x, const Array& t, int64_t axis, bool reverse, Combine combine) {
  const int64_t n = x.shape()[static_cast<size_t>(axis)];
  Dual y{x, t};
  auto part = [axis](const Dual& v, int64_t begin, int64_t end) {
    return Dual{SliceAxis(v.value, axis, begin, end), SliceAxis(v.tangent, axis, begin, end)};
  };
  auto join = [axis](const Dual& first, const Dual& second) {
    return Dual{concatenate({first.value, second.value}, axis), concatenate({first.tangent, second.tangent}, axis)};
  };
  for (int64_t s = 1; s < n; s *= 2) {
    if (reverse) {  // element i combines with i + s; the last s pass through
      y = join(combine(part(y, s, n), part(y, 0, n - s)), part(y, n - s, n));
    } else {  // element i combines with i - s; the first s pass through
      y = join(part(y, 0, s), combine(part(y, 0, n - s), part(y, s, n)));
    }
  }
  return y.tangent;
}

Array ScalarLike(double v, const Array& x) { return Array::Scalar(v, x.dtype()); }

Dual CombineProd(const Dual& a, const Dual& b) {
  return {mul(a.value, b.value), add(mul(a.tangent, b.value), mul(a.value, b.tangent))};
}

// max/min's tangent weights as in JAX's jvp of lax.max: the chosen side gets 1, both get
// 0.5 on ties.
std::pair<Array, Array> ChooserWeights(const Array& a, const Array& b, const Array& chosen, DType dtype) {
  const Array ea = convert_element_type(eq(a, chosen), dtype);
  const Array eb = convert_element_type(eq(b, chosen), dtype);
  const Array half = ScalarLike(0.5, ea), one = ScalarLike(1, ea);
  return {mul(ea, sub(one, mul(half, eb))), mul(eb, sub(one, mul(half, ea)))};
}
Dual CombineChooser(const Dual& a, const Dual& b, const Array& chosen) {
  const auto [wa, wb] = ChooserWeights(a.value, b.value, chosen, a.tangent.dtype());
  return {chosen, add(mul(a.tangent, wa), mul(b.tangent, wb))};
}
Dual CombineMax(const Dual& a, const Dual& b) { return CombineChooser(a, b, max(a.value, b.value)); }
Dual CombineMin(const Dual& a, const Dual& b) { return CombineChooser(a, b, min(a.value, b.value)); }

// logaddexp(a, b) = max + log1p(exp(-|a - b|)); each side's weight is exp(side - result).
// Where the result is infinite (both sides -inf, or a side +inf) that weight is 0/0, so the
// sides are weighted like max's (the larger one, half each on ties). Every weight is
// computed from finite values, so the tangent's transpose never multiplies by NaN.
Dual CombineLogAddExp(const Dual& a, const Dual& b) {
  const Array m = max(a.value, b.value), delta = sub(a.value, b.value);
  const Array zero = broadcast_in_dim(ScalarLike(0, m), m.shape(), {});
  const Array defined_delta = select_n(ne(delta, delta), {delta, zero});  // inf - inf: NaN
  const Array r = add(m, log1p(exp(neg(abs(defined_delta)))));
  const Array finite_r = is_finite(r);
  auto safe = [&](const Array& v) { return select_n(finite_r, {zero, v}); };
  const auto [ca, cb] = ChooserWeights(a.value, b.value, m, a.tangent.dtype());
  const Array wa = select_n(finite_r, {ca, exp(sub(safe(a.value), safe(r)))});
  const Array wb = select_n(finite_r, {cb, exp(sub(safe(b.value), safe(r)))});
  return {r, add(mul(a.tangent, wa), mul(b.tangent, wb))};
}

// The jvp of a cumulative op: the primal by binding p, the tangent by `tangent` (an undefined
// tangent, as integer operands have, stays a symbolic zero).
using CumTangentFn = std::function<Array(const Array& x, const Array& t, const ParamMap& params)>;
JvpRule CumulativeJvp(Primitive p, CumTangentFn tangent) {
  return [p, tangent](absl::Span<const Array> primals, absl::Span<const Array> tangents, const ParamMap& params) {
    Array out = Bind1(p, primals, params);
    Array t;
    if (tangents[0].defined()) t = tangent(primals[0], tangents[0], params);
    return JvpResult{{std::move(out)}, {std::move(t)}};
  };
}

CumTangentFn ScanTangentFn(Combine combine) {
  return [combine](const Array& x, const Array& t, const ParamMap& params) {
    return ScanTangent(x, t, params.GetInt("axis"), params.GetBool("reverse"), combine);
  };
}

// Every cumulative op batches by moving the batch dim to the front and shifting its axis.
BatchRule BatchCumulative(Primitive p) {
  return [p](absl::Span<const Array> args, absl::Span<const int64_t> dims, int64_t n, const ParamMap& params) {
    ParamMap shifted = params;
    shifted.Set("axis", params.GetInt("axis") + 1);
    return BatchResult{{Bind1(p, {MoveBatchToFront(args[0], dims[0], n)}, shifted)}, {0}};
  };
}

void DefineCumulativeRules(Registry& r) {
  PrimitiveRules& sum = r.Define(kCumsum);
  sum.jvp = CumulativeJvp(kCumsum, [](const Array&, const Array& t, const ParamMap& params) {
    return Bind1(kCumsum, {t}, params);
  });
  // Linear: each input feeds every later output, so the transpose is the scan run backwards.
  sum.transpose = [](absl::Span<const Array> cts, absl::Span<const TransposeArg>, const ParamMap& params) {
    if (!cts[0].defined()) return Arrays{Array{}};
    ParamMap flipped = params;
    flipped.Set("reverse", !params.GetBool("reverse"));
    return Arrays{Bind1(kCumsum, {cts[0]}, flipped)};
  };
  r.Define(kCumprod).jvp = CumulativeJvp(kCumprod, ScanTangentFn(CombineProd));
  r.Define(kCummax).jvp = CumulativeJvp(kCummax, ScanTangentFn(CombineMax));
  r.Define(kCummin).jvp = CumulativeJvp(kCummin, ScanTangentFn(CombineMin));
  r.Define(kCumlogsumexp).jvp = CumulativeJvp(kCumlogsumexp, ScanTangentFn(CombineLogAddExp));
  for (Primitive p : {kCumsum, kCumprod, kCummax, kCummin, kCumlogsumexp}) {
    PrimitiveRules& rules = r.Define(p);
    rules.batch = BatchCumulative(p);
    if (p != kCumsum) rules.unsupported["transpose"] = "not linear: reverse mode transposes the linear ops of its jvp";
  }
}

}  // namespace

void RegisterCumulativeOps(Registry& r) {
  using kernels::CumulativeOp;
  DefineCumulative(r, kCumsum, DTypeClass::kNumeric, CumulativeOp::kSum);
  DefineCumulative(r, kCumprod, DTypeClass::kNumeric, CumulativeOp::kProd);
  DefineCumulative(r, kCummax, DTypeClass::kNumeric, CumulativeOp::kMax);
  DefineCumulative(r, kCummin, DTypeClass::kNumeric, CumulativeOp::kMin);
  DefineCumulative(r, kCumlogsumexp, DTypeClass::kFloating, CumulativeOp::kLogSumExp);
  DefineCumulativeRules(r);
}

}  // namespace internal
}  // namespace jx::lax

#include "jx/lax/numpy/reductions.h"

#include <cmath>

#include "jx/core/errors.h"
#include "jx/lax/binary_ops.h"
#include "jx/lax/convert_ops.h"
#include "jx/lax/cumulative_ops.h"
#include "jx/lax/reduction_ops.h"
#include "jx/lax/shape_ops.h"
#include "jx/lax/unary_ops.h"
#include "jx/lax/numpy/math.h"

namespace jx::numpy {
namespace {

using LaxReduce = Array (*)(const Array&, const std::vector<int64_t>&);

Array Convert(const Array& x, DType d, bool weak) {
  if (x.dtype() == d && x.weak_type() == weak) return x;
  return lax::convert_element_type(x, d, weak);
}

DType UpcastF16(DType d) { return d == float16 || d == bfloat16 ? float32 : d; }

int64_t ReducedSize(const Array& x, const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= x.shape()[static_cast<size_t>(d)];
  return n;
}

// jnp's _reduction: pick result and computation dtypes, reduce, restore kept dims.
Array Reduction(std::string_view op, const Array& x, const Axis& axis, bool keepdims, std::optional<DType> dtype,
                LaxReduce f, LaxReduce bool_f, bool promote_integers, bool upcast_f16) {
  const std::vector<int64_t> dims = axis.Canonical(x.ndim(), op);
  DType result = dtype.value_or(x.dtype());
  if (!dtype && promote_integers) result = promote_integers_dtype(result);
  const DType compute = upcast_f16 ? UpcastF16(result) : result;
  const bool weak = !dtype && x.weak_type();
  Array a = Convert(x, compute, weak);
  Array r = IsBool(compute) ? bool_f(a, dims) : f(a, dims);
  if (keepdims) r = lax::expand_dims(r, dims);
  return Convert(r, result, weak);
}

void RequireNonEmpty(std::string_view op, const Array& x, const std::vector<int64_t>& dims) {
  if (x.size() == 0 && ReducedSize(x, dims) == 0) {
    ThrowOpError<ValueError>(op, "zero-size array to reduction operation ", op, " which has no identity (operand ",
                             x.aval().str(), ")");
  }
}

Array ToBoolArray(const Array& x) {
  if (IsBool(x.dtype())) return x;
  return not_equal(x, 0);
}

}  // namespace

Array sum(const Array& x, const Axis& axis, bool keepdims, std::optional<DType> dtype) {
  return Reduction("sum", x, axis, keepdims, dtype, lax::reduce_sum, lax::reduce_or, true, true);
}

Array prod(const Array& x, const Axis& axis, bool keepdims, std::optional<DType> dtype) {
  return Reduction("prod", x, axis, keepdims, dtype, lax::reduce_prod, lax::reduce_and, true, true);
}

Array max(const Array& x, const Axis& axis, bool keepdims) {
  RequireNonEmpty("max", x, axis.Canonical(x.ndim(), "max"));
  return Reduction("max", x, axis, keepdims, std::nullopt, lax::reduce_max, lax::reduce_or, false, false);
}

Array min(const Array& x, const Axis& axis, bool keepdims) {
  RequireNonEmpty("min", x, axis.Canonical(x.ndim(), "min"));
  return Reduction("min", x, axis, keepdims, std::nullopt, lax::reduce_min, lax::reduce_and, false, false);
}

Array amax(const Array& x, const Axis& axis, bool keepdims) { return max(x, axis, keepdims); }
Array amin(const Array& x, const Axis& axis, bool keepdims) { return min(x, axis, keepdims); }
Array ptp(const Array& x, const Axis& axis, bool keepdims) {
  return subtract(max(x, axis, keepdims), min(x, axis, keepdims));
}

Array all(const Array& x, const Axis& axis, bool keepdims) {
  return Reduction("all", ToBoolArray(x), axis, keepdims, std::nullopt, lax::reduce_and, lax::reduce_and, false, false);
}

Array any(const Array& x, const Axis& axis, bool keepdims) {
  return Reduction("any", ToBoolArray(x), axis, keepdims, std::nullopt, lax::reduce_or, lax::reduce_or, false, false);
}

Array mean(const Array& x, const Axis& axis, bool keepdims, std::optional<DType> dtype) {
  const std::vector<int64_t> dims = axis.Canonical(x.ndim(), "mean");
  const DType result = dtype.value_or(to_inexact({x.dtype(), false}).dtype);
  const DType compute = UpcastF16(result);
  const bool weak = !dtype && x.weak_type();
  Array s = sum(Convert(x, compute, weak), axis, keepdims, compute);
  Array n = internal::ScalarOf(static_cast<double>(ReducedSize(x, dims)), compute, weak);
  Array r = lax::div(s, n);  // a 0-d divisor: `div b 4.0:f32[]`, as JAX's
  return Convert(r, result, weak);
}

Array var(const Array& x, const Axis& axis, bool keepdims, int64_t ddof, std::optional<DType> dtype) {
  const std::vector<int64_t> dims = axis.Canonical(x.ndim(), "var");
  const DType result = dtype.value_or(to_inexact({x.dtype(), false}).dtype);
  const DType compute = UpcastF16(result);
  Array a = Convert(x, compute, false);
  Array centered = lax::square(subtract(a, mean(a, axis, /*keepdims=*/true, compute)));
  Array s = sum(centered, axis, keepdims, compute);
  const double n = static_cast<double>(ReducedSize(x, dims) - ddof);
  return Convert(true_divide(s, internal::ScalarOf(n, compute)), result, false);
}

Array std(const Array& x, const Axis& axis, bool keepdims, int64_t ddof, std::optional<DType> dtype) {
  return sqrt(var(x, axis, keepdims, ddof, dtype));
}

namespace {
Array ArgReduce(std::string_view op, const Array& x, std::optional<int64_t> axis, bool keepdims, bool is_max) {
  Array a = axis ? x : lax::reshape(x, {x.size()});
  const int64_t ax = CanonicalizeAxis(axis.value_or(0), a.ndim(), op);
  if (a.shape()[static_cast<size_t>(ax)] == 0) {
    ThrowOpError<ValueError>(op, "attempt to get ", op, " of an empty sequence (operand ", x.aval().str(), ")");
  }
  Array r = is_max ? lax::argmax(a, ax, int32) : lax::argmin(a, ax, int32);
  if (keepdims) {
    if (axis) return lax::expand_dims(r, {ax});
    return lax::reshape(r, Shape(static_cast<size_t>(x.ndim()), 1));
  }
  return r;
}

Array Cumulative(std::string_view op, const Array& x, std::optional<int64_t> axis, std::optional<DType> dtype,
                 bool promote_integers, Array (*f)(const Array&, int64_t, bool)) {
  Array a = axis ? x : lax::reshape(x, {x.size()});
  const int64_t ax = CanonicalizeAxis(axis.value_or(0), a.ndim(), op);
  DType result = dtype.value_or(a.dtype());
  if ((!dtype && promote_integers) || IsBool(result)) result = promote_integers_dtype(result);
  return f(Convert(a, result, !dtype && a.weak_type()), ax, false);
}
}  // namespace

Array argmax(const Array& x, std::optional<int64_t> axis, bool keepdims) { return ArgReduce("argmax", x, axis, keepdims, true); }
Array argmin(const Array& x, std::optional<int64_t> axis, bool keepdims) { return ArgReduce("argmin", x, axis, keepdims, false); }

Array cumsum(const Array& x, std::optional<int64_t> axis, std::optional<DType> dtype) {
  return Cumulative("cumsum", x, axis, dtype, true, lax::cumsum);
}
Array cumprod(const Array& x, std::optional<int64_t> axis, std::optional<DType> dtype) {
  return Cumulative("cumprod", x, axis, dtype, true, lax::cumprod);
}
Array cummax(const Array& x, std::optional<int64_t> axis) {
  return Cumulative("cummax", x, axis, std::nullopt, false, lax::cummax);
}
Array cummin(const Array& x, std::optional<int64_t> axis) {
  return Cumulative("cummin", x, axis, std::nullopt, false, lax::cummin);
}

Array logsumexp(const Array& x, const Axis& axis, bool keepdims) {
  const TypeAndWeak t = to_inexact({x.dtype(), x.weak_type()});
  Array a = Convert(x, t.dtype, t.weak);
  const std::vector<int64_t> dims = axis.Canonical(a.ndim(), "logsumexp");
  // Shift by the (finite) max so exp cannot overflow; an all -inf slice shifts by 0.
  Array amax = lax::reduce_max(a, dims);
  amax = where(isfinite(amax), amax, 0.0);
  Array amax_kept = lax::expand_dims(amax, dims);
  Array sumexp = lax::reduce_sum(lax::exp(subtract(a, amax_kept)), dims);
  Array out = add(lax::log(sumexp), amax);
  return keepdims ? lax::expand_dims(out, dims) : out;
}

Array count_nonzero(const Array& x, const Axis& axis, bool keepdims) {
  return sum(ToBoolArray(x), axis, keepdims, int32);
}

}  // namespace jx::numpy

#include "jx/lax/numpy/nan_reductions.h"

#include <limits>

#include "jx/core/errors.h"
#include "jx/lax/convert_ops.h"
#include "jx/lax/numpy/math.h"
#include "jx/lax/numpy/reductions.h"
#include "jx/lax/numpy/statistics.h"

namespace jx::numpy {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// a with its NaNs replaced by `value` (a itself when a cannot hold NaN).
Array ReplaceNaN(const Array& a, double value) {
  if (!IsFloating(a.dtype())) return a;
  return where(isnan(a), value, a);
}

Axis OptionalAxis(std::optional<int64_t> axis) { return axis ? Axis(*axis) : Axis(); }

}  // namespace

Array nansum(const Array& a, const Axis& axis, bool keepdims, std::optional<DType> dtype) {
  return sum(ReplaceNaN(a, 0.0), axis, keepdims, dtype);
}

Array nanprod(const Array& a, const Axis& axis, bool keepdims, std::optional<DType> dtype) {
  return prod(ReplaceNaN(a, 1.0), axis, keepdims, dtype);
}

Array nanmax(const Array& a, const Axis& axis, bool keepdims) {
  if (!IsFloating(a.dtype())) return max(a, axis, keepdims);
  Array r = max(ReplaceNaN(a, -kInf), axis, keepdims);
  return where(all(isnan(a), axis, keepdims), kNaN, r);
}

Array nanmin(const Array& a, const Axis& axis, bool keepdims) {
  if (!IsFloating(a.dtype())) return min(a, axis, keepdims);
  Array r = min(ReplaceNaN(a, kInf), axis, keepdims);
  return where(all(isnan(a), axis, keepdims), kNaN, r);
}

Array nanmean(const Array& a, const Axis& axis, bool keepdims, std::optional<DType> dtype) {
  if (!IsFloating(a.dtype())) return mean(a, axis, keepdims, dtype);
  const DType dt = dtype.value_or(a.dtype());
  Array count = sum(logical_not(isnan(a)), axis, keepdims, dt);
  return true_divide(nansum(a, axis, keepdims, dt), count);
}

Array nanvar(const Array& a, const Axis& axis, bool keepdims, int64_t ddof, std::optional<DType> dtype) {
  if (!IsFloating(a.dtype())) return var(a, axis, keepdims, ddof, dtype);
  const DType dt = dtype.value_or(a.dtype());
  Array x = a.dtype() == dt ? a : lax::convert_element_type(a, dt);
  Array centered = where(isnan(x), 0.0, subtract(x, nanmean(x, axis, /*keepdims=*/true)));
  Array normalizer = subtract(sum(logical_not(isnan(x)), axis, keepdims, dt), static_cast<double>(ddof));
  Array empty = less_equal(normalizer, 0.0);
  Array total = sum(multiply(centered, centered), axis, keepdims);
  // Slices with no more than ddof numbers are NaN (dividing by 1 keeps their gradient finite).
  return where(empty, kNaN, true_divide(total, where(empty, 1.0, normalizer)));
}

Array nanstd(const Array& a, const Axis& axis, bool keepdims, int64_t ddof, std::optional<DType> dtype) {
  return sqrt(nanvar(a, axis, keepdims, ddof, dtype));
}

Array nanargmax(const Array& a, std::optional<int64_t> axis, bool keepdims) {
  if (!IsFloating(a.dtype())) return argmax(a, axis, keepdims);
  Array r = argmax(ReplaceNaN(a, -kInf), axis, keepdims);
  return where(all(isnan(a), OptionalAxis(axis), keepdims), -1, r);
}

Array nanargmin(const Array& a, std::optional<int64_t> axis, bool keepdims) {
  if (!IsFloating(a.dtype())) return argmin(a, axis, keepdims);
  Array r = argmin(ReplaceNaN(a, kInf), axis, keepdims);
  return where(all(isnan(a), OptionalAxis(axis), keepdims), -1, r);
}

Array nancumsum(const Array& a, std::optional<int64_t> axis, std::optional<DType> dtype) {
  return cumsum(ReplaceNaN(a, 0.0), axis, dtype);
}

Array nancumprod(const Array& a, std::optional<int64_t> axis, std::optional<DType> dtype) {
  return cumprod(ReplaceNaN(a, 1.0), axis, dtype);
}

Array nanmedian(const Array& a, const Axis& axis, bool keepdims) {
  return internal::Quantile("nanmedian", a, 0.5, axis, "midpoint", keepdims, /*squash_nans=*/true);
}

Array nanquantile(const Array& a, const ArrayLike& q, const Axis& axis, std::string_view method, bool keepdims) {
  return internal::Quantile("nanquantile", a, q, axis, method, keepdims, /*squash_nans=*/true);
}

Array nanpercentile(const Array& a, const ArrayLike& q, const Axis& axis, std::string_view method, bool keepdims) {
  return internal::Quantile("nanpercentile", a, internal::PercentToFraction(q), axis, method, keepdims, true);
}

}  // namespace jx::numpy

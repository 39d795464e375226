#include "jx/lax/numpy/statistics.h"

#include <algorithm>
#include <limits>

#include "jx/core/errors.h"
#include "jx/lax/binary_ops.h"
#include "jx/lax/convert_ops.h"
#include "jx/lax/shape_ops.h"
#include "jx/lax/sort_ops.h"
#include "jx/lax/numpy/creation.h"
#include "jx/lax/numpy/manipulation.h"
#include "jx/lax/numpy/math.h"
#include "jx/lax/numpy/reductions.h"
#include "jx/lax/numpy/searching.h"

namespace jx::numpy {

namespace internal {

Array Quantile(std::string_view op, const Array& a_in, const ArrayLike& q_in, const Axis& axis,
               std::string_view method, bool keepdims, bool squash_nans) {
  if (method != "linear" && method != "lower" && method != "higher" && method != "nearest" && method != "midpoint") {
    ThrowOpError<ValueError>(op, "method=\"", method,
                             "\" not recognized; expected \"linear\", \"lower\", \"higher\", \"nearest\" or \"midpoint\"");
  }
  std::vector<Array> aq = promote_dtypes({ArrayLike(a_in), q_in});
  const DType dt = to_inexact(TypeAndWeak{aq[0].dtype(), false}).dtype;
  Array a = aq[0].dtype() == dt ? aq[0] : lax::convert_element_type(aq[0], dt);
  Array q = aq[1].dtype() == dt ? aq[1] : lax::convert_element_type(aq[1], dt);
  if (q.ndim() > 1) ThrowOpError<ValueError>(op, "q must be zero- or one-dimensional, got ", q.aval().str());
  const std::vector<int64_t> dims = axis.Canonical(a.ndim(), op);
  if (a.size() == 0) ThrowOpError<ValueError>(op, "cannot compute quantiles of an empty array ", a_in.aval().str());

  // The reduced dims last, flattened into one of n elements: x is batch + [n].
  Shape batch, kept = a.shape();
  std::vector<int64_t> others;
  for (int64_t d = 0; d < a.ndim(); ++d) {
    if (std::find(dims.begin(), dims.end(), d) == dims.end()) {
      others.push_back(d);
      batch.push_back(a.shape()[static_cast<size_t>(d)]);
    } else {
      kept[static_cast<size_t>(d)] = 1;
    }
  }
  int64_t n = 1;
  for (int64_t d : dims) n *= a.shape()[static_cast<size_t>(d)];
  std::vector<int64_t> perm = others;
  perm.insert(perm.end(), dims.begin(), dims.end());
  Shape flat_shape = batch;
  flat_shape.push_back(n);
  Array x = reshape(transpose(a, perm), flat_shape);
  const int64_t last = static_cast<int64_t>(batch.size());

  Array counts;  // elements per slice, q's dtype, batch-shaped
  if (squash_nans) {
    counts = sum(logical_not(isnan(x)), last, false, dt);
  } else {
    // A NaN anywhere makes the slice's quantiles NaN (JAX sets the whole slice to NaN).
    x = where(expand_dims(any(isnan(x), last), last), std::numeric_limits<double>::quiet_NaN(), x);
    counts = full(batch, n, dt);
  }
  x = lax::sort(x, last);

  // Positions in each sorted slice, q along a new last axis: batch + [k] (k = 1 for a 0-d
  // q), so one gather per neighbour reads them without copying x per q.
  const Shape q_shape = q.shape();
  const int64_t k = q.ndim() == 0 ? 1 : q_shape[0];
  Shape pos_shape = batch;
  pos_shape.push_back(k);
  Array qb = broadcast_to(reshape(q, {k}), pos_shape);
  Array cb = broadcast_to(expand_dims(counts, last), pos_shape);
  Array pos = multiply(qb, subtract(cb, 1.0));
  Array low = floor(pos);
  Array high = ceil(pos);
  Array high_weight = subtract(pos, low);
  Array low_weight = subtract(1.0, high_weight);
  Array top = maximum(subtract(cb, 1.0), 0.0);
  low = clip(low, 0.0, top);
  high = clip(high, 0.0, top);
  auto gather = [&](const Array& index) {
    return take_along_axis(x, lax::convert_element_type(index, int32), last, "clip");
  };
  Array low_value = gather(low);
  Array high_value = gather(high);
  Array result;
  if (method == "linear") {
    result = add(multiply(low_value, low_weight), multiply(high_value, high_weight));
  } else if (method == "lower") {
    result = low_value;
  } else if (method == "higher") {
    result = high_value;
  } else if (method == "nearest") {
    result = where(less_equal(high_weight, 0.5), low_value, high_value);
  } else {
    result = multiply(add(low_value, high_value), 0.5);
  }
  // q's dim (if any) leads the result, as jnp.quantile's.
  result = q.ndim() == 0 ? squeeze(result, last) : moveaxis(result, last, 0);
  if (keepdims) {
    Shape s = q_shape;
    s.insert(s.end(), kept.begin(), kept.end());
    result = reshape(result, s);
  }
  return result;
}

}  // namespace internal

Array quantile(const Array& a, const ArrayLike& q, const Axis& axis, std::string_view method, bool keepdims) {
  return internal::Quantile("quantile", a, q, axis, method, keepdims, /*squash_nans=*/false);
}

namespace internal {

ArrayLike PercentToFraction(const ArrayLike& q) {
  // A C++ scalar stays a weak double, so a float64 array's percentile divides in float64.
  if (q.is_scalar()) return ArrayLike(q.float_value() / 100.0);
  return true_divide(q.array(), 100.0);
}

}  // namespace internal

Array percentile(const Array& a, const ArrayLike& q, const Axis& axis, std::string_view method, bool keepdims) {
  return internal::Quantile("percentile", a, internal::PercentToFraction(q), axis, method, keepdims, false);
}

Array median(const Array& a, const Axis& axis, bool keepdims) {
  return internal::Quantile("median", a, 0.5, axis, "midpoint", keepdims, false);
}

namespace {

std::pair<Array, Array> Average(const Array& a_in, const Axis& axis, const std::optional<Array>& weights,
                                bool keepdims) {
  if (!weights) {
    Array avg = mean(a_in, axis, keepdims);
    const std::vector<int64_t> dims = axis.Canonical(a_in.ndim(), "average");
    int64_t count = 1;
    for (int64_t d : dims) count *= a_in.shape()[static_cast<size_t>(d)];
    return {avg, full(avg.shape(), count, avg.dtype())};
  }
  const DType dt = to_inexact(result_type_weak({a_in, *weights})).dtype;
  Array a = a_in.dtype() == dt ? a_in : lax::convert_element_type(a_in, dt);
  Array w = weights->dtype() == dt ? *weights : lax::convert_element_type(*weights, dt);
  if (w.shape() != a.shape()) {
    if (axis.all()) {
      ThrowOpError<ValueError>("average", "Axis must be specified when shapes of a and weights differ: a ",
                               a_in.aval().str(), ", weights ", weights->aval().str());
    }
    if (w.ndim() != 1 || axis.axes().size() != 1) {
      ThrowOpError<TypeError>("average", "1D weights expected along one axis when shapes of a and weights differ: a ",
                              a_in.aval().str(), ", weights ", weights->aval().str());
    }
    const int64_t ax = CanonicalizeAxis(axis.axes()[0], a.ndim(), "average");
    if (w.shape()[0] != a.shape()[static_cast<size_t>(ax)]) {
      ThrowOpError<ValueError>("average", "Length of weights not compatible with specified axis: a ", a_in.aval().str(),
                               " axis ", ax, ", weights ", weights->aval().str());
    }
    Shape ws(static_cast<size_t>(a.ndim()), 1);
    ws[static_cast<size_t>(ax)] = w.shape()[0];
    w = broadcast_to(reshape(w, ws), a.shape());
  }
  Array wsum = sum(w, axis, keepdims);
  Array avg = true_divide(sum(multiply(a, w), axis, keepdims), wsum);
  return {avg, broadcast_to(wsum, avg.shape())};
}

}  // namespace

Array average(const Array& a, const Axis& axis, const std::optional<Array>& weights, bool keepdims) {
  return Average(a, axis, weights, keepdims).first;
}

std::pair<Array, Array> average(const Array& a, const Axis& axis, const std::optional<Array>& weights, returned_t,
                                bool keepdims) {
  return Average(a, axis, weights, keepdims);
}

namespace {
int64_t MaxPlusOne(const Array& x) { return x.size() == 0 ? 0 : max(x).item<int64_t>() + 1; }
}  // namespace

Array bincount(const Array& x, const std::optional<Array>& weights, int64_t minlength, std::optional<int64_t> length) {
  if (!IsInteger(x.dtype())) {
    ThrowOpError<TypeError>("bincount", "x argument to bincount must have an integer type, got ", x.aval().str());
  }
  if (x.ndim() != 1) ThrowOpError<ValueError>("bincount", "only 1-dimensional input supported, got ", x.aval().str());
  if (minlength < 0) ThrowOpError<ValueError>("bincount", "minlength must be non-negative, got ", minlength);
  const int64_t n = length ? *length : std::max(internal::ConcreteSize("bincount", x, "length", MaxPlusOne), minlength);
  if (n < 0) ThrowOpError<ValueError>("bincount", "length must be non-negative, got ", n);
  Array w = weights ? *weights : internal::ScalarOf(int64_t{1}, int32);
  if (weights && weights->shape() != x.shape()) {
    ThrowOpError<ValueError>("bincount", "weights must have x's shape: x ", x.aval().str(), ", weights ",
                             weights->aval().str());
  }
  Array idx = maximum(x, 0);
  return zeros({n}, w.dtype()).at(idx).add(broadcast_to(w, x.shape()), "drop");
}

}  // namespace jx::numpy

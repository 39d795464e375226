#include "jx/lax/numpy/creation.h"

#include <cmath>

#include "jx/lax/convert_ops.h"
#include "jx/lax/shape_ops.h"

namespace jx::numpy {

namespace internal {
void CheckArraySize(int64_t count, const Shape& shape) {
  for (int64_t d : shape) {
    if (d < 0) ThrowOpError<ShapeError>("array", "negative dimensions are not allowed, got shape ", ShapeToString(shape));
  }
  if (NumElements(shape) != count) {
    ThrowOpError<ShapeError>("array", "cannot reshape ", count, " values into shape ", ShapeToString(shape), " (",
                             NumElements(shape), " elements)");
  }
}
}  // namespace internal

namespace {
void CheckShape(std::string_view op, const Shape& shape) {
  for (int64_t d : shape) {
    if (d < 0) ThrowOpError<ShapeError>(op, "negative dimensions are not allowed, got shape ", ShapeToString(shape));
  }
}

// A 0-d value broadcast to shape (lax.full).
Array Fill(std::string_view op, const Shape& shape, const Array& scalar) {
  CheckShape(op, shape);
  return lax::broadcast_in_dim(scalar, shape, {});
}
}  // namespace

Array array(const Array& x, std::optional<DType> dtype) {
  const DType d = dtype.value_or(x.dtype());
  if (d != x.dtype()) return lax::convert_element_type(x, d);
  return lax::copy(x);
}

Array asarray(const ArrayLike& x, std::optional<DType> dtype) {
  if (!dtype) return x.to_array();
  return x.as(*dtype, false);
}

Array zeros(const Shape& shape, DType dtype) { return Fill("zeros", shape, internal::ScalarOf(int64_t{0}, dtype)); }
Array ones(const Shape& shape, DType dtype) { return Fill("ones", shape, internal::ScalarOf(int64_t{1}, dtype)); }
Array empty(const Shape& shape, DType dtype) { return Fill("empty", shape, internal::ScalarOf(int64_t{0}, dtype)); }

Array full(const Shape& shape, const ArrayLike& fill_value, std::optional<DType> dtype) {
  CheckShape("full", shape);
  const TypeAndWeak t = dtype ? TypeAndWeak{*dtype, false} : fill_value.type();
  Array v = fill_value.as(t.dtype, t.weak);
  if (v.ndim() == 0) return lax::broadcast_in_dim(v, shape, {});
  return broadcast_to(v, shape);
}

Array zeros_like(const Array& x, std::optional<DType> dtype) { return zeros(x.shape(), dtype.value_or(x.dtype())); }
Array ones_like(const Array& x, std::optional<DType> dtype) { return ones(x.shape(), dtype.value_or(x.dtype())); }
Array empty_like(const Array& x, std::optional<DType> dtype) { return zeros_like(x, dtype); }
Array full_like(const Array& x, const ArrayLike& fill_value, std::optional<DType> dtype) {
  return full(x.shape(), fill_value, dtype.value_or(x.dtype()));
}

namespace internal {

Array ArangeInt(int64_t start, int64_t stop, int64_t step, DType dtype) {
  if (step == 0) ThrowOpError<ValueError>("arange", "step must not be zero (start ", start, ", stop ", stop, ")");
  int64_t n = 0;
  if (step > 0 && stop > start) n = (stop - start + step - 1) / step;
  if (step < 0 && stop < start) n = (start - stop - step - 1) / -step;
  // Like JAX, the plain range is an iota; anything else is a constant.
  if (start == 0 && step == 1 && !IsBool(dtype)) return lax::iota(dtype, n);
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = start + i * step;
  return FromInt64s(v, Shape{n}, dtype);
}

Array ArangeFloat(double start, double stop, double step, DType dtype) {
  if (step == 0 || std::isnan(step)) {
    ThrowOpError<ValueError>("arange", "step must be a nonzero number, got ", step, " (start ", start, ", stop ", stop, ")");
  }
  const double len = std::ceil((stop - start) / step);
  if (!std::isfinite(len)) ThrowOpError<ValueError>("arange", "cannot compute length for start ", start, ", stop ", stop);
  const int64_t n = len > 0 ? static_cast<int64_t>(len) : 0;
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = start + static_cast<double>(i) * step;
  return FromDoubles(v, Shape{n}, dtype);
}

}  // namespace internal

Array linspace(double start, double stop, int64_t num, bool endpoint, DType dtype) {
  if (num < 0) ThrowOpError<ValueError>("linspace", "number of samples, ", num, ", must be non-negative");
  std::vector<double> v(static_cast<size_t>(num));
  const int64_t div = endpoint ? num - 1 : num;
  const double step = div > 0 ? (stop - start) / static_cast<double>(div) : 0.0;
  for (int64_t i = 0; i < num; ++i) v[static_cast<size_t>(i)] = start + static_cast<double>(i) * step;
  if (endpoint && num > 1) v.back() = stop;
  // Integer dtypes take the floor, as jnp.linspace does.
  if (!IsFloating(dtype)) {
    for (double& x : v) x = std::floor(x);
  }
  return internal::FromDoubles(v, Shape{num}, dtype);
}

Array eye(int64_t n, std::optional<int64_t> m, int64_t k, DType dtype) {
  const int64_t cols = m.value_or(n);
  CheckShape("eye", {n, cols});
  std::vector<int64_t> v(static_cast<size_t>(n * cols), 0);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t j = i + k;
    if (j >= 0 && j < cols) v[static_cast<size_t>(i * cols + j)] = 1;
  }
  return internal::FromInt64s(v, Shape{n, cols}, dtype);
}

Array identity(int64_t n, DType dtype) { return eye(n, n, 0, dtype); }

Array tri(int64_t n, std::optional<int64_t> m, int64_t k, DType dtype) {
  const int64_t cols = m.value_or(n);
  CheckShape("tri", {n, cols});
  std::vector<int64_t> v(static_cast<size_t>(n * cols), 0);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < cols; ++j) v[static_cast<size_t>(i * cols + j)] = j <= i + k ? 1 : 0;
  }
  return internal::FromInt64s(v, Shape{n, cols}, dtype);
}

}  // namespace jx::numpy

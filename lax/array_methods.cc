// The Array members that are ops (declared in core/array.h, defined here because they bind
// lax primitives): astype, reshape, T, indexing and .at, and the methods JAX users chain.
#include <algorithm>
#include <numeric>

#include "jx/core/array.h"
#include "jx/core/errors.h"
#include "jx/lax/convert_ops.h"
#include "jx/lax/shape_ops.h"
#include "jx/lax/indexing.h"
#include "jx/lax/indexing_internal.h"
#include "jx/lax/numpy/creation.h"
#include "jx/lax/numpy/linalg.h"
#include "jx/lax/numpy/manipulation.h"
#include "jx/lax/numpy/math.h"
#include "jx/lax/numpy/reductions.h"
#include "jx/lax/slicing_ops.h"

namespace jx {

namespace jnp = jx::numpy;

Array Array::astype(DType dtype) const { return lax::convert_element_type(*this, dtype); }

// jnp.reshape: one dimension may be -1 and is inferred from the others.
Array Array::reshape(Shape new_shape) const {
  int64_t unknown = -1, known = 1;
  for (size_t i = 0; i < new_shape.size(); ++i) {
    if (new_shape[i] == -1) {
      if (unknown >= 0) {
        ThrowOpError<ShapeError>("reshape", "can only specify one unknown dimension, got new shape ",
                                 ShapeToString(new_shape), " for ", aval().str());
      }
      unknown = static_cast<int64_t>(i);
    } else {
      known *= new_shape[i];
    }
  }
  if (unknown >= 0) {
    if (known == 0 || size() % known != 0) {
      ThrowOpError<ShapeError>("reshape", "cannot reshape array of shape ", ShapeToString(shape()), " (size ", size(),
                               ", ", aval().str(), ") into shape ", ShapeToString(new_shape));
    }
    new_shape[static_cast<size_t>(unknown)] = size() / known;
  }
  return lax::reshape(*this, new_shape);
}

Array Array::T() const {
  std::vector<int64_t> perm(static_cast<size_t>(ndim()));
  std::iota(perm.rbegin(), perm.rend(), 0);
  return lax::transpose(*this, perm);
}

// ---- indexing (lax/indexing.h) ----

Array Array::operator[](const Index& index) const { return lax::internal::GetItem(*this, {index}); }
Array Array::operator[](std::initializer_list<Index> indices) const {
  return lax::internal::GetItem(*this, absl::MakeConstSpan(indices.begin(), indices.size()));
}
Array Array::index(const std::vector<Index>& indices) const { return lax::internal::GetItem(*this, indices); }

IndexUpdateRef Array::at(const Index& index) const { return IndexUpdateRef(*this, {index}); }
IndexUpdateRef Array::at(std::initializer_list<Index> indices) const {
  return IndexUpdateRef(*this, std::vector<Index>(indices));
}

namespace {
Array Update(const Array& x, const std::vector<Index>& indices, const Array& values, lax::UpdateOp op,
             const AtOptions& options, std::string_view name) {
  return lax::internal::UpdateItem(x, indices, values, op, lax::internal::ParseIndexMode(options.mode, true, name),
                                   {options.indices_are_sorted, options.unique_indices});
}
}  // namespace

Array IndexUpdateRef::set(const Array& values, const AtOptions& options) const {
  return Update(x_, indices_, values, lax::UpdateOp::kSet, options, "at[].set");
}
Array IndexUpdateRef::add(const Array& values, const AtOptions& options) const {
  return Update(x_, indices_, values, lax::UpdateOp::kAdd, options, "at[].add");
}
Array IndexUpdateRef::multiply(const Array& values, const AtOptions& options) const {
  return Update(x_, indices_, values, lax::UpdateOp::kMultiply, options, "at[].multiply");
}
// JAX's divide and power: x / ones_like(x).at[idx].multiply(values) (true division: an
// integer x gives floats) and x ** ones_like(x).at[idx].multiply(values).
Array IndexUpdateRef::divide(const Array& values, const AtOptions& options) const {
  return jnp::divide(x_, Update(jnp::ones_like(x_), indices_, values, lax::UpdateOp::kMultiply, options, "at[].divide"));
}
Array IndexUpdateRef::power(const Array& values, const AtOptions& options) const {
  return jnp::power(x_, Update(jnp::ones_like(x_), indices_, values, lax::UpdateOp::kMultiply, options, "at[].power"));
}
Array IndexUpdateRef::min(const Array& values, const AtOptions& options) const {
  return Update(x_, indices_, values, lax::UpdateOp::kMin, options, "at[].min");
}
Array IndexUpdateRef::max(const Array& values, const AtOptions& options) const {
  return Update(x_, indices_, values, lax::UpdateOp::kMax, options, "at[].max");
}
Array IndexUpdateRef::apply(const std::function<Array(const Array&)>& fn, const AtOptions& options) const {
  return lax::internal::ApplyItem(x_, indices_, fn, lax::internal::ParseIndexMode(options.mode, true, "at[].apply"),
                                  {options.indices_are_sorted, options.unique_indices});
}
Array IndexUpdateRef::get(std::string_view mode, std::optional<double> fill_value) const {
  const lax::GatherScatterMode m = lax::internal::ParseIndexMode(mode, false, "at[].get");
  if (fill_value && m != lax::GatherScatterMode::kFillOrDrop) {
    ThrowOpError<ValueError>("at[].get", "fill_value is only used with mode='fill'; got mode '", mode, "'");
  }
  return lax::internal::GetItem(x_, indices_, m, fill_value);
}

// ---- methods: the jnp functions ----

Array Array::sum(const Axis& axis, bool keepdims, std::optional<DType> dtype) const {
  return jnp::sum(*this, axis, keepdims, dtype);
}
Array Array::prod(const Axis& axis, bool keepdims, std::optional<DType> dtype) const {
  return jnp::prod(*this, axis, keepdims, dtype);
}
Array Array::mean(const Axis& axis, bool keepdims, std::optional<DType> dtype) const {
  return jnp::mean(*this, axis, keepdims, dtype);
}
Array Array::max(const Axis& axis, bool keepdims) const { return jnp::max(*this, axis, keepdims); }
Array Array::min(const Axis& axis, bool keepdims) const { return jnp::min(*this, axis, keepdims); }
Array Array::var(const Axis& axis, bool keepdims, int64_t ddof) const { return jnp::var(*this, axis, keepdims, ddof); }
Array Array::std(const Axis& axis, bool keepdims, int64_t ddof) const { return jnp::std(*this, axis, keepdims, ddof); }
Array Array::any(const Axis& axis, bool keepdims) const { return jnp::any(*this, axis, keepdims); }
Array Array::all(const Axis& axis, bool keepdims) const { return jnp::all(*this, axis, keepdims); }
Array Array::argmax(std::optional<int64_t> axis, bool keepdims) const { return jnp::argmax(*this, axis, keepdims); }
Array Array::argmin(std::optional<int64_t> axis, bool keepdims) const { return jnp::argmin(*this, axis, keepdims); }
Array Array::cumsum(std::optional<int64_t> axis, std::optional<DType> dtype) const {
  return jnp::cumsum(*this, axis, dtype);
}
Array Array::cumprod(std::optional<int64_t> axis, std::optional<DType> dtype) const {
  return jnp::cumprod(*this, axis, dtype);
}
Array Array::ravel() const { return jnp::ravel(*this); }
Array Array::flatten() const { return jnp::ravel(*this); }
Array Array::squeeze(const Axis& axis) const { return jnp::squeeze(*this, axis); }
Array Array::transpose(std::optional<std::vector<int64_t>> axes) const { return jnp::transpose(*this, std::move(axes)); }
Array Array::swapaxes(int64_t axis1, int64_t axis2) const { return jnp::swapaxes(*this, axis1, axis2); }
Array Array::clip(const std::optional<Array>& lo, const std::optional<Array>& hi) const {
  std::optional<jnp::ArrayLike> l, h;
  if (lo) l = jnp::ArrayLike(*lo);
  if (hi) h = jnp::ArrayLike(*hi);
  return jnp::clip(*this, l, h);
}
Array Array::round(int decimals) const { return jnp::round(*this, decimals); }
Array Array::dot(const Array& other) const { return jnp::dot(*this, other); }

// NumPy's item(i) and item(i, j, ...): no clamping (it reads one element on the host).
int64_t Array::ItemOffset(int64_t flat_index) const {
  const int64_t n = size();
  if (flat_index < -n || flat_index >= n) {
    ThrowOpError<IndexError>("item", "index ", flat_index, " is out of bounds for size ", n, " (", aval().str(), ")");
  }
  return flat_index < 0 ? flat_index + n : flat_index;
}

int64_t Array::ItemOffset(absl::Span<const int64_t> coordinates) const {
  if (static_cast<int64_t>(coordinates.size()) != ndim()) {
    ThrowOpError<ValueError>("item", "incorrect number of indices for array: ", coordinates.size(), " given for ",
                             aval().str());
  }
  int64_t offset = 0;
  for (size_t d = 0; d < coordinates.size(); ++d) {
    const int64_t n = shape()[d];
    int64_t i = coordinates[d];
    if (i < -n || i >= n) {
      ThrowOpError<IndexError>("item", "index ", i, " is out of bounds for axis ", d, " with size ", n, " (",
                               aval().str(), ")");
    }
    if (i < 0) i += n;
    offset = offset * n + i;
  }
  return offset;
}

const Array& Array::block_until_ready() const {
  if (is_concrete()) (void)buffer();  // throws on a donated array; assembles a sharded one
  return *this;
}

}  // namespace jx

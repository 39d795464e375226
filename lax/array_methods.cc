// The Array members that are ops (declared in core/array.h, defined here because they bind
// lax primitives): astype, reshape, T, operator[].
#include <algorithm>
#include <numeric>

#include "jx/core/array.h"
#include "jx/core/errors.h"
#include "jx/lax/convert_ops.h"
#include "jx/lax/shape_ops.h"
#include "jx/lax/slicing_ops.h"

namespace jx {

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

// NumPy's x[i]: a static slice of the leading axis, then squeeze (so it stays differentiable).
Array Array::operator[](int64_t index) const {
  const ShapedArray& a = aval();
  if (a.ndim() == 0) {
    ThrowOpError<IndexError>("getitem", "too many indices for array: array is 0-dimensional (", a.str(),
                             "), but 1 were indexed");
  }
  const int64_t n = a.shape[0];
  if (index < -n || index >= n) {
    ThrowOpError<IndexError>("getitem", "index ", index, " is out of bounds for axis 0 with size ", n, " (array ",
                             a.str(), ")");
  }
  if (index < 0) index += n;
  std::vector<int64_t> start(static_cast<size_t>(a.ndim()), 0);
  std::vector<int64_t> limit = a.shape;
  start[0] = index;
  limit[0] = index + 1;
  return lax::squeeze(lax::slice(*this, start, limit), {0});
}

}  // namespace jx

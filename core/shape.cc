#include "jx/core/shape.h"

#include <ostream>

#include "absl/strings/str_join.h"
#include "jx/core/errors.h"

namespace jx {

int64_t NumElements(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::vector<int64_t> RowMajorStrides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s *= shape[i];
  }
  return strides;
}

std::string ShapeToString(const Shape& shape) {
  if (shape.size() == 1) return StrCat("(", shape[0], ",)");
  return StrCat("(", absl::StrJoin(shape, ", "), ")");
}

std::string ShapedArray::str() const {
  return StrCat(dtype_short_name(dtype), "[", absl::StrJoin(shape, ","), "]");
}

std::ostream& operator<<(std::ostream& os, const ShapedArray& a) { return os << a.str(); }

int64_t CanonicalizeAxis(int64_t axis, int64_t rank, std::string_view op) {
  if (axis < -rank || axis >= rank) {
    ThrowOpError<ShapeError>(op, "axis ", axis, " is out of bounds for an array of rank ", rank);
  }
  return axis < 0 ? axis + rank : axis;
}

}  // namespace jx

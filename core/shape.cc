#include "jx/core/shape.h"

#include <ostream>

#include "absl/strings/str_cat.h"
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

namespace {

// "8", "8@x", "8@(x,y)": a dimension's global size and the mesh axes splitting it.
std::string DimString(const ShapedArray& a, size_t i) {
  std::string out = StrCat(a.shape[i]);
  if (i >= a.spec.size() || a.spec[i].empty()) return out;
  const auto& axes = a.spec[i];
  return axes.size() == 1 ? StrCat(out, "@", axes[0]) : StrCat(out, "@(", absl::StrJoin(axes, ","), ")");
}

std::string TypeString(const ShapedArray& a, std::string_view dtype) {
  std::string out = StrCat(dtype, "[");
  for (size_t i = 0; i < a.shape.size(); ++i) absl::StrAppend(&out, i ? "," : "", DimString(a, i));
  out += "]";
  if (!a.vma.empty()) {
    absl::StrAppend(&out, "{V:", a.vma.size() == 1 ? a.vma[0] : StrCat("(", absl::StrJoin(a.vma, ","), ")"), "}");
  }
  return out;
}

}  // namespace

std::string ShapedArray::str() const {
  if (spec.empty() && vma.empty()) return StrCat(dtype_short_name(dtype), "[", absl::StrJoin(shape, ","), "]");
  return TypeString(*this, dtype_short_name(dtype));
}

std::string ShapedArray::long_str() const { return TypeString(*this, dtype_name(dtype)); }

std::ostream& operator<<(std::ostream& os, const ShapedArray& a) { return os << a.str(); }

int64_t CanonicalizeAxis(int64_t axis, int64_t rank, std::string_view op) {
  if (axis < -rank || axis >= rank) {
    ThrowOpError<ShapeError>(op, "axis ", axis, " is out of bounds for an array of rank ", rank);
  }
  return axis < 0 ? axis + rank : axis;
}

}  // namespace jx

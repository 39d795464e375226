// Shape and ShapedArray (the abstract value, "aval", that tracing and compilation work on).
//
//   jx::ShapedArray a{{2, 3}, jx::float32};
//   a.str();         // "f32[2,3]"
//   a.size();        // 6
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "jx/core/dtype.h"

namespace jx {

using Shape = std::vector<int64_t>;

int64_t NumElements(const Shape& shape);
// Row-major strides, in elements.
std::vector<int64_t> RowMajorStrides(const Shape& shape);
std::string ShapeToString(const Shape& shape);  // "(2, 3)"

struct ShapedArray {
  Shape shape;
  DType dtype = DType::kFloat32;
  // A weakly typed value stands for a C++ scalar and takes its partner's dtype in promotion.
  bool weak_type = false;

  int64_t ndim() const { return static_cast<int64_t>(shape.size()); }
  int64_t size() const { return NumElements(shape); }
  int64_t nbytes() const { return size() * ItemSize(dtype); }
  std::string str() const;  // "f32[2,3]"
  friend bool operator==(const ShapedArray&, const ShapedArray&) = default;
};
std::ostream& operator<<(std::ostream& os, const ShapedArray& a);

// Canonicalizes a possibly negative axis against rank, or throws ShapeError naming op.
int64_t CanonicalizeAxis(int64_t axis, int64_t rank, std::string_view op);

}  // namespace jx

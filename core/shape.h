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
  // The mesh axes sharding each dimension when the type records a sharding (JAX's explicit
  // sharding, aval.sharding.spec): empty for an unsharded type, else one entry per dimension,
  // each the mesh axes that dimension is split over, major first (an empty entry: not split).
  // `shape` stays the global shape. Prints as f32[8@x,4], f32[8@(x,y),4].
  std::vector<std::vector<std::string>> spec{};
  // Inside shard_map: the manual mesh axes the value varies over (JAX's aval.vma, checked
  // when check_vma is on), sorted by name; empty outside shard_map and for values invariant
  // over every axis. Prints as f32[2,4]{V:x}, f32[2,2]{V:(i,j)}.
  std::vector<std::string> vma{};

  int64_t ndim() const { return static_cast<int64_t>(shape.size()); }
  int64_t size() const { return NumElements(shape); }
  int64_t nbytes() const { return size() * ItemSize(dtype); }
  bool sharded_in_type() const { return !spec.empty(); }
  std::string str() const;      // "f32[2,3]", "f32[8@x,4]", "f32[2,4]{V:x}" (jaxprs)
  std::string long_str() const; // "float32[2,3]", "float32[8@x,4]" (jx::typeof, JAX's repr)
  friend bool operator==(const ShapedArray&, const ShapedArray&) = default;
};
// Prints str() (the short form jaxprs use).
std::ostream& operator<<(std::ostream& os, const ShapedArray& a);

// Canonicalizes a possibly negative axis against rank, or throws ShapeError naming op.
int64_t CanonicalizeAxis(int64_t axis, int64_t rank, std::string_view op);

}  // namespace jx

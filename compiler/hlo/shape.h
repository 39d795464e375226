// Shapes of HLO values: an element type, dimensions and a layout, or a tuple of shapes.
// Text form is XLA's: "f32[128,512]{1,0}" (layout = minor_to_major), scalars "f32[]",
// tuples "(f32[2]{0}, s32[])", tokens "token[]".
//
//   Shape s = ShapeUtil::MakeShape(F32, {128, 512});   // default layout {1,0}
//   s.ToString();                                       // "f32[128,512]{1,0}"
//   ShapeUtil::ByteSizeOf(s);                           // 262144
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace jx::hlo {

// XLA's element types (unscoped, as in XLA, so code reads `F32`).
enum PrimitiveType : uint8_t {
  PRIMITIVE_TYPE_INVALID,
  PRED, S8, S16, S32, S64, U8, U16, U32, U64, F16, BF16, F32, F64,
  TUPLE, TOKEN,
};

std::string_view PrimitiveTypeName(PrimitiveType type);  // "f32", "pred", "bf16"
absl::StatusOr<PrimitiveType> StringToPrimitiveType(std::string_view name);
// Bytes per element; 0 for TUPLE, TOKEN and invalid.
int64_t ByteSizeOfPrimitiveType(PrimitiveType type);
int BitWidth(PrimitiveType type);
bool IsFloatingPointType(PrimitiveType type);
bool IsSignedIntegralType(PrimitiveType type);
bool IsUnsignedIntegralType(PrimitiveType type);
bool IsIntegralType(PrimitiveType type);  // signed or unsigned, not PRED
bool IsArrayType(PrimitiveType type);     // PRED .. F64

struct Layout {
  // Dimension numbers from most minor (fastest varying) to most major.
  std::vector<int64_t> minor_to_major;
  friend bool operator==(const Layout&, const Layout&) = default;
};

class Shape {
 public:
  Shape() = default;  // invalid
  // An array shape with the default (row-major) layout.
  Shape(PrimitiveType element_type, std::vector<int64_t> dimensions);
  Shape(PrimitiveType element_type, std::vector<int64_t> dimensions, Layout layout);
  static Shape Tuple(std::vector<Shape> elements);
  static Shape Token();

  PrimitiveType element_type() const { return element_type_; }
  bool IsArray() const { return IsArrayType(element_type_); }
  bool IsTuple() const { return element_type_ == TUPLE; }
  bool IsToken() const { return element_type_ == TOKEN; }
  bool valid() const { return element_type_ != PRIMITIVE_TYPE_INVALID; }

  const std::vector<int64_t>& dimensions() const { return dimensions_; }
  int64_t dimensions(int64_t i) const { return dimensions_[i]; }
  int64_t rank() const { return static_cast<int64_t>(dimensions_.size()); }
  const Layout& layout() const { return layout_; }
  void set_layout(Layout layout) { layout_ = std::move(layout); }

  const std::vector<Shape>& tuple_shapes() const { return tuple_shapes_; }
  const Shape& tuple_shapes(int64_t i) const { return tuple_shapes_[i]; }
  int64_t tuple_shapes_size() const { return static_cast<int64_t>(tuple_shapes_.size()); }

  // "f32[2,3]{1,0}"; without layout "f32[2,3]" (as in computation signatures).
  std::string ToString(bool print_layout = true) const;

  // Exact equality, layouts included.
  friend bool operator==(const Shape&, const Shape&) = default;

 private:
  PrimitiveType element_type_ = PRIMITIVE_TYPE_INVALID;
  std::vector<int64_t> dimensions_;
  Layout layout_;
  std::vector<Shape> tuple_shapes_;
};
std::ostream& operator<<(std::ostream& os, const Shape& shape);

// A computation's signature: "(f32[8]{0}, s32[])->f32[8]{0}".
struct ProgramShape {
  std::vector<Shape> parameters;
  std::vector<std::string> parameter_names;
  Shape result;
  std::string ToString(bool print_layout = true) const;
};

class ShapeUtil {
 public:
  static Shape MakeShape(PrimitiveType type, absl::Span<const int64_t> dimensions) {
    return Shape(type, std::vector<int64_t>(dimensions.begin(), dimensions.end()));
  }
  static Shape MakeScalarShape(PrimitiveType type) { return Shape(type, {}); }
  static Shape MakeTupleShape(std::vector<Shape> elements) {
    return Shape::Tuple(std::move(elements));
  }
  // Same type and dims, default layout.
  static Shape ChangeElementType(const Shape& shape, PrimitiveType type);
  static Layout DefaultLayout(int64_t rank);  // {rank-1, ..., 0}

  static int64_t ElementsIn(const Shape& shape);  // 1 for scalars; arrays only
  // Array bytes; for tuples, the sum of the elements' sizes.
  static int64_t ByteSizeOf(const Shape& shape);
  static int64_t Rank(const Shape& shape) { return shape.rank(); }
  static bool IsScalar(const Shape& shape) { return shape.IsArray() && shape.rank() == 0; }
  static bool IsScalarWithType(const Shape& shape, PrimitiveType type) {
    return IsScalar(shape) && shape.element_type() == type;
  }
  static bool IsEffectiveScalar(const Shape& shape) {
    return shape.IsArray() && ElementsIn(shape) == 1;
  }
  // Same element types and dims (recursively for tuples); layouts ignored.
  static bool Compatible(const Shape& a, const Shape& b);
  static bool SameDimensions(const Shape& a, const Shape& b) {
    return a.dimensions() == b.dimensions();
  }
  // Parses "f32[2,3]{1,0}", "f32[2,3]" (default layout), "(s32[], f32[4]{0})", "token[]".
  static absl::StatusOr<Shape> ParseShape(std::string_view text);
  // Parses a shape at the start of text; *consumed gets the characters used.
  static absl::StatusOr<Shape> ParseShapePrefix(std::string_view text, size_t* consumed);
  // Checks dims are non-negative and the layout is a permutation of the dims.
  static absl::Status ValidateShape(const Shape& shape);
};

}  // namespace jx::hlo

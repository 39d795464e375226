// Shapes of HLO values: an element type, dimensions and a layout, or a tuple of shapes.
// Text form is XLA's: "f32[128,512]{1,0}" (layout = minor_to_major), scalars "f32[]",
// tuples "(f32[2]{0}, s32[])", tokens "token[]". A layout may also carry tiles and a memory
// space, written after a colon as XLA's TPU backend does: "f32[256,512]{1,0:T(8,128)S(1)}"
// (the two minor dims stored in 8x128 tiles, padded to whole tiles, in memory space 1);
// nested tiles follow each other: "bf16[64,256]{1,0:T(16,128)(2,1)}". Targets that do not
// tile (the CPU) ignore both; the CPU's layout assignment resets them.
//
//   Shape s = ShapeUtil::MakeShape(F32, {128, 512});   // default layout {1,0}
//   s.ToString();                                       // "f32[128,512]{1,0}"
//   ShapeUtil::ByteSizeOf(s);                           // 262144
#pragma once

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/inlined_vector.h"
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

// Arrays of rank <= kInlineRank keep their dims inside the Shape, so a shape owns no heap
// block. XLA inlines 6; 4 covers the usual ranks (NHWC) and keeps an instruction's opcode,
// edges, element type and dims in its first two cache lines (hlo_instruction.h).
inline constexpr int kInlineRank = 4;
using DimensionVector = absl::InlinedVector<int64_t, kInlineRank>;

// The most dims a shape may have: minor_to_major stores dimension numbers in 16 bits.
inline constexpr int64_t kMaxRank = 32767;
// Dimension numbers, most minor first: 16-bit entries, 8 inline in the 24 bytes an
// int64_t vector needs for 2. Reads as a sequence of integers (promotes to int64_t).
using MinorToMajor = absl::InlinedVector<int16_t, 8>;

// An editable copy of a span (dims, a transpose's permutation), as XLA's SpanToVector.
template <typename T>
std::vector<T> SpanToVector(absl::Span<const T> span) {
  return std::vector<T>(span.begin(), span.end());
}

// One level of tiling (XLA's Tile): the array's minor-most dims are split into tiles of
// these sizes, padded up to whole tiles; a tile with fewer dims than the array leaves the
// major dims untiled. A second Tile tiles the elements inside the first one.
struct Tile {
  std::vector<int64_t> dimensions;
  friend bool operator==(const Tile&, const Tile&) = default;
};

// The memory space an array lives in: 0 is the default (a chip's HBM, the host's RAM);
// targets number the others (the TPU's VMEM is 1).
inline constexpr int64_t kDefaultMemorySpace = 0;

struct Layout {
  // Dimension numbers from most minor (fastest varying) to most major.
  MinorToMajor minor_to_major;
  std::vector<Tile> tiles = {};  // empty: untiled
  int64_t memory_space = kDefaultMemorySpace;
  // Whether there is anything to print after the colon.
  bool HasTilesOrMemorySpace() const {
    return !tiles.empty() || memory_space != kDefaultMemorySpace;
  }
  // "1,0:T(8,128)S(1)" (without braces).
  std::string ToString() const;
  friend bool operator==(const Layout&, const Layout&) = default;
};

class Shape {
 public:
  Shape() = default;  // invalid
  // An array shape with the default (row-major) layout.
  Shape(PrimitiveType element_type, absl::Span<const int64_t> dimensions);
  Shape(PrimitiveType element_type, absl::Span<const int64_t> dimensions, Layout layout);
  static Shape Tuple(std::vector<Shape> elements);
  static Shape Token();

  PrimitiveType element_type() const { return element_type_; }
  bool IsArray() const { return IsArrayType(element_type_); }
  bool IsTuple() const { return element_type_ == TUPLE; }
  bool IsToken() const { return element_type_ == TOKEN; }
  bool valid() const { return element_type_ != PRIMITIVE_TYPE_INVALID; }

  absl::Span<const int64_t> dimensions() const { return dimensions_; }
  int64_t dimensions(int64_t i) const { return dimensions_[i]; }
  int64_t rank() const { return static_cast<int64_t>(dimensions_.size()); }
  const Layout& layout() const { return layout_; }
  void set_layout(Layout layout) { layout_ = std::move(layout); }

  // Empty unless IsTuple().
  const std::vector<Shape>& tuple_shapes() const;
  const Shape& tuple_shapes(int64_t i) const { return (*tuple_shapes_)[i]; }
  int64_t tuple_shapes_size() const {
    return tuple_shapes_ ? static_cast<int64_t>(tuple_shapes_->size()) : 0;
  }

  // "f32[2,3]{1,0}"; without layout "f32[2,3]" (as in computation signatures).
  std::string ToString(bool print_layout = true) const;

  // Exact equality, layouts included.
  friend bool operator==(const Shape& a, const Shape& b);

 private:
  // Element type and dims first: the fields graph walks read (an instruction embeds its
  // shape right after its edges).
  PrimitiveType element_type_ = PRIMITIVE_TYPE_INVALID;
  DimensionVector dimensions_;
  Layout layout_;
  // A tuple's elements, out of line and shared: they never change after Tuple(), so copies
  // share them and an array shape pays a null shared_ptr (16 bytes) for them. Null unless a tuple.
  std::shared_ptr<const std::vector<Shape>> tuple_shapes_;
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
    return Shape(type, dimensions);
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
  // Parses "f32[2,3]{1,0}", "f32[2,3]" (default layout), "(s32[], f32[4]{0})", "token[]",
  // "f32[8,128]{1,0:T(8,128)S(1)}", "f32[]{:S(1)}".
  static absl::StatusOr<Shape> ParseShape(std::string_view text);
  // Parses a shape at the start of text; *consumed gets the characters used.
  static absl::StatusOr<Shape> ParseShapePrefix(std::string_view text, size_t* consumed);
  // Checks dims are non-negative, the layout is a permutation of the dims, tiles are no
  // longer than the rank with positive sizes, and the memory space is non-negative.
  static absl::Status ValidateShape(const Shape& shape);
};

}  // namespace jx::hlo

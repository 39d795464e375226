// Literal: a constant value of any shape (every PrimitiveType, and tuples of literals).
// Elements are stored densely in row-major order as the element type's bytes (f16 and
// bf16 as their 16-bit patterns). Text form is XLA's: "1.5", "{1, 2, 3}", "{{1, 2}, {3, 4}}",
// "true", tuples "(1, {2, 3})".
//
//   Literal x = Literal::CreateR1<float>({1, 2, 3});
//   x.ToString();                        // "{1, 2, 3}"
//   x.GetAsDouble(2);                    // 3.0
//   auto y = Literal::Parse("{4, 5}", ShapeUtil::MakeShape(S32, {2}));
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "jx/compiler/hlo/shape.h"

namespace jx::hlo {

// IEEE half and bfloat16 conversions (round to nearest even).
float HalfToFloat(uint16_t bits);
uint16_t FloatToHalf(float value);
float BFloat16ToFloat(uint16_t bits);
uint16_t FloatToBFloat16(float value);

class Literal {
 public:
  Literal() = default;
  // Zero-filled literal of `shape` (tuple shapes get zero-filled elements).
  explicit Literal(const Shape& shape);

  template <typename T>
  static Literal CreateR0(T value) {
    Literal lit(ShapeUtil::MakeScalarShape(TypeOf<T>()));
    std::memcpy(lit.data_.data(), &value, sizeof(T));
    return lit;
  }
  template <typename T>
  static Literal CreateR1(absl::Span<const T> values) {
    Literal lit(ShapeUtil::MakeShape(TypeOf<T>(), {static_cast<int64_t>(values.size())}));
    if (!values.empty()) std::memcpy(lit.data_.data(), values.data(), values.size() * sizeof(T));
    return lit;
  }
  template <typename T>
  static Literal CreateR1(std::initializer_list<T> values) {
    return CreateR1<T>(absl::Span<const T>(values.begin(), values.size()));
  }
  // A scalar of any array type, converted from a double (integers truncate).
  static Literal CreateScalar(PrimitiveType type, double value);
  static Literal CreateTuple(std::vector<Literal> elements);

  const Shape& shape() const { return shape_; }
  int64_t element_count() const { return ShapeUtil::ElementsIn(shape_); }
  // Raw row-major bytes (arrays only).
  absl::Span<const uint8_t> untyped_data() const { return data_; }
  absl::Span<uint8_t> mutable_untyped_data() { return absl::MakeSpan(data_); }
  template <typename T>
  absl::Span<const T> data() const {
    return absl::Span<const T>(reinterpret_cast<const T*>(data_.data()),
                               data_.size() / sizeof(T));
  }
  const std::vector<Literal>& tuple_elements() const { return tuple_elements_; }

  // Element access by linear (row-major) index, converting through double / int64.
  double GetAsDouble(int64_t index) const;
  int64_t GetAsInt64(int64_t index) const;
  uint64_t GetAsUint64(int64_t index) const;
  bool GetAsBool(int64_t index) const { return GetAsUint64(index) != 0; }
  void SetFromDouble(int64_t index, double value);
  void SetFromInt64(int64_t index, int64_t value);
  void SetFromUint64(int64_t index, uint64_t value);

  // "1.5", "{1, 2, 3}", "{{1, 2}, {3, 4}}", "(1, {2})". Floats print shortest round-trip.
  std::string ToString() const;
  // Parses ToString's form for the given shape.
  static absl::StatusOr<Literal> Parse(std::string_view text, const Shape& shape);

  // Bitwise equality of shape (ignoring layout) and contents.
  friend bool operator==(const Literal& a, const Literal& b);

  template <typename T>
  static constexpr PrimitiveType TypeOf() {
    if constexpr (std::is_same_v<T, bool>) return PRED;
    else if constexpr (std::is_same_v<T, int8_t>) return S8;
    else if constexpr (std::is_same_v<T, int16_t>) return S16;
    else if constexpr (std::is_same_v<T, int32_t>) return S32;
    else if constexpr (std::is_same_v<T, int64_t>) return S64;
    else if constexpr (std::is_same_v<T, uint8_t>) return U8;
    else if constexpr (std::is_same_v<T, uint16_t>) return U16;
    else if constexpr (std::is_same_v<T, uint32_t>) return U32;
    else if constexpr (std::is_same_v<T, uint64_t>) return U64;
    else if constexpr (std::is_same_v<T, float>) return F32;
    else if constexpr (std::is_same_v<T, double>) return F64;
    else static_assert(sizeof(T) == 0, "no PrimitiveType for this C++ type");
  }

 private:
  Shape shape_;
  std::vector<uint8_t> data_;
  std::vector<Literal> tuple_elements_;
};

}  // namespace jx::hlo

// DType: the element types of jx arrays, and JAX's type-promotion lattice.
//
//   jx::DType d = jx::float32;
//   jx::dtype_name(d);                       // "float32"
//   jx::promote_types(jx::int8, jx::uint8);  // int16
//   // A C++ scalar is weakly typed: it takes the other operand's type where it can.
//   jx::PromoteWeak({jx::bfloat16, false}, {jx::float32, true});  // {bfloat16, false}
#pragma once

#include <cstdint>
#include <cstring>
#include <iosfwd>
#include <string_view>
#include <type_traits>

namespace jx {

enum class DType : uint8_t {
  kBool,
  kInt8,
  kInt16,
  kInt32,
  kInt64,
  kUInt8,
  kUInt16,
  kUInt32,
  kUInt64,
  kFloat16,
  kBFloat16,
  kFloat32,
  kFloat64,
};
inline constexpr int kNumDTypes = 13;

inline constexpr DType bool_ = DType::kBool;
inline constexpr DType int8 = DType::kInt8;
inline constexpr DType int16 = DType::kInt16;
inline constexpr DType int32 = DType::kInt32;
inline constexpr DType int64 = DType::kInt64;
inline constexpr DType uint8 = DType::kUInt8;
inline constexpr DType uint16 = DType::kUInt16;
inline constexpr DType uint32 = DType::kUInt32;
inline constexpr DType uint64 = DType::kUInt64;
inline constexpr DType float16 = DType::kFloat16;
inline constexpr DType bfloat16 = DType::kBFloat16;
inline constexpr DType float32 = DType::kFloat32;
inline constexpr DType float64 = DType::kFloat64;

// "float32", "bfloat16", ... (NumPy's names).
std::string_view dtype_name(DType d);
// "f32", "bf16", ... (the short names jaxprs and HLO print).
std::string_view dtype_short_name(DType d);
std::ostream& operator<<(std::ostream& os, DType d);

constexpr int64_t ItemSize(DType d) {
  switch (d) {
    case DType::kBool: case DType::kInt8: case DType::kUInt8: return 1;
    case DType::kInt16: case DType::kUInt16: case DType::kFloat16: case DType::kBFloat16: return 2;
    case DType::kInt32: case DType::kUInt32: case DType::kFloat32: return 4;
    case DType::kInt64: case DType::kUInt64: case DType::kFloat64: return 8;
  }
  return 0;
}
constexpr bool IsFloating(DType d) {
  return d == DType::kFloat16 || d == DType::kBFloat16 || d == DType::kFloat32 || d == DType::kFloat64;
}
constexpr bool IsSignedInt(DType d) {
  return d == DType::kInt8 || d == DType::kInt16 || d == DType::kInt32 || d == DType::kInt64;
}
constexpr bool IsUnsignedInt(DType d) {
  return d == DType::kUInt8 || d == DType::kUInt16 || d == DType::kUInt32 || d == DType::kUInt64;
}
constexpr bool IsInteger(DType d) { return IsSignedInt(d) || IsUnsignedInt(d); }
constexpr bool IsBool(DType d) { return d == DType::kBool; }

// JAX's type promotion (jax.numpy.promote_types), with weak types. A weak type stands for a
// C++ scalar: weak int is JAX's i*, weak float its f*. The result is weak only when it lands
// on a weak node of the lattice. 64-bit types never get demoted (no x64 flag in jx).
struct TypeAndWeak {
  DType dtype;
  bool weak;
  friend bool operator==(const TypeAndWeak&, const TypeAndWeak&) = default;
};
TypeAndWeak PromoteWeak(TypeAndWeak a, TypeAndWeak b);
DType promote_types(DType a, DType b);

// Scalar storage types for the 16-bit floats. Layout-compatible with Eigen::half and
// Eigen::bfloat16, which the kernels use; conversions round to nearest even.
struct float16_t {
  uint16_t bits = 0;
  float16_t() = default;
  explicit float16_t(float f);
  explicit operator float() const;
};
struct bfloat16_t {
  uint16_t bits = 0;
  bfloat16_t() = default;
  explicit bfloat16_t(float f);
  explicit operator float() const;
};

// The C++ type of each dtype, and back.
template <DType D> struct DTypeCpp;
template <> struct DTypeCpp<DType::kBool> { using type = bool; };
template <> struct DTypeCpp<DType::kInt8> { using type = int8_t; };
template <> struct DTypeCpp<DType::kInt16> { using type = int16_t; };
template <> struct DTypeCpp<DType::kInt32> { using type = int32_t; };
template <> struct DTypeCpp<DType::kInt64> { using type = int64_t; };
template <> struct DTypeCpp<DType::kUInt8> { using type = uint8_t; };
template <> struct DTypeCpp<DType::kUInt16> { using type = uint16_t; };
template <> struct DTypeCpp<DType::kUInt32> { using type = uint32_t; };
template <> struct DTypeCpp<DType::kUInt64> { using type = uint64_t; };
template <> struct DTypeCpp<DType::kFloat16> { using type = float16_t; };
template <> struct DTypeCpp<DType::kBFloat16> { using type = bfloat16_t; };
template <> struct DTypeCpp<DType::kFloat32> { using type = float; };
template <> struct DTypeCpp<DType::kFloat64> { using type = double; };

template <typename T>
constexpr DType DTypeOf() {
  if constexpr (std::is_same_v<T, bool>) return DType::kBool;
  else if constexpr (std::is_same_v<T, float16_t>) return DType::kFloat16;
  else if constexpr (std::is_same_v<T, bfloat16_t>) return DType::kBFloat16;
  else if constexpr (std::is_same_v<T, float>) return DType::kFloat32;
  else if constexpr (std::is_same_v<T, double>) return DType::kFloat64;
  else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
    static_assert(sizeof(T) <= 8);
    return sizeof(T) == 1 ? DType::kInt8 : sizeof(T) == 2 ? DType::kInt16
         : sizeof(T) == 4 ? DType::kInt32 : DType::kInt64;
  } else if constexpr (std::is_integral_v<T> && std::is_unsigned_v<T>) {
    return sizeof(T) == 1 ? DType::kUInt8 : sizeof(T) == 2 ? DType::kUInt16
         : sizeof(T) == 4 ? DType::kUInt32 : DType::kUInt64;
  } else {
    static_assert(sizeof(T) == 0, "no jx dtype for this C++ type");
  }
}

// Reads element i of a buffer of dtype d as a double / writes it from a double (slow path:
// printing, item(), tests).
double LoadAsDouble(DType d, const void* data, int64_t i);
void StoreFromDouble(DType d, void* data, int64_t i, double v);

}  // namespace jx

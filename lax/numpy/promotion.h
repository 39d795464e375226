// JAX's type promotion and NumPy broadcasting for jnp, in one place: every jnp function with
// several array operands computes its result type with result_type() (JAX's lattice through
// jx::PromoteWeak) and converts + broadcasts its operands with promote_args().
//
// jnp functions take ArrayLike operands (JAX's jax.typing.ArrayLike): a jx::Array or a C++
// scalar. A C++ scalar is weakly typed (int -> i*, float/double -> f*) and is converted
// straight to the promoted dtype, so `x_f64 * 0.1` multiplies by the double 0.1 exactly.
//
//   jnp::result_type({x_i8, 2.5});                      // float32 (a weak float wins over ints)
//   auto [a, b] = jnp::promote_args("add", x, 2.0);     // same dtype and shape
//   jnp::broadcast_shapes({3, 1}, {4});                  // {3, 4}
#pragma once

#include <array>
#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <string_view>
#include <type_traits>
#include <vector>

#include "jx/core/array.h"
#include "jx/core/axis.h"
#include "jx/core/dtype.h"

namespace jx::numpy {

// An Array or a C++ scalar, as a jnp function argument.
class ArrayLike {
 public:
  enum class Kind : uint8_t { kArray, kBool, kInt, kUInt, kFloat };

  ArrayLike(const Array& a) : kind_(Kind::kArray), array_(a) {}  // NOLINT: implicit by design
  ArrayLike(Array&& a) : kind_(Kind::kArray), array_(std::move(a)) {}  // NOLINT
  ArrayLike(bool v) : kind_(Kind::kBool), i_(v) {}  // NOLINT
  template <typename T>
    requires(std::is_arithmetic_v<T> && !std::is_same_v<T, bool>)
  ArrayLike(T v) {  // NOLINT
    if constexpr (std::is_floating_point_v<T>) {
      kind_ = Kind::kFloat;
      f_ = static_cast<double>(v);
    } else if constexpr (std::is_unsigned_v<T>) {
      kind_ = Kind::kUInt;
      u_ = static_cast<uint64_t>(v);
    } else {
      kind_ = Kind::kInt;
      i_ = static_cast<int64_t>(v);
    }
  }

  Kind kind() const { return kind_; }
  bool is_array() const { return kind_ == Kind::kArray; }
  bool is_scalar() const { return kind_ != Kind::kArray; }
  const Array& array() const { return array_; }
  // The dtype and weakness this operand enters promotion with.
  TypeAndWeak type() const;
  // The shape (scalars are 0-d).
  Shape shape() const;
  // As an Array of the given dtype (weak as asked): scalars are converted directly from their
  // C++ value, arrays through convert_element_type (a no-op when nothing changes).
  Array as(DType dtype, bool weak) const;
  // As an Array in its own type (a scalar becomes a weak 0-d array).
  Array to_array() const;
  // A C++ integer scalar's value (for integer_pow and friends).
  bool is_integer_scalar() const { return kind_ == Kind::kInt || kind_ == Kind::kUInt; }
  int64_t int_value() const { return kind_ == Kind::kUInt ? static_cast<int64_t>(u_) : i_; }
  double float_value() const;

 private:
  Kind kind_ = Kind::kArray;
  Array array_;
  int64_t i_ = 0;
  uint64_t u_ = 0;
  double f_ = 0;
};

// JAX's jnp.result_type over the operands' (dtype, weak) pairs.
TypeAndWeak result_type_weak(std::initializer_list<ArrayLike> args);
TypeAndWeak result_type_weak(const std::vector<ArrayLike>& args);
DType result_type(std::initializer_list<ArrayLike> args);
DType result_type(const std::vector<ArrayLike>& args);
// JAX's promote_types on two dtypes (no weak types).
using jx::promote_types;
// The inexact version (JAX's to_inexact_dtype with 32-bit default float): integers and bool
// promote with float32, so int32 -> float32 and int64 -> float32.
TypeAndWeak to_inexact(TypeAndWeak t);
// The dtype a reduction accumulates ints in (JAX's promote_integers): bool and narrow
// signed ints -> int32, narrow unsigned ints -> uint32; others unchanged.
DType promote_integers_dtype(DType d);

// NumPy broadcasting of shapes; throws ShapeError naming op and the shapes.
Shape broadcast_shapes(const Shape& a, const Shape& b, std::string_view op = "broadcast_shapes");
Shape broadcast_shapes(const std::vector<Shape>& shapes, std::string_view op = "broadcast_shapes");
// jnp.broadcast_to: NumPy broadcasting of x to shape (only prepends dims or stretches size-1 dims).
Array broadcast_to(const Array& x, const Shape& shape);

// Converts every operand to the promoted (dtype, weak) and broadcasts to the common shape.
// op names the calling function in errors.
std::vector<Array> promote_args(std::string_view op, const std::vector<ArrayLike>& args);
// The same with the result type made inexact (true_divide, sqrt, sin, ...).
std::vector<Array> promote_args_inexact(std::string_view op, const std::vector<ArrayLike>& args);
// Converts to the promoted dtype without broadcasting.
std::vector<Array> promote_dtypes(const std::vector<ArrayLike>& args);

template <typename... A>
std::array<Array, sizeof...(A)> promote_args(std::string_view op, const A&... args) {
  std::vector<Array> v = promote_args(op, std::vector<ArrayLike>{ArrayLike(args)...});
  std::array<Array, sizeof...(A)> out;
  for (size_t i = 0; i < sizeof...(A); ++i) out[i] = std::move(v[i]);
  return out;
}

namespace internal {
// Arrays of dtype from C++ values, each converted with C++ casts (floats saturate into ints),
// never through float32.
Array FromDoubles(const std::vector<double>& v, const Shape& shape, DType dtype, bool weak = false);
Array FromInt64s(const std::vector<int64_t>& v, const Shape& shape, DType dtype, bool weak = false);
Array ScalarOf(double v, DType dtype, bool weak = false);
Array ScalarOf(int64_t v, DType dtype, bool weak = false);
}  // namespace internal

// An axis argument (core/axis.h).
using jx::Axis;

}  // namespace jx::numpy

// jnp array creation: array/asarray from C++ data, zeros/ones/full/empty, *_like, arange,
// linspace, eye, identity, tri.
//
//   auto a = jnp::array({1.f, 2.f, 3.f});                    // f32[3]: keeps the C++ type
//   auto m = jnp::array({{1, 2}, {3, 4}});                   // i32[2,2]
//   auto v = jnp::array(std::vector<double>(6, 1.0), {2, 3}); // f64[2,3]
//   auto z = jnp::zeros({2, 3});                             // f32[2,3] (float32 default)
//   auto r = jnp::arange(5);                                 // i32[5]: [0 1 2 3 4]
//   auto f = jnp::arange(0.0, 1.0, 0.25);                    // f32[4]: [0. 0.25 0.5 0.75]
//   auto l = jnp::linspace(0.0, 1.0, 5);                     // f32[5]
//   auto i = jnp::eye(3);                                    // f32[3,3]
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <type_traits>
#include <vector>

#include "jx/core/array.h"
#include "jx/core/errors.h"
#include "jx/lax/numpy/promotion.h"

namespace jx::numpy {

namespace internal {
// Checks that `count` values fill `shape`; throws ShapeError naming "array" otherwise.
void CheckArraySize(int64_t count, const Shape& shape);
template <typename T>
constexpr bool kArrayElement = std::is_arithmetic_v<T> || std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t>;
}  // namespace internal

// An array holding a copy of C++ values; the dtype is the C++ element type's.
template <typename T>
  requires internal::kArrayElement<T>
Array array(const std::vector<T>& values, const Shape& shape) {
  internal::CheckArraySize(static_cast<int64_t>(values.size()), shape);
  if constexpr (std::is_same_v<T, bool>) {  // std::vector<bool> is bit-packed
    auto flags = std::make_unique<bool[]>(values.size() + 1);
    for (size_t i = 0; i < values.size(); ++i) flags[i] = values[i];
    return Array::FromData(flags.get(), shape, bool_);
  } else {
    return Array::FromData(values.data(), shape, DTypeOf<T>());
  }
}
template <typename T>
  requires internal::kArrayElement<T>
Array array(const std::vector<T>& values) {
  return array(values, Shape{static_cast<int64_t>(values.size())});
}
template <typename T>
  requires internal::kArrayElement<T>
Array array(std::initializer_list<T> values) {
  return array(std::vector<T>(values));
}
// Nested lists give 2-D arrays; rows must have equal lengths.
template <typename T>
  requires internal::kArrayElement<T>
Array array(std::initializer_list<std::initializer_list<T>> rows) {
  std::vector<T> flat;
  const int64_t cols = rows.size() ? static_cast<int64_t>(rows.begin()->size()) : 0;
  for (const auto& row : rows) {
    if (static_cast<int64_t>(row.size()) != cols) {
      ThrowOpError<ShapeError>("array", "setting an array element with a sequence: rows have lengths ", cols,
                               " and ", row.size());
    }
    flat.insert(flat.end(), row.begin(), row.end());
  }
  return array(flat, Shape{static_cast<int64_t>(rows.size()), cols});
}
// A 0-d array of the C++ scalar's type (strong; compare asarray).
template <typename T>
  requires internal::kArrayElement<T>
Array array(T value) {
  return Array::FromData(&value, Shape{}, DTypeOf<T>());
}
// A copy of x (converted to dtype if given).
Array array(const Array& x, std::optional<DType> dtype = std::nullopt);

// x itself when it already has the dtype; C++ scalars become weakly typed 0-d arrays, as in
// JAX (jnp.asarray(2) is weak int32).
Array asarray(const ArrayLike& x, std::optional<DType> dtype = std::nullopt);

Array zeros(const Shape& shape, DType dtype = float32);
Array ones(const Shape& shape, DType dtype = float32);
// JAX's empty returns zeros (XLA has no uninitialized buffers).
Array empty(const Shape& shape, DType dtype = float32);
// fill_value's dtype unless dtype is given; a C++ scalar fill gives a weakly typed result.
Array full(const Shape& shape, const ArrayLike& fill_value, std::optional<DType> dtype = std::nullopt);
Array zeros_like(const Array& x, std::optional<DType> dtype = std::nullopt);
Array ones_like(const Array& x, std::optional<DType> dtype = std::nullopt);
Array empty_like(const Array& x, std::optional<DType> dtype = std::nullopt);
Array full_like(const Array& x, const ArrayLike& fill_value, std::optional<DType> dtype = std::nullopt);

namespace internal {
Array ArangeInt(int64_t start, int64_t stop, int64_t step, DType dtype);
Array ArangeFloat(double start, double stop, double step, DType dtype);
}  // namespace internal

// arange(stop), arange(start, stop[, step]): integers give int32 and floats float32 unless
// dtype is given, as JAX with its default 32-bit types.
template <typename A, typename B, typename C>
  requires(std::is_arithmetic_v<A> && std::is_arithmetic_v<B> && std::is_arithmetic_v<C>)
Array arange(A start, B stop, C step, std::optional<DType> dtype = std::nullopt) {
  constexpr bool kInts = std::is_integral_v<A> && std::is_integral_v<B> && std::is_integral_v<C>;
  const DType d = dtype.value_or(kInts ? int32 : float32);
  if (kInts && !IsFloating(d)) {
    return internal::ArangeInt(static_cast<int64_t>(start), static_cast<int64_t>(stop), static_cast<int64_t>(step), d);
  }
  return internal::ArangeFloat(static_cast<double>(start), static_cast<double>(stop), static_cast<double>(step), d);
}
template <typename A, typename B>
  requires(std::is_arithmetic_v<A> && std::is_arithmetic_v<B>)
Array arange(A start, B stop, std::optional<DType> dtype = std::nullopt) {
  return arange(start, stop, 1, dtype);
}
template <typename A>
  requires std::is_arithmetic_v<A>
Array arange(A stop, std::optional<DType> dtype = std::nullopt) {
  return arange(A{0}, stop, 1, dtype);
}

// num evenly spaced values over [start, stop] (or [start, stop) without endpoint).
Array linspace(double start, double stop, int64_t num = 50, bool endpoint = true, DType dtype = float32);
// N x M (M defaults to N) with ones on the k-th diagonal.
Array eye(int64_t n, std::optional<int64_t> m = std::nullopt, int64_t k = 0, DType dtype = float32);
Array identity(int64_t n, DType dtype = float32);
// Ones at and below the k-th diagonal.
Array tri(int64_t n, std::optional<int64_t> m = std::nullopt, int64_t k = 0, DType dtype = float32);

}  // namespace jx::numpy

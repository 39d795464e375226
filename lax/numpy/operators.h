// Array operators, in namespace jx so argument-dependent lookup finds them. They are the jnp
// functions (NumPy broadcasting, JAX promotion): + add, - subtract, * multiply, / true_divide,
// % remainder (Python's sign rule), unary - negative, comparisons give bool arrays, & | ^ ~
// bitwise (logical on bool), << >> shifts. A C++ scalar operand is weakly typed and is
// converted directly to the result dtype: `x_f64 * 0.1` multiplies by the double 0.1, and
// `x_bf16 * 2.0` stays bfloat16. `x += y` rebinds x to x + y (arrays are immutable).
//
//   Array y = 2.0 * x + 1;            // f32 stays f32
//   Array mask = (x > 0.0) & (x < 1.0);
//   Array r = jnp::arange(10) % 3;    // i32
#pragma once

#include "jx/core/array.h"
#include "jx/lax/numpy/math.h"
#include "jx/lax/numpy/promotion.h"

namespace jx {

#define JX_DECLARE_BINARY_OPERATOR(OP, FN)                                                  \
  Array operator OP(const Array& x, const Array& y);                                        \
  template <WeakScalar T>                                                                   \
  Array operator OP(const Array& x, T y) {                                                  \
    return numpy::FN(x, y);                                                                 \
  }                                                                                         \
  template <WeakScalar T>                                                                   \
  Array operator OP(T x, const Array& y) {                                                  \
    return numpy::FN(x, y);                                                                 \
  }

JX_DECLARE_BINARY_OPERATOR(+, add)
JX_DECLARE_BINARY_OPERATOR(-, subtract)
JX_DECLARE_BINARY_OPERATOR(*, multiply)
JX_DECLARE_BINARY_OPERATOR(/, true_divide)
JX_DECLARE_BINARY_OPERATOR(%, remainder)
JX_DECLARE_BINARY_OPERATOR(==, equal)
JX_DECLARE_BINARY_OPERATOR(!=, not_equal)
JX_DECLARE_BINARY_OPERATOR(<, less)
JX_DECLARE_BINARY_OPERATOR(<=, less_equal)
JX_DECLARE_BINARY_OPERATOR(>, greater)
JX_DECLARE_BINARY_OPERATOR(>=, greater_equal)
JX_DECLARE_BINARY_OPERATOR(&, bitwise_and)
JX_DECLARE_BINARY_OPERATOR(|, bitwise_or)
JX_DECLARE_BINARY_OPERATOR(^, bitwise_xor)
JX_DECLARE_BINARY_OPERATOR(<<, left_shift)
JX_DECLARE_BINARY_OPERATOR(>>, right_shift)
#undef JX_DECLARE_BINARY_OPERATOR

Array operator-(const Array& x);
Array operator+(const Array& x);
Array operator~(const Array& x);

Array& operator+=(Array& x, const numpy::ArrayLike& y);
Array& operator-=(Array& x, const numpy::ArrayLike& y);
Array& operator*=(Array& x, const numpy::ArrayLike& y);
Array& operator/=(Array& x, const numpy::ArrayLike& y);
Array& operator%=(Array& x, const numpy::ArrayLike& y);
Array& operator&=(Array& x, const numpy::ArrayLike& y);
Array& operator|=(Array& x, const numpy::ArrayLike& y);
Array& operator^=(Array& x, const numpy::ArrayLike& y);

}  // namespace jx

// Unary elementwise lax primitives (JAX's lax names). Float-only ops reject integer inputs
// with a TypeError naming the op; 16-bit floats compute in f32 and round once. neg, sign,
// abs, square and integer_pow also take integers (wrapping: abs(INT_MIN) == INT_MIN); sign
// keeps +-0 and NaN; integer_pow with y < 0 needs a float dtype.
//
//   lax::sin(x); lax::integer_pow(x, 3); lax::logistic(x); lax::bitwise_not(mask);
#pragma once

#include <string_view>

#include "jx/core/array.h"

namespace jx::lax {

Array neg(const Array& x);
Array sign(const Array& x);
Array floor(const Array& x);
Array ceil(const Array& x);
// rounding_method 0: away from zero (JAX's default), 1: to nearest even.
Array round(const Array& x, int rounding_method = 0);
Array is_finite(const Array& x);
Array exp(const Array& x);
Array exp2(const Array& x);
Array log(const Array& x);
Array log1p(const Array& x);
Array expm1(const Array& x);
Array tanh(const Array& x);
Array logistic(const Array& x);
Array sin(const Array& x);
Array cos(const Array& x);
Array tan(const Array& x);
Array asin(const Array& x);
Array acos(const Array& x);
Array atan(const Array& x);
Array sinh(const Array& x);
Array cosh(const Array& x);
Array asinh(const Array& x);
Array acosh(const Array& x);
Array atanh(const Array& x);
Array sqrt(const Array& x);
Array rsqrt(const Array& x);
Array cbrt(const Array& x);
Array abs(const Array& x);
Array erf(const Array& x);
Array erfc(const Array& x);
Array erf_inv(const Array& x);
Array lgamma(const Array& x);
Array digamma(const Array& x);
Array integer_pow(const Array& x, int64_t y);
Array square(const Array& x);
Array reciprocal(const Array& x);
Array bitwise_not(const Array& x);  // primitive "not": logical on bool, bitwise on ints

}  // namespace jx::lax

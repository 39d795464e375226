// jnp elementwise math with NumPy broadcasting and JAX type promotion. Every operand is an
// ArrayLike (an Array or a weakly typed C++ scalar), so `jnp::multiply(x, 2.0)` keeps x's float
// dtype and `jnp::add(i8, 1)` stays int8. Functions defined on reals (sqrt, sin, true_divide,
// ...) promote integer inputs to float32, as JAX does.
//
//   auto y = jnp::where(x > 0.0, jnp::sqrt(x), 0.0);
//   auto z = jnp::clip(x, -1.0, 1.0);
//   jnp::true_divide(jnp::arange(4), 2);          // f32: [0. 0.5 1. 1.5]
//   jnp::floor_divide(jnp::array({-7, 7}), 2);    // i32: [-4 3] (floor, like NumPy)
//   jnp::allclose(a, b, /*rtol=*/1e-5, /*atol=*/1e-8);
#pragma once

#include <optional>

#include "jx/core/array.h"
#include "jx/lax/numpy/promotion.h"

namespace jx::numpy {

// Arithmetic.
Array add(const ArrayLike& x, const ArrayLike& y);
Array subtract(const ArrayLike& x, const ArrayLike& y);
Array multiply(const ArrayLike& x, const ArrayLike& y);
Array divide(const ArrayLike& x, const ArrayLike& y);       // true division
Array true_divide(const ArrayLike& x, const ArrayLike& y);  // ints give float32
Array floor_divide(const ArrayLike& x, const ArrayLike& y);
Array remainder(const ArrayLike& x, const ArrayLike& y);    // sign of the divisor (Python %)
Array mod(const ArrayLike& x, const ArrayLike& y);          // = remainder
Array fmod(const ArrayLike& x, const ArrayLike& y);         // sign of the dividend (C fmod)
Array power(const ArrayLike& x, const ArrayLike& y);        // C++ integer exponents use integer_pow
Array pow(const ArrayLike& x, const ArrayLike& y);
Array negative(const ArrayLike& x);
Array positive(const ArrayLike& x);
Array abs(const ArrayLike& x);
Array absolute(const ArrayLike& x);
Array sign(const ArrayLike& x);
Array square(const ArrayLike& x);
Array reciprocal(const ArrayLike& x);
Array maximum(const ArrayLike& x, const ArrayLike& y);  // NaN-propagating
Array minimum(const ArrayLike& x, const ArrayLike& y);
Array fmax(const ArrayLike& x, const ArrayLike& y);     // ignores NaN
Array fmin(const ArrayLike& x, const ArrayLike& y);

// Transcendental (integer inputs compute in float32).
Array sqrt(const ArrayLike& x);
Array rsqrt(const ArrayLike& x);
Array cbrt(const ArrayLike& x);
Array exp(const ArrayLike& x);
Array exp2(const ArrayLike& x);
Array expm1(const ArrayLike& x);
Array log(const ArrayLike& x);
Array log2(const ArrayLike& x);
Array log10(const ArrayLike& x);
Array log1p(const ArrayLike& x);
Array sin(const ArrayLike& x);
Array cos(const ArrayLike& x);
Array tan(const ArrayLike& x);
Array arcsin(const ArrayLike& x);
Array arccos(const ArrayLike& x);
Array arctan(const ArrayLike& x);
Array arctan2(const ArrayLike& y, const ArrayLike& x);
Array sinh(const ArrayLike& x);
Array cosh(const ArrayLike& x);
Array tanh(const ArrayLike& x);
Array arcsinh(const ArrayLike& x);
Array arccosh(const ArrayLike& x);
Array arctanh(const ArrayLike& x);
Array hypot(const ArrayLike& x, const ArrayLike& y);
Array logaddexp(const ArrayLike& x, const ArrayLike& y);
Array deg2rad(const ArrayLike& x);
Array rad2deg(const ArrayLike& x);
Array radians(const ArrayLike& x);
Array degrees(const ArrayLike& x);

// Rounding (identity on integers).
Array floor(const ArrayLike& x);
Array ceil(const ArrayLike& x);
Array trunc(const ArrayLike& x);
Array rint(const ArrayLike& x);                         // half to even
Array round(const ArrayLike& x, int decimals = 0);      // half to even, like NumPy
Array around(const ArrayLike& x, int decimals = 0);

// Predicates (bool results).
Array isfinite(const ArrayLike& x);
Array isnan(const ArrayLike& x);
Array isinf(const ArrayLike& x);
Array isposinf(const ArrayLike& x);
Array isneginf(const ArrayLike& x);
Array signbit(const ArrayLike& x);
Array equal(const ArrayLike& x, const ArrayLike& y);
Array not_equal(const ArrayLike& x, const ArrayLike& y);
Array less(const ArrayLike& x, const ArrayLike& y);
Array less_equal(const ArrayLike& x, const ArrayLike& y);
Array greater(const ArrayLike& x, const ArrayLike& y);
Array greater_equal(const ArrayLike& x, const ArrayLike& y);
// |x - y| <= atol + rtol * |y|, elementwise; NaNs equal only with equal_nan.
Array isclose(const ArrayLike& x, const ArrayLike& y, double rtol = 1e-05, double atol = 1e-08, bool equal_nan = false);
// isclose everywhere (a host bool; reads the values, so not traceable).
bool allclose(const ArrayLike& x, const ArrayLike& y, double rtol = 1e-05, double atol = 1e-08, bool equal_nan = false);
bool array_equal(const ArrayLike& x, const ArrayLike& y, bool equal_nan = false);

// Logical (inputs are cast to bool: nonzero is true) and bitwise (integers and bool).
Array logical_and(const ArrayLike& x, const ArrayLike& y);
Array logical_or(const ArrayLike& x, const ArrayLike& y);
Array logical_xor(const ArrayLike& x, const ArrayLike& y);
Array logical_not(const ArrayLike& x);
Array bitwise_and(const ArrayLike& x, const ArrayLike& y);
Array bitwise_or(const ArrayLike& x, const ArrayLike& y);
Array bitwise_xor(const ArrayLike& x, const ArrayLike& y);
Array bitwise_not(const ArrayLike& x);
Array invert(const ArrayLike& x);
Array left_shift(const ArrayLike& x, const ArrayLike& y);
Array right_shift(const ArrayLike& x, const ArrayLike& y);  // arithmetic for signed types

// Selection.
// where(condition, x, y): x where condition (nonzero) else y, broadcast together.
Array where(const ArrayLike& condition, const ArrayLike& x, const ArrayLike& y);
// clip(x, lo, hi): either bound may be absent (std::nullopt).
Array clip(const ArrayLike& x, const std::optional<ArrayLike>& lo, const std::optional<ArrayLike>& hi);
// nan -> nan, +inf -> largest finite, -inf -> lowest finite (or the given values).
Array nan_to_num(const ArrayLike& x, double nan = 0.0, std::optional<double> posinf = std::nullopt,
                 std::optional<double> neginf = std::nullopt);

}  // namespace jx::numpy

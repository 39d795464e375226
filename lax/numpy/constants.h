// jnp's constants (jnp.pi, jnp.e, jnp.inf, jnp.nan, jnp.euler_gamma, jnp.newaxis), as NumPy
// defines them (https://numpy.org/doc/stable/reference/constants.html). They are C++ doubles,
// so in arithmetic with an Array they are weakly typed like JAX's Python floats:
// `x_f32 * jnp::pi` stays float32.
//
//   auto area = jnp::pi * r * r;
//   auto y = jnp::where(mask, x, jnp::nan);
//   auto col = x[{jx::slice(), jnp::newaxis}];
#pragma once

#include <limits>

#include "jx/core/array.h"

namespace jx::numpy {

inline constexpr double pi = 3.141592653589793238462643383279502884;
inline constexpr double e = 2.718281828459045235360287471352662498;
inline constexpr double euler_gamma = 0.577215664901532860606512090082402431;
inline constexpr double inf = std::numeric_limits<double>::infinity();
inline constexpr double nan = std::numeric_limits<double>::quiet_NaN();
using ::jx::newaxis;

}  // namespace jx::numpy

// Binary elementwise lax primitives and comparisons. Like JAX's lax, operands must have equal
// shapes and dtypes; a weakly typed operand (a C++ scalar) is first converted to the other
// operand's dtype and broadcast. jnp adds NumPy broadcasting and promotion on top.
//
//   lax::add(x, y); lax::atan2(y, x); lax::shift_left(i, 3); lax::lt(x, 0.0);
#pragma once

#include "jx/core/array.h"

namespace jx::lax {

Array add(const Array& x, const Array& y);
Array sub(const Array& x, const Array& y);
Array mul(const Array& x, const Array& y);
Array div(const Array& x, const Array& y);   // integer division rounds toward zero (C/XLA)
Array rem(const Array& x, const Array& y);   // sign of the dividend (C fmod)
Array pow(const Array& x, const Array& y);
Array max(const Array& x, const Array& y);   // NaN-propagating
Array min(const Array& x, const Array& y);
Array atan2(const Array& x, const Array& y);
Array bitwise_and(const Array& x, const Array& y);  // primitive "and"
Array bitwise_or(const Array& x, const Array& y);   // primitive "or"
Array bitwise_xor(const Array& x, const Array& y);  // primitive "xor"
Array shift_left(const Array& x, const Array& y);
Array shift_right_logical(const Array& x, const Array& y);
Array shift_right_arithmetic(const Array& x, const Array& y);
Array nextafter(const Array& x, const Array& y);

Array eq(const Array& x, const Array& y);
Array ne(const Array& x, const Array& y);
Array lt(const Array& x, const Array& y);
Array le(const Array& x, const Array& y);
Array gt(const Array& x, const Array& y);
Array ge(const Array& x, const Array& y);

// select_n(which, cases): which is bool (2 cases) or int32; picks cases[which] elementwise.
Array select_n(const Array& which, const std::vector<Array>& cases);
// select(pred, on_true, on_false) == select_n(pred, {on_false, on_true}).
Array select(const Array& pred, const Array& on_true, const Array& on_false);
// clamp(lo, x, hi): lo and hi may be scalars.
Array clamp(const Array& lo, const Array& x, const Array& hi);

}  // namespace jx::lax

// Binary elementwise lax primitives and comparisons. Like JAX's lax, operands must have equal
// dtypes and equal shapes, except that a 0-d operand broadcasts against a shaped one; a weakly
// typed operand (a C++ scalar) is first converted to the other operand's dtype (a weak float
// against an integer array stays a TypeError). jnp adds NumPy broadcasting and promotion on top.
//
// Integer semantics are XLA's: arithmetic wraps; x / 0 = -1 (all ones), x % 0 = x,
// INT_MIN / -1 = INT_MIN; shift amounts are read as unsigned and saturate at the bit width
// (shift_left, shift_right_logical -> 0; shift_right_arithmetic -> the sign fill).
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
// Float base: y of the same dtype or any integer dtype. Integer base and exponent: XLA's
// square-and-multiply over the exponent's low 6 bits; y < 0 gives 1 for x == 1, else 0.
Array pow(const Array& x, const Array& y);
Array max(const Array& x, const Array& y);   // NaN-propagating; max(-0, +0) = +0; or on bool
Array min(const Array& x, const Array& y);   // NaN-propagating; min(-0, +0) = -0; and on bool
Array atan2(const Array& x, const Array& y);
Array bitwise_and(const Array& x, const Array& y);  // primitive "and"
Array bitwise_or(const Array& x, const Array& y);   // primitive "or"
Array bitwise_xor(const Array& x, const Array& y);  // primitive "xor"
Array shift_left(const Array& x, const Array& y);
Array shift_right_logical(const Array& x, const Array& y);
Array shift_right_arithmetic(const Array& x, const Array& y);
Array nextafter(const Array& x, const Array& y);  // steps by the dtype's own ulp (also f16/bf16)

Array eq(const Array& x, const Array& y);
Array ne(const Array& x, const Array& y);
Array lt(const Array& x, const Array& y);
Array le(const Array& x, const Array& y);
Array gt(const Array& x, const Array& y);
Array ge(const Array& x, const Array& y);

// select_n(which, cases): which is bool (at most 2 cases) or integer, a scalar or of the
// cases' shape; picks cases[which] elementwise (out-of-range `which` clamps to the ends).
Array select_n(const Array& which, const std::vector<Array>& cases);
// select(pred, on_true, on_false) == select_n(pred, {on_false, on_true}).
Array select(const Array& pred, const Array& on_true, const Array& on_false);
// clamp(lo, x, hi) = min(hi, max(lo, x)) (NaN-propagating); lo and hi may be scalars.
Array clamp(const Array& lo, const Array& x, const Array& hi);

}  // namespace jx::lax

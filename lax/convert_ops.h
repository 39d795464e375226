// Type conversion primitives.
//
//   lax::convert_element_type(x, jx::int32);    // float->int truncates toward zero
//   lax::bitcast_convert_type(x, jx::uint32);   // reinterpret bits (same width)
//   lax::reduce_precision(x, 8, 7);             // round f32 to bf16 precision, keep f32
//
// convert_element_type follows XLA on CPU: float -> int saturates out-of-range values and maps
// NaN to 0; -> bool is x != 0; int -> int wraps; converting to the operand's own dtype and
// weak type returns the operand. bitcast_convert_type between different widths changes the
// last dimension: narrowing appends one of size (from bytes / to bytes), widening consumes a
// last dimension of that size; bool is not bitcastable. reduce_precision is XLA's
// ReducePrecision: round the mantissa to nearest even, overflow to inf, flush values below the
// reduced exponent range to zero.
#pragma once

#include "jx/core/array.h"

namespace jx::lax {

Array convert_element_type(const Array& x, DType new_dtype, bool weak_type = false);
Array bitcast_convert_type(const Array& x, DType new_dtype);
Array reduce_precision(const Array& x, int exponent_bits, int mantissa_bits);

}  // namespace jx::lax

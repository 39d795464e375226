// Type conversion primitives.
//
//   lax::convert_element_type(x, jx::int32);    // float->int truncates toward zero
//   lax::bitcast_convert_type(x, jx::uint32);   // reinterpret bits (same width)
//   lax::reduce_precision(x, 8, 7);             // round f32 to bf16 precision, keep f32
#pragma once

#include "jx/core/array.h"

namespace jx::lax {

Array convert_element_type(const Array& x, DType new_dtype, bool weak_type = false);
Array bitcast_convert_type(const Array& x, DType new_dtype);
Array reduce_precision(const Array& x, int exponent_bits, int mantissa_bits);

}  // namespace jx::lax

// Conversions between jx values and HLO values: DType <-> PrimitiveType (bool -> pred,
// int8..uint64 -> s8..u64, float16/bfloat16/float32/float64 -> f16/bf16/f32/f64) and
// Array <-> hlo::Literal (row-major bytes, copied; 16-bit floats as their bit patterns).
//
//   hlo::Literal lit = ArrayToLiteral(jnp::array({1.f, 2.f}));   // f32[2] {1, 2}
//   Array back = LiteralToArray(lit);
#pragma once

#include "absl/status/statusor.h"
#include "jx/compiler/hlo/literal.h"
#include "jx/compiler/hlo/shape.h"
#include "jx/core/array.h"

namespace jx {

hlo::PrimitiveType PrimitiveTypeOf(DType dtype);
// The dtype of an array element type; InvalidArgument for tuple/token/invalid.
absl::StatusOr<DType> DTypeOf(hlo::PrimitiveType type);

// The HLO shape of an aval (default layout); weak types lower as their dtype.
hlo::Shape ShapeOfAval(const ShapedArray& aval);

// The array must be concrete (a tracer throws ConcretizationError).
hlo::Literal ArrayToLiteral(const Array& array);
// The literal must be an array (not a tuple); throws InternalError otherwise.
Array LiteralToArray(const hlo::Literal& literal);

}  // namespace jx

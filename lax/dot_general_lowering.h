// Helpers shared by the lowering rules of the contractions (dot_general -> dot,
// conv_general_dilated -> convolution), which both multiply two operands into one result type.
#pragma once

#include <utility>

#include "jx/compiler/lower/lower_ops.h"

namespace jx::lax::internal {

// Both operands in one type: their own when they agree, else the result type `out`.
std::pair<lower::XOp, lower::XOp> ContractionOperands(LowerContext& ctx, hlo::PrimitiveType out);
// The equation's `precision` param as the HLO operand_precision (None: both default), which a
// TPU target reads to choose its bf16 passes; the CPU ignores it.
hlo::PrecisionConfig ContractionPrecision(const ParamMap& params);

}  // namespace jx::lax::internal

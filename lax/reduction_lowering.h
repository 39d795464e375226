// Helpers shared by the lowering rules of the reduction families (reductions, cumulative ops,
// windowed reductions): the identity and the scalar reducer of a reduction opcode, and the
// per-platform accumulation of float sums and products (the CPU's generic rules accumulate
// in f64, the "tpu" rules in f32).
#pragma once

#include "jx/compiler/lower/lower_ops.h"
#include "jx/core/registry.h"

namespace jx::lax::internal {

// How a platform accumulates float sums and products: the one lowering difference between
// the CPU and a TPU in these families.
enum class FloatAccumulation {
  // The CPU (the generic rule): f16, bf16 and f32 accumulate in f64 and round once, as the
  // eager kernels do (lax/kernels/reducer.h), so a long or cancelling f32 sum agrees with
  // eager execution.
  kF64,
  // A TPU ("tpu" rule): no f64 hardware, so f32 sums in f32; 16-bit floats accumulate in f32,
  // the VPU's width.
  kF32,
};

// The type a float sum or product over type t accumulates in (t itself for other types).
hlo::PrimitiveType AccumulationType(hlo::PrimitiveType t, FloatAccumulation acc);

// Registers make_rule(kF64) as p's lowering and make_rule(kF32) as its "tpu" lowering.
template <typename MakeRule>
void DefinePerPlatform(Registry& r, Primitive p, MakeRule make_rule) {
  PrimitiveRules& rules = r.Define(p);
  rules.lower = make_rule(FloatAccumulation::kF64);
  rules.platform_lower.emplace_back("tpu", make_rule(FloatAccumulation::kF32));
}

// The identity of the reduction op over type.
lower::XOp InitValue(hlo::HloBuilder& b, hlo::HloOpcode op, hlo::PrimitiveType type);
// (a, b) -> op(a, b) over scalars of type: a reduce's to_apply (throws InternalError).
hlo::HloComputation* Reducer(LowerContext& ctx, hlo::HloOpcode op, hlo::PrimitiveType type);

}  // namespace jx::lax::internal

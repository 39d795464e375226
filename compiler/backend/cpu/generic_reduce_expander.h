// Internal to the CPU backend's pipeline: a reduce whose reducer has no native kernel (a
// generic lax::reduce computation: logaddexp, a (value, index) pick other than argmax's, a
// variadic reducer of three operands, ...) is rewritten into a tree of elementwise code, so it
// runs natively instead of through the evaluator fallback. The reduced dims are flattened to
// the columns of a [kept, reduced] matrix; log2(n) rounds each combine the first half of the
// columns with the second by the reducer's instructions applied to whole vectors (a scalar
// constant is broadcast), an odd last column folds into the accumulators, which start as the
// init values and take the last column at the end. XLA's contract (an associative and
// commutative reducer) makes the order free; it is the order eager lax::reduce uses, so jit
// and eager agree bit for bit.
//
// Reduces a native kernel handles (one operand with a single add/multiply/max/min/and/or
// reducer, argmax/argmin's pairs) are left alone; so are reducers holding anything but
// elementwise instructions, constants and the root tuple (they stay on the fallback, which
// kernel selection logs).
//
// A reduce that is a fusion's root (a pipeline that fused before this pass, as the TPU one
// does before its host half compiles) is expanded inside the fused computation: the fusion
// then holds slices, transposes and elementwise code, which kernel selection runs as a loop
// or op by op, natively.
#pragma once

#include <string_view>

#include "jx/compiler/hlo/hlo_pass.h"

namespace jx::cpu {

class GenericReduceExpander : public hlo::HloPass {
 public:
  std::string_view name() const override { return "generic-reduce-expander"; }
  absl::StatusOr<bool> Run(hlo::HloModule* module) override;
};

}  // namespace jx::cpu

// HloConstantFolding: replaces an instruction whose operands are all constants by the
// constant the reference evaluator (hlo_evaluator.h) computes for it, as XLA's
// HloConstantFolding does. Chains fold in one run (operands are visited first).
// Left alone, so the module does not bloat or change behaviour:
//   - parameters, constants, tuples (tuple constants help no backend), and any instruction
//     whose result is not an array;
//   - broadcast and iota (they only turn a small description into a large constant);
//   - instructions with side effects or randomness, including inside called computations
//     (side-effecting custom-calls, rng-bit-generator), and custom-calls in general;
//   - results or operands over kMaxElements elements;
//   - anything the evaluator cannot evaluate (e.g. a while loop that runs at least one
//     iteration: loops are not unrolled at compile time);
//   - dead instructions (DCE removes those) and fusion computations.
// Idempotent: a second Run finds nothing and returns false.
//
//   HloConstantFolding folding;
//   HLO_ASSIGN_OR_RETURN(bool changed, folding.Run(module));
#pragma once

#include <cstdint>
#include <string_view>

#include "jx/compiler/hlo/hlo_computation.h"
#include "jx/compiler/hlo/hlo_pass.h"

namespace jx::hlo {

class HloConstantFolding : public HloPass {
 public:
  // Results (and operand totals) above this many elements are not folded.
  static constexpr int64_t kMaxElements = int64_t{1} << 20;

  std::string_view name() const override { return "constant-folding"; }
  absl::StatusOr<bool> Run(HloModule* module) override;

  static absl::StatusOr<bool> RunOnComputation(HloComputation* computation);
};

}  // namespace jx::hlo

// HloCSE: common subexpression elimination. Within each computation, an instruction that
// is identical to an earlier one (same opcode, shape, attributes, called computations and
// the same operands; constants with equal literals) is replaced by it. Side-effecting
// custom-calls and random-number generators are never merged; parameters never are (each
// is its own input).
//
// Called computations are compared by identity: two reduces merge only when they call the
// same to_apply. Structurally identical but distinct computations are left alone (a
// computation-level dedup would be a separate pass).
//
//   HloCSE cse;
//   HLO_ASSIGN_OR_RETURN(bool changed, cse.Run(module));
#pragma once

#include <string_view>

#include "jx/compiler/hlo/hlo_computation.h"
#include "jx/compiler/hlo/hlo_pass.h"

namespace jx::hlo {

class HloCSE : public HloPass {
 public:
  std::string_view name() const override { return "cse"; }
  absl::StatusOr<bool> Run(HloModule* module) override;
  // One run leaves no two identical instructions: duplicates are found in post order, with
  // their operands already merged.
  bool LastRunReachedFixedPoint() const override { return true; }

  static absl::StatusOr<bool> RunOnComputation(HloComputation* computation);
};

}  // namespace jx::hlo

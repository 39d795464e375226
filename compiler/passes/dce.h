// HloDCE: dead code elimination. Removes instructions nothing uses (keeping parameters,
// roots and side-effecting custom-calls) and computations unreachable from the entry.
// Idempotent: a second Run finds nothing and returns false.
//
//   HloDCE dce;
//   HLO_ASSIGN_OR_RETURN(bool changed, dce.Run(module));
#pragma once

#include <string_view>
#include <vector>

#include "jx/compiler/hlo/hlo_computation.h"
#include "jx/compiler/hlo/hlo_pass.h"

namespace jx::hlo {

class HloDCE : public HloPass {
 public:
  std::string_view name() const override { return "dce"; }
  absl::StatusOr<bool> Run(HloModule* module) override;
  bool LastRunReachedFixedPoint() const override { return true; }  // idempotent (above)

  // Dead-instruction removal for one computation; with `callees`, appends the computations
  // the instructions left call.
  static absl::StatusOr<bool> RunOnComputation(HloComputation* computation,
                                               std::vector<HloComputation*>* callees = nullptr);
};

}  // namespace jx::hlo

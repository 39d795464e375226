// MaskedGatherFusion, a CPU backend pass. jnp.take and gathers in FILL_OR_DROP mode lower to
// a clamping gather followed by a loop fusion that selects the fill value where the start
// index was out of bounds:
//   g = gather(operand, indices)
//   y = fusion(..., g), kind=kLoop: select(broadcast(mask(...)), g, broadcast(fill))
// Run as written, the gathered rows are written to memory and then read and written again.
// This pass moves the gather into the select's fusion (kind kCustom), which kernel selection
// runs as one gather pass (the kernel library's, as eager runs it) that then writes the fill
// value over the rows whose mask is false; the mask, a small pred array over the gather's
// batch positions, is computed by a tile program first. Any mask expression is kept as
// written, so the result is the unfused program's, bit for bit.
//
//   HLO_ASSIGN_OR_RETURN(bool changed, MaskedGatherFusion().Run(module.get()));
//   std::optional<MaskedGather> m = AsMaskedGather(*fusion);
#pragma once

#include <optional>
#include <string_view>

#include "absl/status/statusor.h"
#include "jx/compiler/hlo/hlo_instruction.h"
#include "jx/compiler/hlo/hlo_module.h"
#include "jx/compiler/hlo/hlo_pass.h"

namespace jx::cpu {

class MaskedGatherFusion : public hlo::HloPass {
 public:
  std::string_view name() const override { return "cpu-masked-gather-fusion"; }
  // Fuses every matching gather in every non-fused computation, keeping its schedule.
  absl::StatusOr<bool> Run(hlo::HloModule* module) override;
};

// The parts of a fusion's root select(broadcast(mask), gather, fill): the gather (reading
// fusion parameters), the mask (pred, broadcast along `mask_dims` of the result) and the
// fill constant (a scalar constant, or a broadcast of one).
struct MaskedGather {
  const hlo::HloInstruction* gather = nullptr;
  const hlo::HloInstruction* mask = nullptr;
  const hlo::HloInstruction* fill = nullptr;
};
// For a kCustom fusion this pass built (or any fusion of that form); nullopt otherwise.
std::optional<MaskedGather> AsMaskedGather(const hlo::HloInstruction& fusion);

}  // namespace jx::cpu

// How a dry run measures a program compiled for its chips, for the TPU pipeline's code motion
// (tpu::CompiledMeasures): the chip's memory as the plan reports it (ChipMemory: buffer
// assignment of the host program in the chip's view) and the planned step (the pod step of
// the compiled copy, costed on the chips' torus), so the hoists of gradient accumulators are
// weighed against the plan itself.
//
//   AddTpuPasses(pipeline, options, DryRunMeasures(client, chips, donated, "jit(step)"));
#pragma once

#include <string>
#include <vector>

#include "jx/compiler/backend/tpu/tpu_pipeline.h"
#include "jx/devices/tpu/tpu_chip.h"

namespace jx::tpu {

class TpuClient;

// donated: as the program's (argument leaves that may be overwritten; empty: none). The
// measures keep references to `client` and `chips`: they must outlive the pipeline run.
// They throw (naming `what`) where planning throws.
CompiledMeasures DryRunMeasures(const TpuClient& client, const std::vector<const TpuChip*>& chips,
                                std::vector<bool> donated, std::string what);

}  // namespace jx::tpu

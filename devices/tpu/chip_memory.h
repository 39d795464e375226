// A TPU chip's memory as a dry run plans it: the TPU-optimized module's host program (the
// optimized module with the host's layouts, in the chips' order), buffer-assigned in the
// chip's view of it (the MXU's operands read as stored, an async collective's result one
// buffer), loops', branches' and callees' arenas added as the host compile sizes them.
//
//   auto [memory, hbm] = ChipMemory(*optimized, donated, "jit(step)");
//   memory.peak_memory_in_bytes;   // what PodPlan::hbm_peak_bytes reports
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "jx/compiler/hlo/hlo_module.h"
#include "jx/core/executable.h"
#include "jx/devices/tpu/peak_buffers.h"

namespace jx::tpu {

// The program the chips' threads run: the optimized module with the host's layouts, in the
// chips' order (the latency-hiding schedule), so its peak memory is the one the overlap
// implies. Throws (naming `what`) if a step fails.
std::unique_ptr<hlo::HloModule> HostModuleOf(const hlo::HloModule& module, const std::string& what);

// The optimized module's memory on one chip and what holds its peak (see the file comment).
// donated[i]: argument leaf i may be overwritten (empty: none). Throws (naming `what`) if a
// step fails.
std::pair<MemoryAnalysis, HbmPeakReport> ChipMemory(const hlo::HloModule& module, const std::vector<bool>& donated,
                                                    const std::string& what);

}  // namespace jx::tpu

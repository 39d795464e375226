// Reads a chip's HBM peak out of the buffer assignment it is computed from (peak_buffers.h):
// the schedule position where the most temp bytes are live, the buffers live there (temps
// whose live range covers it, and the arguments, outputs and constants, live throughout) and
// the kind of each.
//
//   cpu::BufferAssignment ba = cpu::BufferAssignment::Run(entry, schedule, donated).value();
//   HbmPeakReport peak = AnalyzeHbmPeak(ba, schedule);
#pragma once

#include <cstddef>

#include "absl/types/span.h"
#include "jx/compiler/backend/cpu/buffer_assignment.h"
#include "jx/devices/tpu/peak_buffers.h"

namespace jx::tpu {

// schedule: the order `assignment` was computed for. Keeps the max_buffers largest buffers.
HbmPeakReport AnalyzeHbmPeak(const cpu::BufferAssignment& assignment,
                             absl::Span<hlo::HloInstruction* const> schedule, size_t max_buffers = 16);

}  // namespace jx::tpu

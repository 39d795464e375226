// A TPU program's memory as the chip holds it, not as the host that emulates it does.
// TpuNumerics writes the MXU's numerics into the program for the host to run: a bf16 operand
// becomes convert(bf16 -> f32) feeding an f32 dot, an f32 one at DEFAULT precision a round
// trip convert(convert(x, bf16), f32). On a TPU those converts do not exist: the MXU reads the
// operand as it is stored (XLA fuses the convert into the dot's operand), so a full f32 copy
// of every gathered bf16 weight is the host's, not the chip's.
//
// ReadMxuOperandsAsStored gives every reader of an MXU feed (mxu_feed.h: a convert chain, or a
// fusion of converts, read only as a dot or convolution operand) the feed's source, removes the
// feed and the converts under it nothing else reads, and keeps the computation's schedule. The result is
// for memory analysis only (its dots read operands of mixed types): the planner runs buffer
// assignment on it to count a chip's HBM.
//
//   std::vector<HloInstruction*> order = entry->MakeSequentialOrder();
//   HLO_ASSIGN_OR_RETURN(int64_t removed, ReadMxuOperandsAsStored(entry));
//   // entry->MakeSequentialOrder(): the same order without the removed converts
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "jx/compiler/hlo/hlo_computation.h"
#include "jx/compiler/passes/latency_hiding_scheduler.h"

namespace jx::tpu {

// Returns the number of converts removed.
absl::StatusOr<int64_t> ReadMxuOperandsAsStored(hlo::HloComputation* computation);

// The same view of asynchronous collectives: on a TPU a done returns the buffer its start
// allocated for the result (XLA's buffer assignment gives both one buffer); the host runs the
// done as a copy into a buffer of its own. Each done becomes a get-tuple-element of its
// start's result leaf (an all-reduce-start, whose shape is its result: the start itself), so
// buffer assignment holds one result buffer from the start to the result's last reader. The
// schedule is kept (the get-tuple-element takes the done's place). For memory analysis only.
// Returns the number of dones replaced.
absl::StatusOr<int64_t> ShareAsyncCollectiveResults(hlo::HloComputation* computation);

// The TPU's memory model for the latency-hiding scheduler (hlo::MemoryModel, for its memory
// limit and its choice of order): the peak of live bytes (hlo::FindMemoryPeak) of
// `computation` run in a given order, counted as the chip holds them: both rewrites above are
// applied once to a copy of the computation's module, each order is read on that copy (a removed
// MXU feed has no place of its own, a done's result takes the done's) and the peak's position is
// the original order's. So the scheduler weighs the memory the planner's HBM report counts, not
// the host emulation's f32 copies of MXU operands and second copies of collective results.
absl::StatusOr<hlo::MemoryPeakOfOrder> ChipMemoryPeak(const hlo::HloComputation& computation);

}  // namespace jx::tpu

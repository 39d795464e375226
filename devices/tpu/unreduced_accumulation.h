// What keeping gradient accumulators unreduced saves. A microbatched training step inside
// shard_map sums each layer's gradient over the data axes (psum) and accumulates it over the
// microbatches, in a loop (scan, fori_loop) or an unrolled C++ loop: as written, one
// all-reduce per layer per microbatch. Summing is linear, so each chip may accumulate its own
// unreduced gradients and all-reduce each accumulator once per step (the scaling book's and
// Shardy's "unreduced" values; XLA's WhileLoopAllReduceCodeMotion and AllReduceReassociate,
// which jx's TPU pipeline runs). This compares the two on the pod: all-reduces per step, bytes
// per chip and ICI seconds, as written and with the accumulators unreduced.
//
// FSDP's gradients are reduce-scattered into the parameters' sharding instead: the
// accumulator is a chip's block, and keeping it unreduced means a full-size accumulator (N
// times the bytes for the whole loop) and one reduce-scatter after it. The tallies count the
// reduce-scatters too, and reduce_scatter_hoists says for each such accumulator whether the
// TPU pipeline's pricing (tpu::CollectiveCodeMotionOptions: the step time its runs cost as the
// chip's schedule runs them, against the bigger adds and the run after the loop) hoists it, the
// seconds it saves and the bytes it costs, or that it was kept for memory (the chip's peak as
// the plan measures it, ChipMemory of a compiled copy, plus the bigger accumulators, their
// zeros and sums over the limit; the largest savings are weighed first), because it does not
// pay, or because the planned step of the program with it is not faster (the dry run's check
// of the hoists taken); an unrolled loop's sums of reduce-scatters (ReduceScatterReassociate)
// are listed after, one per pair combined.
//
//   auto lowering = pod.client().Lower(per_device_jaxpr, {.name = "step", .device_assignment = devices});
//   UnreducedAccumulation u = AnalyzeUnreducedAccumulation(*lowering, pod.client(), chips);
//   u.reduced.runs();     // layers x microbatches
//   u.unreduced.runs();   // layers
//   u.reduce_scatter_hoists[0].outcome;   // kHoisted, kDoesNotPay, kOverMemoryLimit, kStepNotFaster
//   std::cout << u.ToString();
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "jx/compiler/hlo/hlo_module.h"
#include "jx/compiler/passes/while_loop_all_reduce_code_motion.h"
#include "jx/core/executable.h"
#include "jx/devices/tpu/all_reduce_tally.h"
#include "jx/devices/tpu/tpu_chip.h"

namespace jx::tpu {

class TpuClient;

struct UnreducedAccumulation {
  AllReduceTally reduced;    // as written: each microbatch's values all-reduced (or reduce-scattered) where made
  AllReduceTally unreduced;  // accumulators summed unreduced, reduced once per step where the pipeline does
  // Each reduce-scatter accumulation found in a loop and what the pipeline's pricing made of it.
  std::vector<hlo::ReduceScatterHoist> reduce_scatter_hoists;
  int64_t saved_runs() const { return reduced.runs() - unreduced.runs(); }
  int64_t saved_bytes() const { return reduced.bytes() - unreduced.bytes(); }
  double saved_seconds() const { return reduced.seconds() - unreduced.seconds(); }
  // Per chip: what the hoisted reduce-scatter accumulators add to HBM (full size less block).
  int64_t extra_accumulator_bytes() const;
  // Both tallies, the reduce-scatter accumulators' outcomes and what the unreduced
  // accumulators save.
  std::string ToString() const;
};

struct UnreducedAccumulationOptions {
  // The most bytes a chip may hold at once; unset: the chip's HBM (as the pipeline's).
  std::optional<int64_t> memory_limit_bytes;
};

// module: the SPMD program as lowered (per-device, with its collectives; partition p runs on
// chips[p]), before the TPU pipeline. Both variants get the pipeline's first cleanup; their
// all-reduces and reduce-scatters are timed on the client's torus. Throws (InternalError) if
// a pass fails.
UnreducedAccumulation AnalyzeUnreducedAccumulation(const hlo::HloModule& module, const TpuClient& client,
                                                   const std::vector<const TpuChip*>& chips,
                                                   const UnreducedAccumulationOptions& options = {});
// The same for a pod lowering (TpuClient::Lower of a per-device jaxpr for these chips).
UnreducedAccumulation AnalyzeUnreducedAccumulation(const Lowering& lowering, const TpuClient& client,
                                                   const std::vector<const TpuChip*>& chips,
                                                   const UnreducedAccumulationOptions& options = {});

}  // namespace jx::tpu

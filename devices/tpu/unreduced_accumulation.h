// What keeping gradient accumulators unreduced saves. A microbatched training step inside
// shard_map sums each layer's gradient over the data axes (psum) and accumulates it over the
// microbatches, in a loop (scan, fori_loop) or an unrolled C++ loop: as written, one
// all-reduce per layer per microbatch. Summing is linear, so each chip may accumulate its own
// unreduced gradients and all-reduce each accumulator once per step (the scaling book's and
// Shardy's "unreduced" values; XLA's WhileLoopAllReduceCodeMotion and AllReduceReassociate,
// which jx's TPU pipeline runs). This compares the two on the pod: all-reduces per step, bytes
// per chip and ICI seconds, as written and with the accumulators unreduced.
//
//   auto lowering = pod.client().Lower(per_device_jaxpr, {.name = "step", .device_assignment = devices});
//   UnreducedAccumulation u = AnalyzeUnreducedAccumulation(*lowering, pod.client(), chips);
//   u.reduced.runs();     // layers x microbatches
//   u.unreduced.runs();   // layers
//   std::cout << u.ToString();
#pragma once

#include <string>
#include <vector>

#include "jx/compiler/hlo/hlo_module.h"
#include "jx/core/executable.h"
#include "jx/devices/tpu/all_reduce_tally.h"
#include "jx/devices/tpu/tpu_chip.h"

namespace jx::tpu {

class TpuClient;

struct UnreducedAccumulation {
  AllReduceTally reduced;    // as written: each microbatch's values all-reduced where made
  AllReduceTally unreduced;  // accumulators summed unreduced, all-reduced once per step
  int64_t saved_runs() const { return reduced.runs() - unreduced.runs(); }
  int64_t saved_bytes() const { return reduced.bytes() - unreduced.bytes(); }
  double saved_seconds() const { return reduced.seconds() - unreduced.seconds(); }
  // Both tallies and what the unreduced accumulators save.
  std::string ToString() const;
};

// module: the SPMD program as lowered (per-device, with its collectives; partition p runs on
// chips[p]), before the TPU pipeline. Both variants get the pipeline's first cleanup; their
// all-reduces are timed on the client's torus. Throws (InternalError) if a pass fails.
UnreducedAccumulation AnalyzeUnreducedAccumulation(const hlo::HloModule& module, const TpuClient& client,
                                                   const std::vector<const TpuChip*>& chips);
// The same for a pod lowering (TpuClient::Lower of a per-device jaxpr for these chips).
UnreducedAccumulation AnalyzeUnreducedAccumulation(const Lowering& lowering, const TpuClient& client,
                                                   const std::vector<const TpuChip*>& chips);

}  // namespace jx::tpu

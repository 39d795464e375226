// The TPU's prices for hoisting reduce-scatters out of the sums they feed (the reduce-scatter
// mode of WhileLoopAllReduceCodeMotion, and ReduceScatterReassociate): what the step loses, as
// the chip's schedule runs it, not the runs' time. A run the latency-hiding scheduler hides
// behind compute saves nothing when it goes; the bigger add costs either way.
//
// Made once per pass run: a copy of the module is compiled as the TPU pipeline goes on to
// compile it (CompileKernelsAndSchedule: the kernels and the scheduler's order), and each
// computation holding a candidate is replayed in that order on the scheduler's clock (the cost
// model's seconds per instruction; a collective's transfer begins once the one started before
// it has moved its data, on the chip's shared interconnect; a done waits for its transfer).
// A hoist out of a loop of `trips` trips saves
//   trips x (the body's replay - the replay without the run, with the add at the full size)
//   - the reduce-scatter after the loop (the accumulator's blocks' runs: counted exposed)
//   - the full-size zeros the loop starts from (written each step at the HBM bandwidth)
// where the bigger add reads and writes 3 x (full - block) more bytes at the HBM bandwidth,
// charged where the run's done was. An unrolled pair saves the replay less the one without
// the second reduce-scatter's run, with the full-size add. Each hoist taken stays out of the
// replays that price the ones after it (its runs gone, its add grown), so a run that was
// exposed only while queued behind another's saves what is left.
//
// The order replayed is the one the scheduler made for the program as written: the hoists
// are not rescheduled. A reduce-scatter the copy does not hold (made by a move out of an inner
// loop, after the copy was made) has no known exposure: it saves nothing and stays.
//
//   hlo::WhileLoopAllReduceCodeMotionOptions o;
//   o.reduce_scatter_pricing = tpu::ReduceScatterHoistPricer(options);  // chip and timer set
#pragma once

#include "jx/compiler/backend/tpu/tpu_target_options.h"
#include "jx/compiler/passes/while_loop_all_reduce_code_motion.h"

namespace jx::tpu {

// `options` must name a chip and a collective timer (the pricer fails the run otherwise).
hlo::ReduceScatterPricer ReduceScatterHoistPricer(const TpuTargetOptions& options);

}  // namespace jx::tpu

#include "jx/compiler/backend/tpu/tpu_pipeline.h"

#include <memory>

#include "jx/compiler/backend/tpu/async_collective_creator.h"
#include "jx/compiler/backend/tpu/mxu_tiling.h"
#include "jx/compiler/backend/tpu/tpu_cost_model.h"
#include "jx/compiler/backend/tpu/tpu_layout_assignment.h"
#include "jx/compiler/backend/tpu/vmem_tiling.h"
#include "jx/compiler/passes/all_reduce_combiner.h"
#include "jx/compiler/passes/all_reduce_reassociate.h"
#include "jx/compiler/passes/cse.h"
#include "jx/compiler/passes/dce.h"
#include "jx/compiler/passes/dot_transpose_folding.h"
#include "jx/compiler/passes/hlo_scheduling.h"
#include "jx/compiler/passes/instruction_fusion.h"
#include "jx/compiler/passes/latency_hiding_scheduler.h"
#include "jx/compiler/passes/layout_assignment.h"
#include "jx/compiler/passes/simplification_passes.h"
#include "jx/compiler/passes/while_loop_all_reduce_code_motion.h"

namespace jx::tpu {

namespace {

// The scheduler's clock: the cost model's time per instruction (a start's: its collective on
// the network, from the collective timer).
hlo::LatencyHidingSchedulerOptions SchedulerOptions(const TpuTargetOptions& options) {
  auto model = std::make_shared<TpuCostModel>(*options.chip, options.collective_timer);
  hlo::LatencyHidingSchedulerOptions s;
  s.estimate_seconds = [model](const hlo::HloInstruction& instr) { return model->Cost(instr).target.seconds; };
  s.max_in_flight_per_kind = options.max_in_flight_per_kind;
  s.memory_limit_bytes = options.schedule_memory_limit_bytes;
  return s;
}

}  // namespace

void AddTpuPasses(hlo::HloPassPipeline& pipeline, const TpuTargetOptions& options) {
  const bool async = options.async_collectives && options.chip.has_value();
  hlo::AddSimplificationPasses(pipeline);
  // Sums of all-reduced values (gradients accumulated over microbatches, in a loop or
  // unrolled) all-reduce once: the partial sums stay unreduced until the last add.
  pipeline.AddPass<hlo::WhileLoopAllReduceCodeMotion>();
  pipeline.AddPass<hlo::AllReduceReassociate>();
  pipeline.AddPass<TpuNumerics>(options.default_precision);
  // The bf16 parts of an operand several dots read are computed once.
  pipeline.AddPass<hlo::HloCSE>();
  // A dot's rounding convert (TpuNumerics') and other sole epilogues fuse into the dot, so
  // it writes its result once, as the MXU rounds it, rather than f32 for each consumer.
  pipeline.AddPass<hlo::InstructionFusion>(hlo::InstructionFusionOptions{.prefer_output_fusion = true});
  pipeline.AddPass<hlo::HloDCE>();
  pipeline.AddPass<hlo::DotTransposeFolding>();
  // Independent all-reduces over the same partitions run as one (psum of a pytree: one
  // all-reduce of its leaves), paying one collective's latency.
  pipeline.AddPass<hlo::AllReduceCombiner>();
  if (async) pipeline.AddPass<AsyncCollectiveCreator>();
  pipeline.AddPass<hlo::LayoutAssignment>();
  pipeline.AddPass<TpuLayoutAssignment>();
  pipeline.AddPass<MxuTilingPass>(options);
  pipeline.AddPass<hlo::HloScheduling>();
  if (async) pipeline.AddPass<hlo::LatencyHidingScheduler>(SchedulerOptions(options));
  pipeline.AddPass<VmemTilingPass>(options);
}

}  // namespace jx::tpu

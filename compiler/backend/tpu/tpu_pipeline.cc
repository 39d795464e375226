#include "jx/compiler/backend/tpu/tpu_pipeline.h"

#include <memory>

#include "jx/compiler/backend/tpu/async_collective_creator.h"
#include "jx/compiler/backend/tpu/attention_fusion.h"
#include "jx/compiler/backend/tpu/mxu_operand_reads.h"
#include "jx/compiler/backend/tpu/mxu_tiling.h"
#include "jx/compiler/backend/tpu/tpu_cost_model.h"
#include "jx/compiler/backend/tpu/tpu_layout_assignment.h"
#include "jx/compiler/backend/tpu/vmem_tiling.h"
#include "jx/compiler/hlo/status_macros.h"
#include "jx/compiler/passes/all_reduce_combiner.h"
#include "jx/compiler/passes/all_reduce_reassociate.h"
#include "jx/compiler/passes/cse.h"
#include "jx/compiler/passes/dce.h"
#include "jx/compiler/passes/dot_transpose_folding.h"
#include "jx/compiler/passes/hlo_scheduling.h"
#include "jx/compiler/passes/instruction_fusion.h"
#include "jx/compiler/passes/latency_hiding_scheduler.h"
#include "jx/compiler/passes/layout_assignment.h"
#include "jx/compiler/passes/reduce_scatter_reassociate.h"
#include "jx/compiler/passes/simplification_passes.h"

namespace jx::tpu {

namespace {

// The scheduler's clock: the cost model's time per instruction (a start's: its collective on
// the network, from the collective timer); its memory: the chip's (mxu_operand_reads.h).
hlo::LatencyHidingSchedulerOptions SchedulerOptions(const TpuTargetOptions& options) {
  auto model = std::make_shared<TpuCostModel>(*options.chip, options.collective_timer);
  hlo::LatencyHidingSchedulerOptions s;
  s.estimate_seconds = [model](const hlo::HloInstruction& instr) { return model->Cost(instr).target.seconds; };
  s.max_in_flight_per_kind = options.max_in_flight_per_kind;
  s.memory_limit_bytes = options.schedule_memory_limit_bytes;
  s.memory_model = ChipMemoryPeak;  // the chip's memory, as the planner counts it
  return s;
}

// Everything after the collectives' code motion up to the order the chip runs: the kernels
// (the MXU's numerics, fusion, the attention kernel), asynchronous collectives, layouts, MXU
// tiles and the schedule. The pipeline runs them; ChipPeakBytes runs them on a copy to measure
// the memory they leave.
void AddKernelAndSchedulingPasses(hlo::HloPassPipeline& pipeline, const TpuTargetOptions& options) {
  const bool async = options.async_collectives && options.chip.has_value();
  pipeline.AddPass<TpuNumerics>(options.default_precision);
  // The bf16 parts of an operand several dots read are computed once.
  pipeline.AddPass<hlo::HloCSE>();
  // A dot's rounding convert (TpuNumerics') and other sole epilogues fuse into the dot, so
  // it writes its result once, as the MXU rounds it, rather than f32 for each consumer.
  pipeline.AddPass<hlo::InstructionFusion>(hlo::InstructionFusionOptions{.prefer_output_fusion = true});
  pipeline.AddPass<hlo::HloDCE>();
  pipeline.AddPass<hlo::DotTransposeFolding>();
  // A blocked attention's QK^T -> softmax -> P.V kernels run as one, its score blocks in VMEM.
  if (options.attention_fusion) pipeline.AddPass<AttentionFusion>(options);
  // Independent all-reduces over the same partitions run as one (psum of a pytree: one
  // all-reduce of its leaves), paying one collective's latency.
  pipeline.AddPass<hlo::AllReduceCombiner>();
  if (async) pipeline.AddPass<AsyncCollectiveCreator>();
  pipeline.AddPass<hlo::LayoutAssignment>();
  pipeline.AddPass<TpuLayoutAssignment>();
  pipeline.AddPass<MxuTilingPass>(options);
  pipeline.AddPass<hlo::HloScheduling>();
  if (async) pipeline.AddPass<hlo::LatencyHidingScheduler>(SchedulerOptions(options));
}

}  // namespace

absl::StatusOr<int64_t> ChipPeakBytes(const hlo::HloModule& module, const TpuTargetOptions& options) {
  HLO_ASSIGN_OR_RETURN(std::unique_ptr<hlo::HloModule> chip, module.Clone());
  hlo::HloPassPipeline compile("chip-peak-bytes");
  compile.set_verify(false);  // a copy that is measured, never run
  AddKernelAndSchedulingPasses(compile, options);
  HLO_RETURN_IF_ERROR(compile.Run(chip.get()).status());
  return hlo::EstimatedPeakBytes(*chip, ChipMemoryPeak);
}

hlo::WhileLoopAllReduceCodeMotionOptions CollectiveCodeMotionOptions(const TpuTargetOptions& options) {
  hlo::WhileLoopAllReduceCodeMotionOptions o;
  if (!options.chip.has_value() || options.collective_timer == nullptr) return o;  // all-reduces only
  o.enable_reduce_scatter = true;
  o.memory_limit_bytes = options.schedule_memory_limit_bytes;
  const CollectiveTimer* timer = options.collective_timer;
  const double hbm_bandwidth = options.chip->hbm_bandwidth;
  o.reduce_scatter_savings = [timer, hbm_bandwidth](const hlo::HloInstruction& reduce_scatter,
                                                    const hlo::ReduceScatterHoist& h) -> absl::StatusOr<double> {
    if (h.trips < 0 || h.reduced_bytes <= 0) return 0.0;  // nothing known to save
    HLO_ASSIGN_OR_RETURN(const double run, timer->Seconds(reduce_scatter));
    // The reduce-scatter after the loop reduces the whole accumulator: as many of the loop's
    // runs as it holds blocks (one for a plain sum, one per row for a stack of rows; an upper
    // bound, as its start-up is paid once).
    const double after = run * static_cast<double>(h.accumulator_bytes) / static_cast<double>(h.reduced_bytes);
    // Hoisted, each trip's add (an unrolled sum's one add) reads the accumulator and the value
    // and writes the sum at the full size instead of the block's.
    const double bigger_adds =
        static_cast<double>(h.grown_adds) * 3.0 * static_cast<double>(h.extra_bytes()) / hbm_bandwidth;
    return static_cast<double>(h.trips) * run - after - bigger_adds;
  };
  o.peak_bytes = [options](const hlo::HloModule& module) { return ChipPeakBytes(module, options); };
  return o;
}

void AddTpuPasses(hlo::HloPassPipeline& pipeline, const TpuTargetOptions& options) {
  hlo::AddSimplificationPasses(pipeline);
  // Sums of all-reduced values (gradients accumulated over microbatches, in a loop or
  // unrolled) all-reduce once: the partial sums stay unreduced until the last add; sums of
  // reduce-scattered ones too, where that pays and the full-size accumulators fit.
  const hlo::WhileLoopAllReduceCodeMotionOptions motion = CollectiveCodeMotionOptions(options);
  pipeline.AddPass<hlo::WhileLoopAllReduceCodeMotion>(motion);
  pipeline.AddPass<hlo::AllReduceReassociate>();
  // An unrolled loop's reduce-scatters (XLA runs this right after AllReduceReassociate): with
  // the loop's pricing and memory limit, where the loop's reduce-scatters may move.
  if (motion.enable_reduce_scatter) {
    pipeline.AddPass<hlo::ReduceScatterReassociate>(hlo::ReduceScatterReassociateOptions{
        .memory_limit_bytes = motion.memory_limit_bytes,
        .savings = motion.reduce_scatter_savings,
        .peak_bytes = motion.peak_bytes});
  }
  AddKernelAndSchedulingPasses(pipeline, options);
  pipeline.AddPass<VmemTilingPass>(options);
}

}  // namespace jx::tpu

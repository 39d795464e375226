#include "jx/compiler/backend/tpu/tpu_pipeline.h"

#include <memory>

#include "jx/compiler/backend/tpu/async_collective_creator.h"
#include "jx/compiler/backend/tpu/attention_fusion.h"
#include "jx/compiler/backend/tpu/mxu_operand_reads.h"
#include "jx/compiler/backend/tpu/mxu_tiling.h"
#include "jx/compiler/backend/tpu/reduce_scatter_hoist_pricing.h"
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

// Everything after the collectives' code motion: the kernels (the MXU's numerics, fusion, the
// attention kernel), asynchronous collectives, layouts, MXU tiles, the schedule and VMEM
// tiles. The pipeline runs them; CompileKernelsAndSchedule runs them on the
// copies the code motion measures and prices.
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
  pipeline.AddPass<VmemTilingPass>(options);
}

}  // namespace

absl::Status CompileKernelsAndSchedule(hlo::HloModule* module, const TpuTargetOptions& options) {
  hlo::HloPassPipeline compile("kernels-and-schedule");
  compile.set_verify(false);  // a copy that is measured, never run
  AddKernelAndSchedulingPasses(compile, options);
  return compile.Run(module).status();
}

absl::StatusOr<int64_t> ChipPeakBytes(const hlo::HloModule& module, const TpuTargetOptions& options,
                                      const CompiledMeasures& measures) {
  HLO_ASSIGN_OR_RETURN(std::unique_ptr<hlo::HloModule> chip, module.Clone());
  HLO_RETURN_IF_ERROR(CompileKernelsAndSchedule(chip.get(), options));
  return measures.peak_bytes ? measures.peak_bytes(*chip) : hlo::EstimatedPeakBytes(*chip, ChipMemoryPeak);
}

hlo::WhileLoopAllReduceCodeMotionOptions CollectiveCodeMotionOptions(const TpuTargetOptions& options,
                                                                     const CompiledMeasures& measures) {
  hlo::WhileLoopAllReduceCodeMotionOptions o;
  if (!options.chip.has_value() || options.collective_timer == nullptr) return o;  // all-reduces only
  o.enable_reduce_scatter = true;
  o.memory_limit_bytes = options.schedule_memory_limit_bytes;
  o.reduce_scatter_pricing = ReduceScatterHoistPricer(options);
  o.peak_bytes = [options, measures](const hlo::HloModule& module) { return ChipPeakBytes(module, options, measures); };
  if (measures.step_seconds) {
    o.step_seconds = [options, measures](const hlo::HloModule& module) -> absl::StatusOr<double> {
      HLO_ASSIGN_OR_RETURN(std::unique_ptr<hlo::HloModule> chip, module.Clone());
      HLO_RETURN_IF_ERROR(CompileKernelsAndSchedule(chip.get(), options));
      return measures.step_seconds(*chip);
    };
  }
  return o;
}

void AddTpuPasses(hlo::HloPassPipeline& pipeline, const TpuTargetOptions& options, const CompiledMeasures& measures) {
  hlo::AddSimplificationPasses(pipeline);
  // Sums of all-reduced values (gradients accumulated over microbatches, in a loop or
  // unrolled) all-reduce once: the partial sums stay unreduced until the last add; sums of
  // reduce-scattered ones too, where that pays and the full-size accumulators fit.
  const hlo::WhileLoopAllReduceCodeMotionOptions motion = CollectiveCodeMotionOptions(options, measures);
  pipeline.AddPass<hlo::WhileLoopAllReduceCodeMotion>(motion);
  pipeline.AddPass<hlo::AllReduceReassociate>();
  // An unrolled loop's reduce-scatters (XLA runs this right after AllReduceReassociate): with
  // the loop's pricing and memory limit, where the loop's reduce-scatters may move.
  if (motion.enable_reduce_scatter) {
    pipeline.AddPass<hlo::ReduceScatterReassociate>(hlo::ReduceScatterReassociateOptions{
        .memory_limit_bytes = motion.memory_limit_bytes,
        .pricing = motion.reduce_scatter_pricing,
        .peak_bytes = motion.peak_bytes});
  }
  AddKernelAndSchedulingPasses(pipeline, options);
}

}  // namespace jx::tpu

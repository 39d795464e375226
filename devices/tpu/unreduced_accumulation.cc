#include "jx/devices/tpu/unreduced_accumulation.h"

#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "jx/compiler/backend/tpu/tpu_pipeline.h"
#include "jx/compiler/hlo/hlo_pass.h"
#include "jx/compiler/passes/all_reduce_reassociate.h"
#include "jx/compiler/passes/reduce_scatter_reassociate.h"
#include "jx/compiler/passes/simplification_passes.h"
#include "jx/core/str_util.h"
#include "jx/devices/cpu/cpu_compiler.h"
#include "jx/devices/tpu/dry_run_measures.h"
#include "jx/devices/tpu/ici_collective_timer.h"
#include "jx/devices/tpu/tpu_client.h"

namespace jx::tpu {
namespace {

using cpu_device::ThrowStatus;

std::unique_ptr<hlo::HloModule> CloneOrThrow(const hlo::HloModule& module) {
  absl::StatusOr<std::unique_ptr<hlo::HloModule>> clone = module.Clone();
  if (!clone.ok()) ThrowStatus(StrCat("unreduced accumulation: cloning ", module.name(), " failed"), clone.status());
  return *std::move(clone);
}

void RunOrThrow(hlo::HloPassPipeline& pipeline, hlo::HloModule* module) {
  if (absl::StatusOr<bool> ran = pipeline.Run(module); !ran.ok()) {
    ThrowStatus(StrCat("unreduced accumulation: ", pipeline.name(), " on ", module->name(), " failed"), ran.status());
  }
}

AllReduceTally TimeAllReduces(const hlo::HloModule& module, const TpuClient& client,
                              const std::vector<const TpuChip*>& chips) {
  IciCollectiveTimer timer(client.torus(), chips);
  for (const hlo::HloComputation* c : module.computations()) {
    for (const hlo::HloInstruction* instr : c->instructions()) {
      if (instr->opcode() != hlo::HloOpcode::kAllReduce && instr->opcode() != hlo::HloOpcode::kReduceScatter) continue;
      if (absl::StatusOr<CollectiveTiming> t = timer.Time(*instr); !t.ok()) {
        ThrowStatus(StrCat("unreduced accumulation: timing ", instr->name()), t.status());
      }
    }
  }
  return TallyAllReduces(module, timer.shared_timings());
}

}  // namespace

int64_t UnreducedAccumulation::extra_accumulator_bytes() const {
  int64_t bytes = 0;
  for (const hlo::ReduceScatterHoist& h : reduce_scatter_hoists) {
    if (h.outcome == hlo::ReduceScatterHoist::Outcome::kHoisted) bytes += h.extra_bytes();
  }
  return bytes;
}

std::string UnreducedAccumulation::ToString() const {
  std::string out = absl::StrFormat("reducing collectives per step as written: %s", reduced.ToString());
  absl::StrAppendFormat(&out, "with unreduced accumulators: %s", unreduced.ToString());
  for (const hlo::ReduceScatterHoist& h : reduce_scatter_hoists) absl::StrAppendFormat(&out, "  %s\n", h.ToString());
  const int64_t saved_all_reduces = reduced.Of("all-reduce").runs() - unreduced.Of("all-reduce").runs();
  absl::StrAppendFormat(&out,
                        "unreduced accumulators save %d all-reduce runs and %d reduce-scatter runs, %d B per chip, "
                        "%.3f us per step, for %d B more HBM per chip\n",
                        saved_all_reduces, saved_runs() - saved_all_reduces, saved_bytes(), saved_seconds() * 1e6,
                        extra_accumulator_bytes());
  return out;
}

UnreducedAccumulation AnalyzeUnreducedAccumulation(const hlo::HloModule& module, const TpuClient& client,
                                                   const std::vector<const TpuChip*>& chips,
                                                   const UnreducedAccumulationOptions& options) {
  std::unique_ptr<hlo::HloModule> written = CloneOrThrow(module);
  hlo::HloPassPipeline cleanup("simplification");
  hlo::AddSimplificationPasses(cleanup);
  RunOrThrow(cleanup, written.get());
  std::unique_ptr<hlo::HloModule> hoisted = CloneOrThrow(*written);
  // The pipeline's own pricing: the pod's collective timer, the chip's HBM.
  IciCollectiveTimer timer(client.torus(), chips);
  TpuTargetOptions target(client.spec());
  target.collective_timer = &timer;
  if (options.memory_limit_bytes) target.schedule_memory_limit_bytes = *options.memory_limit_bytes;
  hlo::HloPassPipeline hoist("unreduced-accumulation");
  // The chip's memory and step as the plan measures them, so the analysis hoists what the plan
  // does.
  const hlo::WhileLoopAllReduceCodeMotionOptions options_of_motion = CollectiveCodeMotionOptions(
      target, DryRunMeasures(client, chips, {}, StrCat("unreduced accumulation of ", module.name())));
  const auto& motion = hoist.AddPass<hlo::WhileLoopAllReduceCodeMotion>(options_of_motion);
  hoist.AddPass<hlo::AllReduceReassociate>();
  const auto& reassociate = hoist.AddPass<hlo::ReduceScatterReassociate>(hlo::ReduceScatterReassociateOptions{
      .memory_limit_bytes = options_of_motion.memory_limit_bytes,
      .pricing = options_of_motion.reduce_scatter_pricing,
      .peak_bytes = options_of_motion.peak_bytes});
  RunOrThrow(hoist, hoisted.get());
  std::vector<hlo::ReduceScatterHoist> hoists = motion.reduce_scatter_hoists();
  hoists.insert(hoists.end(), reassociate.records().begin(), reassociate.records().end());
  return {.reduced = TimeAllReduces(*written, client, chips),
          .unreduced = TimeAllReduces(*hoisted, client, chips),
          .reduce_scatter_hoists = std::move(hoists)};
}

UnreducedAccumulation AnalyzeUnreducedAccumulation(const Lowering& lowering, const TpuClient& client,
                                                   const std::vector<const TpuChip*>& chips,
                                                   const UnreducedAccumulationOptions& options) {
  return AnalyzeUnreducedAccumulation(cpu_device::LoweredHloModule(lowering, "unreduced accumulation"), client, chips,
                                      options);
}

}  // namespace jx::tpu

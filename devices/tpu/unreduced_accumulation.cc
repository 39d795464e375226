#include "jx/devices/tpu/unreduced_accumulation.h"

#include <memory>
#include <utility>

#include "absl/strings/str_format.h"
#include "jx/compiler/hlo/hlo_pass.h"
#include "jx/compiler/passes/all_reduce_reassociate.h"
#include "jx/compiler/passes/simplification_passes.h"
#include "jx/compiler/passes/while_loop_all_reduce_code_motion.h"
#include "jx/core/str_util.h"
#include "jx/devices/cpu/cpu_compiler.h"
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
      if (instr->opcode() != hlo::HloOpcode::kAllReduce) continue;
      if (absl::StatusOr<CollectiveTiming> t = timer.Time(*instr); !t.ok()) {
        ThrowStatus(StrCat("unreduced accumulation: timing ", instr->name()), t.status());
      }
    }
  }
  return TallyAllReduces(module, timer.shared_timings());
}

}  // namespace

std::string UnreducedAccumulation::ToString() const {
  std::string out = absl::StrFormat("all-reduces per step as written: %s", reduced.ToString());
  absl::StrAppendFormat(&out, "with unreduced accumulators: %s", unreduced.ToString());
  absl::StrAppendFormat(&out, "unreduced accumulators save %d all-reduce runs, %d B per chip, %.3f us per step\n",
                        saved_runs(), saved_bytes(), saved_seconds() * 1e6);
  return out;
}

UnreducedAccumulation AnalyzeUnreducedAccumulation(const hlo::HloModule& module, const TpuClient& client,
                                                   const std::vector<const TpuChip*>& chips) {
  std::unique_ptr<hlo::HloModule> written = CloneOrThrow(module);
  hlo::HloPassPipeline cleanup("simplification");
  hlo::AddSimplificationPasses(cleanup);
  RunOrThrow(cleanup, written.get());
  std::unique_ptr<hlo::HloModule> hoisted = CloneOrThrow(*written);
  hlo::HloPassPipeline hoist("unreduced-accumulation");
  hoist.AddPass<hlo::WhileLoopAllReduceCodeMotion>();
  hoist.AddPass<hlo::AllReduceReassociate>();
  RunOrThrow(hoist, hoisted.get());
  return {.reduced = TimeAllReduces(*written, client, chips), .unreduced = TimeAllReduces(*hoisted, client, chips)};
}

UnreducedAccumulation AnalyzeUnreducedAccumulation(const Lowering& lowering, const TpuClient& client,
                                                   const std::vector<const TpuChip*>& chips) {
  return AnalyzeUnreducedAccumulation(cpu_device::LoweredHloModule(lowering, "unreduced accumulation"), client, chips);
}

}  // namespace jx::tpu

#include "jx/devices/tpu/dry_run_measures.h"

#include <memory>
#include <utility>

#include "jx/compiler/backend/tpu/tpu_cost_model.h"
#include "jx/compiler/hlo/status_macros.h"
#include "jx/devices/tpu/chip_memory.h"
#include "jx/devices/tpu/ici_collective_timer.h"
#include "jx/devices/tpu/pod_program.h"
#include "jx/devices/tpu/tpu_client.h"

namespace jx::tpu {

CompiledMeasures DryRunMeasures(const TpuClient& client, const std::vector<const TpuChip*>& chips,
                                std::vector<bool> donated, std::string what) {
  CompiledMeasures m;
  m.peak_bytes = [donated, what](const hlo::HloModule& compiled) -> absl::StatusOr<int64_t> {
    return ChipMemory(compiled, donated, what).first.peak_memory_in_bytes;
  };
  m.step_seconds = [&client, &chips, what](const hlo::HloModule& compiled) -> absl::StatusOr<double> {
    const IciCollectiveTimer timer(client.torus(), chips);
    HLO_ASSIGN_OR_RETURN(CostAnalysis cost, AnalyzeTpuCost(compiled, client.spec(), &timer));
    HLO_ASSIGN_OR_RETURN(std::unique_ptr<hlo::HloModule> copy, compiled.Clone());
    // A plan-only program: its step needs no memory analysis and no outputs.
    const PodProgram program(std::move(copy), std::move(cost), MemoryAnalysis{}, HbmPeakReport{},
                             timer.shared_timings(), client, chips, {}, what);
    return program.Plan().step.wall_seconds;
  };
  return m;
}

}  // namespace jx::tpu

// What the latency-hiding scheduler buys on a pod: one SPMD module planned twice, once as the
// TPU pipeline compiles it (collectives as start/done pairs the scheduler spaces so compute
// hides them) and once with every collective synchronous where it was lowered (each fully
// exposed), both dry runs (nothing compiled for the host or allocated).
//
//   PodOverlap o = PlanPodOverlap(*module, client, chips, out_avals, "jit(step)");
//   o.speedup();                                              // synchronous / scheduled step
//   o.scheduled.step.overlapped_communication_seconds();      // hidden behind compute
#pragma once

#include <string>
#include <vector>

#include "jx/compiler/hlo/hlo_module.h"
#include "jx/core/shape.h"
#include "jx/devices/tpu/pod_plan.h"
#include "jx/devices/tpu/tpu_chip.h"

namespace jx::tpu {

class TpuClient;

struct PodOverlap {
  PodPlan scheduled;    // asynchronous collectives ordered by the latency-hiding scheduler
  PodPlan synchronous;  // the same program without it: every collective exposed
  // synchronous / scheduled step time (>= 1 where overlap helps).
  double speedup() const;
};

// Plans `module` (the per-device program of an SPMD computation on `chips`, partition p on
// chips[p], as PlanPodProgram takes it) both ways. Throws as PlanPodProgram.
PodOverlap PlanPodOverlap(const hlo::HloModule& module, const TpuClient& client,
                          const std::vector<const TpuChip*>& chips, const std::vector<ShapedArray>& out_avals,
                          const std::string& what);

}  // namespace jx::tpu

// The TPU cost model's CollectiveTimer for a program on chips of a pod: a collective's
// partitions are the program's chips (partition p runs on chips[p]), its time and link bytes
// the interconnect's model on the pod's torus (devices/interconnect/collective_cost.h).
//
//   IciCollectiveTimer timer(client.torus(), chips);
//   AnalyzeTpuCost(module, spec, &timer);
//   timer.timings();      // per collective instruction: seconds, algorithm, link bytes
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "jx/compiler/backend/tpu/collective_timer.h"
#include "jx/devices/interconnect/torus.h"
#include "jx/devices/tpu/tpu_chip.h"

namespace jx::tpu {

class IciCollectiveTimer final : public CollectiveTimer {
 public:
  // torus outlives the timer; chips[p] is partition p's chip (one of the torus' chips).
  IciCollectiveTimer(const ici::Torus& torus, const std::vector<const TpuChip*>& chips);

  absl::StatusOr<CollectiveTiming> Time(const hlo::HloInstruction& instr) const override;
  // Every collective timed so far, by instruction name.
  std::map<std::string, CollectiveTiming> timings() const;

 private:
  const ici::Torus& torus_;
  std::vector<int64_t> torus_index_;  // per partition
  mutable std::mutex mu_;
  mutable std::map<std::string, CollectiveTiming> timings_;
};

}  // namespace jx::tpu

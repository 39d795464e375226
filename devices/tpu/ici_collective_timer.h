// The TPU cost model's CollectiveTimer for a program on chips of a pod: a collective's
// partitions are the program's chips (partition p runs on chips[p]), its time and link bytes
// the interconnect's model on the pod's torus (devices/interconnect/collective_cost.h).
//
//   IciCollectiveTimer timer(client.torus(), chips);
//   AnalyzeTpuCost(module, spec, &timer);
//   timer.timings();      // per collective instruction: seconds, algorithm, link bytes
//
// Collectives that agree in kind, groups (or pairs) and bytes are costed once and share one
// timing: the layers of a model repeat theirs, so a pod of thousands of chips and a program
// of thousands of collectives cost a few dozen routings.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>
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
  // Every collective timed so far, by instruction name (copies).
  std::map<std::string, CollectiveTiming> timings() const;
  // The same, sharing one timing between the instructions of equal collectives.
  std::map<std::string, std::shared_ptr<const CollectiveTiming>> shared_timings() const;

 private:
  // What a collective's cost depends on: opcode, the bytes it moves, its groups or pairs.
  using Key = std::tuple<int, int64_t, std::vector<std::vector<int64_t>>, std::vector<std::pair<int64_t, int64_t>>>;
  absl::StatusOr<CollectiveTiming> Cost(const hlo::HloInstruction& instr) const;

  const ici::Torus& torus_;
  std::vector<int64_t> torus_index_;  // per partition
  mutable std::mutex mu_;
  mutable std::map<std::string, std::shared_ptr<const CollectiveTiming>> timings_;
  mutable std::map<Key, std::shared_ptr<const CollectiveTiming>> by_key_;
};

}  // namespace jx::tpu

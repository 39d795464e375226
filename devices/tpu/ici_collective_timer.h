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

#include "absl/container/flat_hash_map.h"
#include "jx/compiler/backend/tpu/collective_timer.h"
#include "jx/devices/interconnect/torus.h"
#include "jx/devices/tpu/tpu_chip.h"

namespace jx::tpu {

class IciCollectiveTimer final : public CollectiveTimer {
 public:
  // torus outlives the timer; chips[p] is partition p's chip (one of the torus' chips).
  IciCollectiveTimer(const ici::Torus& torus, const std::vector<const TpuChip*>& chips);

  absl::StatusOr<CollectiveTiming> Time(const hlo::HloInstruction& instr) const override;
  absl::StatusOr<double> Seconds(const hlo::HloInstruction& instr) const override;
  // Every collective timed so far, by instruction name (copies).
  std::map<std::string, CollectiveTiming> timings() const;
  // The same, sharing one timing between the instructions of equal collectives.
  std::map<std::string, std::shared_ptr<const CollectiveTiming>> shared_timings() const;

 private:
  // What a collective's cost depends on: opcode, the bytes it moves, its groups or pairs. The
  // map's key is (opcode, bytes, a hash of the groups or pairs); the collectives that share it
  // are told apart by their groups or pairs, compared where they lie: a pod-wide collective's
  // groups list every chip (9216 ids on a v7 pod), too many to copy for each lookup.
  struct Timed {
    hlo::ReplicaGroups groups;
    hlo::SourceTargetPairs pairs;
    std::shared_ptr<const CollectiveTiming> timing;
  };
  using Key = std::tuple<int, int64_t, size_t>;
  absl::StatusOr<std::shared_ptr<const CollectiveTiming>> Shared(const hlo::HloInstruction& instr) const;
  absl::StatusOr<CollectiveTiming> Cost(const hlo::HloInstruction& instr) const;

  const ici::Torus& torus_;
  std::vector<int64_t> torus_index_;  // per partition
  mutable std::mutex mu_;
  mutable std::map<std::string, std::shared_ptr<const CollectiveTiming>> timings_;
  mutable absl::flat_hash_map<Key, std::vector<Timed>> by_key_;
};

}  // namespace jx::tpu

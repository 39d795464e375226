// How the TPU cost model times a collective: the compiler cannot see the pod (its torus and
// the chips a program runs on live in devices/), so the cost model asks this interface, which
// the device layer implements with the interconnect's model (devices/tpu/ici_collective_timer.h).
//
//   class MyTimer : public jx::tpu::CollectiveTimer { ... };
//   AnalyzeTpuCost(module, spec, &timer);   // collectives cost timer.Time(instr).seconds
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "jx/compiler/hlo/hlo_instruction.h"

namespace jx::tpu {

struct CollectiveTiming {
  double seconds = 0;     // one run of the collective (every group at once)
  std::string algorithm{};  // how the network runs it ("bidi ring over torus axis 0 (wraps)")
  // Bytes each one-way link carries: (link id, bytes), ascending link ids.
  std::vector<std::pair<int64_t, int64_t>> link_bytes{};
};

class CollectiveTimer {
 public:
  virtual ~CollectiveTimer() = default;
  // The time of a collective instruction (all-reduce, all-gather, reduce-scatter, all-to-all,
  // collective-permute) of the program the partitions run; its groups are partition ids.
  virtual absl::StatusOr<CollectiveTiming> Time(const hlo::HloInstruction& instr) const = 0;
  // Time(instr).seconds: what the cost model reads. A timer that keeps its timings overrides
  // it so as not to copy a timing's per-link list (a pod-wide collective's touches every link).
  virtual absl::StatusOr<double> Seconds(const hlo::HloInstruction& instr) const {
    absl::StatusOr<CollectiveTiming> timing = Time(instr);
    if (!timing.ok()) return timing.status();
    return timing->seconds;
  }
};

}  // namespace jx::tpu

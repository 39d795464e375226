// LatencyHidingScheduler ("latency-hiding-scheduler", XLA's LHS in spirit): orders every
// computation that holds asynchronous collectives (start/done pairs, made by the target's
// AsyncCollectiveCreator) so that each start runs as early and each done as late as the
// dependencies allow, and the independent compute in between hides the collective's time.
// The order is stored with HloComputation::set_schedule: the order the cost rows, a pod's
// simulated step and the host program follow.
//
// A top-down list scheduler over the dependency graph (operands; side-effecting custom-calls
// keep their order) with a simulated clock:
//   - a done whose collective has finished by now is scheduled at once (it costs nothing and
//     frees its kind's slot), except an all-gather-done: its result outgrows its operand, so it
//     waits until nothing else is ready (its reader is next, as XLA's scheduler puts a done
//     just before its first use), holding its slot: FSDP gathers each weight one layer ahead
//     instead of every weight up front;
//   - else a ready start, if fewer than max_in_flight_per_kind collectives of its kind are in
//     flight (XLA's default: one of each kind);
//   - else ready compute: what a pending start needs first, then in the order the
//     computation had (HloScheduling's memory order); the clock advances by its seconds;
//   - else the done that finishes first (the clock jumps to its end: exposed time).
// Times come from options.estimate_seconds (on a TPU, the cost model, whose collective timer
// times a start's collective on the torus); collectives in flight at once take their turns on
// the interconnect (options.shared_interconnect). Overlap extends live ranges (the operand and the
// result of an in-flight collective, and what the compute in between needs, are live at
// once), so after scheduling the peak of live bytes (options.memory_model; by default
// hlo::PeakMemoryBytes) is checked against options.memory_limit_bytes: while it is over, the
// collectives in flight across the peak (started before it, done after) run without overlap
// (their done right after their start), largest first until their bytes cover the excess, and
// the new peak is looked at again; overlap away from the peak is kept. Should the peak hold no
// overlap, the largest overlapped collectives anywhere are serialized (the fewest such, by
// bisection) until the order fits.
// Either way it is logged under JX_LOG_COMPILES. All of that starts from the stored order (the
// memory scheduler's, chosen before any overlap and by the program's text); when that needs
// serializing or does not fit, it is done again from the plain post order, which computes each
// value near its first reader, and the better schedule is kept (one that fits, then the faster,
// else the lower peak): a list order that gathers every layer's weights up front (MaxText
// 32B's) overlaps into a schedule no serializing brings under the limit. A program that fits
// in no order keeps the overlapped one (it does not fit either way; the step's time is the one
// it would run in).
//
//   LatencyHidingSchedulerOptions options;
//   options.estimate_seconds = [&](const HloInstruction& i) { return model.Cost(i).target.seconds; };
//   HLO_ASSIGN_OR_RETURN(bool changed, LatencyHidingScheduler(options).Run(module));
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "jx/compiler/hlo/hlo_computation.h"
#include "jx/compiler/hlo/hlo_pass.h"
#include "jx/compiler/passes/hlo_scheduling.h"

namespace jx::hlo {

// How a target measures an order's memory: the peak of live bytes of an order of one
// computation's instructions (each once, operands first) and the peak's position in it; and
// the target's way to make that measure for a computation (once per computation: it may
// prepare a view of it).
using MemoryPeakOfOrder = std::function<MemoryPeak(absl::Span<HloInstruction* const>)>;
using MemoryModel = std::function<absl::StatusOr<MemoryPeakOfOrder>(const HloComputation&)>;

struct LatencyHidingSchedulerOptions {
  // Seconds an instruction runs for; for a start, its collective's time on the network (a
  // done's estimate is not used). Required.
  std::function<double(const HloInstruction&)> estimate_seconds;
  // Collectives of one kind (all-reduce, all-gather, ...) in flight at once.
  int64_t max_in_flight_per_kind = 1;
  // Collectives in flight share the chip's interconnect, as the pod step runs them (one ICI
  // lane per chip): a collective's transfer begins when the one started before it ends, so an
  // all-gather in flight beside an all-reduce ends later than alone, and the dones wait for
  // that. false: each runs as if alone (XLA's approximate estimator; kinds never contend).
  bool shared_interconnect = true;
  // The most bytes live at once a schedule may reach, as memory_model measures them.
  int64_t memory_limit_bytes = std::numeric_limits<int64_t>::max();
  // How an order's memory is measured: given a computation, the function that returns the
  // peak of live bytes of an order of its instructions and the peak's position in that order.
  // Unset: hlo::FindMemoryPeak (every value a buffer of its own, as the program's text says). A
  // target whose chip holds some values otherwise (a TPU reads the MXU's operands as stored and
  // keeps an async collective's result in its start's buffer) gives its own view, the one its
  // memory report uses, so the limit is checked against the memory the chip would hold.
  MemoryModel memory_model;
};

// What scheduling one computation did.
struct LatencyHidingSchedule {
  std::vector<HloInstruction*> order;
  int64_t overlapped = 0;       // collectives with compute time between start and done
  int64_t serialized = 0;       // collectives run without overlap to stay under the limit
  double estimated_seconds = 0;  // the simulated clock at the end
  int64_t peak_memory_bytes = 0;
};

// The schedule of one computation (every instruction once, operands first); fails only
// where options.memory_model does.
absl::StatusOr<LatencyHidingSchedule> ScheduleForLatencyHiding(const HloComputation& computation,
                                                               const LatencyHidingSchedulerOptions& options);

class LatencyHidingScheduler : public HloPass {
 public:
  explicit LatencyHidingScheduler(LatencyHidingSchedulerOptions options) : options_(std::move(options)) {}
  std::string_view name() const override { return "latency-hiding-scheduler"; }
  absl::StatusOr<bool> Run(HloModule* module) override;

 private:
  LatencyHidingSchedulerOptions options_;
};

}  // namespace jx::hlo

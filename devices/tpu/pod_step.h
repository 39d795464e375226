// One step of an SPMD program on the chips of a pod, in simulated time: every chip runs the
// program's instructions (the cost rows, in the schedule's order) from its own clock. At a
// collective the partners synchronize: a group's members (replica_groups), or for a
// collective-permute each chip with the chips it sends to and receives from. The collective
// begins when the last partner arrives and its ICI lanes are free, and runs on every
// member's ICI lane for the interconnect's time.
//   - A synchronous collective holds its chips until it ends: all of it is exposed.
//   - An asynchronous one (a start/done pair the latency-hiding scheduler spaced) lets the
//     chips go on with the compute after the start; the done waits for the collective's end.
//     Only that wait is exposed; the rest overlapped compute.
// Time a chip waits for a late partner is idle. StepReport is what a run of a pod program
// reports (PodProgram::last_step()).
//
//   std::vector<PodStepRow> rows = PodStepRowsOf(*module, cost, num_chips, spec, &timer).value();
//   PodTimelines step = SchedulePodStep(cost, rows, starts, hbm_bw);
//   StepReport report = ...;                // built by the pod program after the run
//   std::cout << report.ToString();         // wall time, per chip and per collective split
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "jx/compiler/backend/tpu/collective_timer.h"
#include "jx/compiler/backend/tpu/tpu_chip_spec.h"
#include "jx/compiler/hlo/hlo_module.h"
#include "jx/core/executable.h"
#include "jx/devices/tpu/chip_clock.h"

namespace jx::tpu {

class TpuChip;

struct PodStepLoop;

// A collective's partners as lists of partitions, shared by the rows of collectives with the
// same partners: a pod-wide list names every device (18432 on a v7 pod) and a step's
// thousands of collectives repeat a few lists, so rows hold one copy of each and memos over
// lists (chip_classes.cc) key them by identity(), one lookup per row instead of a hash of
// every id. Copies share the lists; they are never modified.
class PartnerGroups {
 public:
  using Lists = std::vector<std::vector<int64_t>>;
  PartnerGroups() = default;
  PartnerGroups(Lists lists)  // NOLINT: a list converts, as before the lists were shared
      : lists_(lists.empty() ? nullptr : std::make_shared<const Lists>(std::move(lists))) {}
  PartnerGroups(std::initializer_list<std::vector<int64_t>> lists) : PartnerGroups(Lists(lists)) {}

  bool empty() const { return lists_ == nullptr; }
  size_t size() const { return lists_ == nullptr ? 0 : lists_->size(); }
  const std::vector<int64_t>& operator[](size_t i) const { return (*lists_)[i]; }
  Lists::const_iterator begin() const { return lists_ == nullptr ? Lists::const_iterator() : lists_->begin(); }
  Lists::const_iterator end() const { return lists_ == nullptr ? Lists::const_iterator() : lists_->end(); }
  const Lists& lists() const;
  // The same for every copy of one list; different lists (even equal ones made apart) differ.
  const void* identity() const { return lists_.get(); }

 private:
  std::shared_ptr<const Lists> lists_;
};

// What the pod step needs of a cost row beyond its time.
struct PodStepRow {
  // A collective's (or a start's) partners: the replica groups (every partition for {}), or
  // a collective-permute's (source, target) pairs. Empty: not a collective, or one that
  // moves nothing between chips.
  PartnerGroups groups;
  bool async_start = false;  // a start: the chips go on; its done waits
  int64_t start_row = -1;    // a done: the row of its start (in the same list)
  // A while loop with a known trip count whose body has collectives: the body's rows run
  // trip-count times in place of the loop's own row (its collectives synchronize each trip).
  // A conditional whose costliest branch (the one the cost model charges) has collectives:
  // that branch's rows, once.
  std::shared_ptr<const PodStepLoop> loop;
};

struct PodStepLoop {
  int64_t trips = 0;
  std::vector<InstructionCost> costs;  // the body's rows, in the order it runs
  std::vector<PodStepRow> rows;        // one per cost
};

// The rows of an optimized module's entry (one per row of `cost`, found by name); loop
// bodies are costed on `spec`, their collectives timed by `timer`.
absl::StatusOr<std::vector<PodStepRow>> PodStepRowsOf(const hlo::HloModule& module, const CostAnalysis& cost,
                                                      int64_t num_partitions, const TpuChipSpec& spec,
                                                      const CollectiveTimer* timer);

// One collective's time over the step (a synchronous collective's or a start's row).
struct CollectiveRun {
  const InstructionCost* row = nullptr;  // in the cost analysis, or a loop body's costs
  int64_t runs = 0;
  double seconds = 0;          // on the interconnect, all runs
  double exposed_seconds = 0;  // what the chip that waited longest waited for it, all runs
};

// Lays out one run on chips whose clocks stand at starts[p] (as ScheduleStep does for one
// chip, collectives synchronized as above). Returns one timeline per chip; each timeline's
// busy.ici is the chip's communication time.
struct PodTimelines {
  std::vector<StepTimeline> chips;
  std::vector<double> idle_seconds;     // per chip: waiting for partners
  std::vector<double> exposed_seconds;  // per chip: waiting for collectives to end
  std::vector<CollectiveRun> collectives;  // in program order
};
PodTimelines SchedulePodStep(const CostAnalysis& cost, absl::Span<const PodStepRow> rows,
                             absl::Span<const double> starts, double hbm_bandwidth);

struct ChipStepReport {
  std::string chip;               // "TPU_3(process=0,(1,1,0,0))"
  double start_seconds = 0;       // the chip's clock when the step began
  double end_seconds = 0;
  double compute_seconds = 0;     // busy on MXU/VPU/DMA (HBM traffic not overlapped)
  double communication_seconds = 0;  // collectives on the ICI lane
  double exposed_communication_seconds = 0;  // of that, what the chip waited for (not hidden)
  double idle_seconds = 0;        // waiting for partners at collectives
  int64_t hbm_high_water_bytes = 0;  // the chip's HBM peak so far
};

struct LinkTraffic {
  std::string link;   // "chip 0 (0,0) -> chip 1 (0,1), axis 1 +"
  int64_t bytes = 0;  // carried this step
  double busy_seconds = 0;     // collectives using the link this step
  double exposed_seconds = 0;  // of that, time no compute of its chips hid (chips waited)
};

// One collective instruction of a step, over all its runs (a collective in a loop body runs
// once per trip). Asynchronous collectives (start/done pairs) are listed by their start.
struct CollectiveStepEntry {
  std::string name;            // HLO instruction ("all-reduce-start.3")
  std::string kind;            // "all-reduce", "all-gather", "reduce-scatter", "all-to-all",
                               // "collective-permute"
  int64_t runs = 1;            // times it ran this step
  int64_t bytes = 0;           // per chip per run: the bytes of its result (TPU.md's V)
  double seconds = 0;          // on the interconnect, all runs together
  double exposed_seconds = 0;  // of those, what the slowest chip waited at the done (the rest
                               // overlapped independent compute)
  std::string algorithm{};     // the interconnect's words ("bidi ring over torus axis 0 (wraps)")
};

struct StepReport {
  std::string what;          // "jit(f)"
  double wall_seconds = 0;   // first start to last end: the slowest chip sets it
  std::vector<ChipStepReport> chips;  // in partition order
  std::vector<LinkTraffic> links;     // links that carried bytes, busiest first
  std::vector<CollectiveStepEntry> collectives;  // in program order
  int64_t total_link_bytes() const;
  // Communication summed over `collectives`: all of it, the part chips waited for, and the
  // part hidden behind compute (communication - exposed).
  double communication_seconds() const;
  double exposed_communication_seconds() const;
  double overlapped_communication_seconds() const {
    return communication_seconds() - exposed_communication_seconds();
  }
  // A table: one line per chip (times in us), the collectives (overlapped and exposed), then
  // the busiest links.
  std::string ToString() const;
};

// A chip's line of a step's report from its timeline (hbm_high_water_bytes is the caller's):
// compute is what the chip was neither waiting for partners (idle) nor for collectives
// (exposed communication).
ChipStepReport ChipStepReportOf(const PodTimelines& step, size_t partition, std::string chip);

// Fills report->collectives (per collective: runs, time, exposed time, its kind and per-chip
// bytes from `module`, its algorithm) and report->links (per link: bytes, and busy and exposed
// seconds of the collectives using it; busiest first). timing_of: a collective's timing by
// name (null when untimed); describe_link: a link id's words.
void AddCollectivesAndLinks(const PodTimelines& step, const hlo::HloModule& module,
                            absl::FunctionRef<const CollectiveTiming*(std::string_view)> timing_of,
                            absl::FunctionRef<std::string(int64_t)> describe_link, StepReport* report);

}  // namespace jx::tpu

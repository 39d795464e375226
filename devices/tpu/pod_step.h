// One step of an SPMD program on the chips of a pod, in simulated time: every chip runs the
// program's instructions from its own clock; at each collective the members of a group
// synchronize: the collective starts when the last member arrives (the others wait: idle
// time), occupies every member's ICI lane for the interconnect's time, and ends for all at
// once. StepReport is what a run of a pod program reports (PodProgram::last_step()).
//
//   std::vector<StepTimeline> steps = SchedulePodStep(cost, sync_groups, starts, hbm_bw);
//   StepReport report = ...;                // built by the pod program after the run
//   std::cout << report.ToString();         // wall time, per chip compute/comm/idle, links
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "jx/core/executable.h"
#include "jx/devices/tpu/chip_clock.h"

namespace jx::tpu {

class TpuChip;

// Per row of cost.instructions: the groups (partition indices) that synchronize at it; empty
// for rows that are not collectives.
using SyncGroups = std::vector<std::vector<std::vector<int64_t>>>;

// Lays out one run on chips whose clocks stand at starts[p] (as ScheduleStep does for one
// chip, collectives synchronized as above). Returns one timeline per chip; each timeline's
// busy.ici is the chip's communication time and idle_seconds[p] its waiting.
struct PodTimelines {
  std::vector<StepTimeline> chips;
  std::vector<double> idle_seconds;
};
PodTimelines SchedulePodStep(const CostAnalysis& cost, const SyncGroups& sync, absl::Span<const double> starts,
                             double hbm_bandwidth);

struct ChipStepReport {
  std::string chip;               // "TPU_3(process=0,(1,1,0,0))"
  double start_seconds = 0;       // the chip's clock when the step began
  double end_seconds = 0;
  double compute_seconds = 0;     // busy on MXU/VPU/DMA (HBM traffic not overlapped)
  double communication_seconds = 0;  // collectives on the ICI lane
  double idle_seconds = 0;        // waiting for the group at collectives
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
  std::string algorithm;       // the interconnect's words ("bidi ring over torus axis 0 (wraps)")
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
  // A table: one line per chip (times in us), then the busiest links.
  std::string ToString() const;
};

}  // namespace jx::tpu

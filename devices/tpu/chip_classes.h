// Chips of one SPMD step whose timelines are provably identical, so a pod of thousands of
// chips is laid out by scheduling one representative per class (cost once, replicate).
//
// Every chip runs the same cost rows; chips differ only in when they start and in whom they
// wait for at collectives. Classes are refined row by row: chips start in one class per start
// time, and at a collective a chip's new class is (its class, the set of classes of its group's
// members), or (its class, "in no group"). Chips that share a class before a row have equal
// clocks; a group's start is the latest of its members' clocks, so it depends only on that set
// of classes, and chips sharing the pair again have equal clocks after the row. The final
// classes are the refinement over all rows. Where collectives differ (the ends of a line, an
// uneven ppermute), the chips fall into different classes and stay exact.
//
//   ChipClasses c = GroupIdenticalChips(sync, starts);
//   PodTimelines reps = SchedulePodStep(cost, c.sync, c.RepresentativeStarts(starts), bw);
//   reps.chips[c.class_of[p]];   // chip p's timeline
#pragma once

#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "jx/devices/tpu/pod_step.h"

namespace jx::tpu {

struct ChipClasses {
  std::vector<int64_t> class_of;        // per chip
  std::vector<int64_t> representative;  // per class: its first chip
  std::vector<int64_t> size;            // per class: how many chips
  // The rows' sync groups over class indices (each class once per row): what the
  // representatives wait for. Feed it to SchedulePodStep with one start per class.
  SyncGroups sync;
  int64_t num_classes() const { return static_cast<int64_t>(representative.size()); }
  std::vector<double> RepresentativeStarts(absl::Span<const double> starts) const;
};

ChipClasses GroupIdenticalChips(const SyncGroups& sync, absl::Span<const double> starts);

}  // namespace jx::tpu

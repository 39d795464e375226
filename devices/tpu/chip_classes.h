// Chips of one SPMD step whose timelines are provably identical, so a pod of thousands of
// chips is laid out by scheduling one representative per class (cost once, replicate).
//
// Every chip runs the same rows; chips differ only in when they start and in whom they wait
// for at collectives (pod_step.h: a chip begins a collective at the latest arrival among the
// members of the groups, or permute pairs, it belongs to). Classes are refined row by row, in
// the order the step runs them (loop bodies pass by pass until nothing splits): chips start in
// one class per start time, and at a collective a chip's new class is (its class, the set of
// classes of its partners), or (its class, "takes no part"). Chips sharing a class before a
// row have equal clocks and lanes; their begin is the latest clock of their partners, which
// depends only on those partners' classes, so they share the pair again and stay equal. Where
// collectives differ (the ends of a line, an uneven ppermute), chips fall into different
// classes and stay exact.
//
//   ChipClasses c = GroupIdenticalChips(rows, starts);
//   PodTimelines reps = SchedulePodStep(cost, c.rows, c.RepresentativeStarts(starts), bw);
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
  // The rows over class indices: a collective's partners as groups of classes ({c, d} for
  // each class d a chip of class c waits for, {c} when only its own). Feed them to
  // SchedulePodStep with one start per class.
  std::vector<PodStepRow> rows;
  int64_t num_classes() const { return static_cast<int64_t>(representative.size()); }
  std::vector<double> RepresentativeStarts(absl::Span<const double> starts) const;
};

ChipClasses GroupIdenticalChips(absl::Span<const PodStepRow> rows, absl::Span<const double> starts);

}  // namespace jx::tpu

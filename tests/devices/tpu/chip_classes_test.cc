// GroupIdenticalChips: chips whose step timelines are provably identical share a class, and
// scheduling one representative per class gives every chip the timeline SchedulePodStep gives
// it when all chips are scheduled.
#include "jx/devices/tpu/chip_classes.h"

#include <gtest/gtest.h>

#include <numeric>

namespace jx::tpu {
namespace {

InstructionCost Row(std::string name, std::string unit, double seconds) {
  InstructionCost r;
  r.name = std::move(name);
  r.opcode = unit == "ici" ? "all-reduce" : "fusion";
  r.unit = std::move(unit);
  r.seconds = seconds;
  return r;
}

std::vector<int64_t> Range(int64_t lo, int64_t hi) {
  std::vector<int64_t> v(static_cast<size_t>(hi - lo));
  std::iota(v.begin(), v.end(), lo);
  return v;
}

// Every chip's timeline from the classes equals the one scheduling all chips gives.
void ExpectSameAsFullSchedule(const CostAnalysis& cost, const SyncGroups& sync, const std::vector<double>& starts) {
  const PodTimelines full = SchedulePodStep(cost, sync, starts, 1e12);
  const ChipClasses c = GroupIdenticalChips(sync, starts);
  const PodTimelines reps = SchedulePodStep(cost, c.sync, c.RepresentativeStarts(starts), 1e12);
  for (size_t p = 0; p < starts.size(); ++p) {
    const int64_t k = c.class_of[p];
    EXPECT_DOUBLE_EQ(reps.chips[k].start_seconds, full.chips[p].start_seconds) << "chip " << p;
    EXPECT_DOUBLE_EQ(reps.chips[k].seconds, full.chips[p].seconds) << "chip " << p;
    EXPECT_DOUBLE_EQ(reps.idle_seconds[k], full.idle_seconds[p]) << "chip " << p;
    EXPECT_DOUBLE_EQ(reps.chips[k].busy.ici, full.chips[p].busy.ici) << "chip " << p;
  }
}

TEST(ChipClassesTest, ChipsOfOneUniformProgramAreOneClass) {
  CostAnalysis cost;
  cost.instructions = {Row("a", "mxu", 1e-3), Row("ar", "ici", 2e-3), Row("b", "vpu", 1e-3)};
  cost.predicted_seconds = 4e-3;
  const int64_t n = 4096;
  SyncGroups sync(3);
  for (int64_t g = 0; g < n / 16; ++g) sync[1].push_back(Range(g * 16, g * 16 + 16));
  const std::vector<double> starts(n, 0.0);
  const ChipClasses c = GroupIdenticalChips(sync, starts);
  EXPECT_EQ(c.num_classes(), 1);
  EXPECT_EQ(c.size[0], n);
  ASSERT_EQ(c.sync[1].size(), 1u);
  EXPECT_EQ(c.sync[1][0], std::vector<int64_t>{0});
  ExpectSameAsFullSchedule(cost, sync, starts);
}

TEST(ChipClassesTest, ChipsOutsideACollectiveAndLateStartersSplitOff) {
  CostAnalysis cost;
  cost.instructions = {Row("a", "mxu", 1e-3), Row("perm", "ici", 2e-3), Row("b", "vpu", 1e-3),
                       Row("ar", "ici", 3e-3), Row("c", "mxu", 1e-3)};
  cost.predicted_seconds = 8e-3;
  // A ppermute along a line 0 -> 1 -> 2 (chip 3 takes no part), then an all-reduce in pairs.
  SyncGroups sync(5);
  sync[1] = {{0, 1, 2}};
  sync[3] = {{0, 1}, {2, 3}};
  std::vector<double> starts{0, 0, 0, 0};
  const ChipClasses c = GroupIdenticalChips(sync, starts);
  EXPECT_EQ(c.class_of[0], c.class_of[1]);
  EXPECT_NE(c.class_of[2], c.class_of[3]);
  ExpectSameAsFullSchedule(cost, sync, starts);
  // A chip that starts late makes its group wait.
  starts = {0, 0, 5e-4, 0};
  EXPECT_EQ(GroupIdenticalChips(sync, starts).num_classes(), 3);
  ExpectSameAsFullSchedule(cost, sync, starts);
}

TEST(ChipClassesTest, ManyDifferentGroupsMatchTheFullSchedule) {
  CostAnalysis cost;
  SyncGroups sync;
  const int64_t n = 24;
  for (int r = 0; r < 12; ++r) {
    cost.instructions.push_back(Row("f" + std::to_string(r), r % 2 ? "mxu" : "vpu", 1e-4 * (r + 1)));
    sync.emplace_back();
    cost.instructions.push_back(Row("c" + std::to_string(r), "ici", 2e-4));
    std::vector<std::vector<int64_t>> groups;
    const int64_t size = r % 3 == 0 ? 24 : r % 3 == 1 ? 6 : 4;
    for (int64_t g = 0; g + size <= n - (r % 4 == 3 ? size : 0); g += size) groups.push_back(Range(g, g + size));
    sync.push_back(groups);
  }
  cost.predicted_seconds = 1;
  std::vector<double> starts(n, 0.0);
  starts[5] = 3e-4;
  starts[17] = 1e-4;
  ExpectSameAsFullSchedule(cost, sync, starts);
}

}  // namespace
}  // namespace jx::tpu

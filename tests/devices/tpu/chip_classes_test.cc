// GroupIdenticalChips: chips whose step timelines are provably identical share a class, and
// scheduling one representative per class gives every chip the timeline SchedulePodStep gives
// it when all chips are scheduled.
#include "jx/devices/tpu/chip_classes.h"

#include <gtest/gtest.h>

#include <numeric>

namespace jx::tpu::chip_classes_test {
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

// Per cost row: the groups that synchronize at it (empty for rows that are not collectives).
using SyncGroups = std::vector<std::vector<std::vector<int64_t>>>;

std::vector<PodStepRow> RowsOf(const SyncGroups& sync) {
  std::vector<PodStepRow> rows(sync.size());
  for (size_t i = 0; i < sync.size(); ++i) rows[i].groups = sync[i];
  return rows;
}

// Every chip's timeline from the classes equals the one scheduling all chips gives.
void ExpectSameAsFullSchedule(const CostAnalysis& cost, const std::vector<PodStepRow>& rows,
                              const std::vector<double>& starts) {
  const PodTimelines full = SchedulePodStep(cost, rows, starts, 1e12);
  const ChipClasses c = GroupIdenticalChips(rows, starts);
  const PodTimelines reps = SchedulePodStep(cost, c.rows, c.RepresentativeStarts(starts), 1e12);
  for (size_t p = 0; p < starts.size(); ++p) {
    const int64_t k = c.class_of[p];
    EXPECT_DOUBLE_EQ(reps.chips[k].start_seconds, full.chips[p].start_seconds) << "chip " << p;
    EXPECT_DOUBLE_EQ(reps.chips[k].seconds, full.chips[p].seconds) << "chip " << p;
    EXPECT_DOUBLE_EQ(reps.idle_seconds[k], full.idle_seconds[p]) << "chip " << p;
    EXPECT_DOUBLE_EQ(reps.chips[k].busy.ici, full.chips[p].busy.ici) << "chip " << p;
    EXPECT_DOUBLE_EQ(reps.exposed_seconds[k], full.exposed_seconds[p]) << "chip " << p;
  }
}

void ExpectSameAsFullSchedule(const CostAnalysis& cost, const SyncGroups& sync, const std::vector<double>& starts) {
  ExpectSameAsFullSchedule(cost, RowsOf(sync), starts);
}

TEST(ChipClassesTest, ChipsOfOneUniformProgramAreOneClass) {
  CostAnalysis cost;
  cost.instructions = {Row("a", "mxu", 1e-3), Row("ar", "ici", 2e-3), Row("b", "vpu", 1e-3)};
  cost.predicted_seconds = 4e-3;
  const int64_t n = 4096;
  SyncGroups sync(3);
  for (int64_t g = 0; g < n / 16; ++g) sync[1].push_back(Range(g * 16, g * 16 + 16));
  const std::vector<double> starts(n, 0.0);
  const ChipClasses c = GroupIdenticalChips(RowsOf(sync), starts);
  EXPECT_EQ(c.num_classes(), 1);
  EXPECT_EQ(c.size[0], n);
  ASSERT_EQ(c.rows[1].groups.size(), 1u);
  EXPECT_EQ(c.rows[1].groups[0], std::vector<int64_t>{0});
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
  const ChipClasses c = GroupIdenticalChips(RowsOf(sync), starts);
  EXPECT_EQ(c.class_of[0], c.class_of[1]);
  EXPECT_NE(c.class_of[2], c.class_of[3]);
  ExpectSameAsFullSchedule(cost, sync, starts);
  // A chip that starts late makes its group wait.
  starts = {0, 0, 5e-4, 0};
  EXPECT_EQ(GroupIdenticalChips(RowsOf(sync), starts).num_classes(), 3);
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

// A step repeats a few group lists; one that split nothing before the classes changed can
// split them afterwards (GroupIdenticalChips remembers only the lists that settled under the
// current classes).
TEST(ChipClassesTest, ARepeatedListSplitsClassesThatChangedSinceItWasSeen) {
  CostAnalysis cost;
  cost.instructions = {Row("pairs", "ici", 1e-3), Row("three", "ici", 2e-3), Row("pairs-again", "ici", 1e-3),
                       Row("f", "mxu", 1e-3)};
  cost.predicted_seconds = 1;
  const SyncGroups sync = {{{0, 1}, {2, 3}, {4, 5}}, {{0, 1, 2}}, {{0, 1}, {2, 3}, {4, 5}}, {}};
  const std::vector<double> starts(6, 0.0);
  const ChipClasses c = GroupIdenticalChips(RowsOf(sync), starts);
  // After "three" (chips 3-5 take no part), chip 2 waits with chip 3 at "pairs-again".
  EXPECT_EQ(c.num_classes(), 4);
  EXPECT_EQ(c.class_of[0], c.class_of[1]);
  EXPECT_EQ(c.class_of[4], c.class_of[5]);
  EXPECT_NE(c.class_of[2], c.class_of[0]);
  EXPECT_NE(c.class_of[3], c.class_of[4]);
  ExpectSameAsFullSchedule(cost, sync, starts);
}

// A collective-permute synchronizes pairs: a chip of a line waits for its two neighbours, so
// the ends and a late starter's neighbours split off; an asynchronous start lets compute run
// until its done; a loop's body runs per trip.
TEST(ChipClassesTest, PermutePairsAsyncPairsAndLoopsMatchTheFullSchedule) {
  CostAnalysis cost;
  cost.instructions = {Row("a", "mxu", 1e-3), Row("perm-start", "ici", 2e-3), Row("b", "vpu", 1.5e-3),
                       Row("perm-done", "", 0),  Row("loop", "vpu", 1e-3),      Row("c", "mxu", 1e-3)};
  cost.predicted_seconds = 1;
  const int64_t n = 12;
  std::vector<PodStepRow> rows(cost.instructions.size());
  PartnerGroups::Lists line, ring;
  for (int64_t p = 0; p + 1 < n; ++p) line.push_back({p, p + 1});  // a shift along a line
  for (int64_t p = 0; p < n; ++p) ring.push_back({p, (p + 1) % n});  // a ring shift
  rows[1].groups = line;
  rows[1].async_start = true;
  rows[3].start_row = 1;
  auto loop = std::make_shared<PodStepLoop>();
  loop->trips = 3;
  loop->costs = {Row("body", "mxu", 2e-4), Row("ring", "ici", 5e-4)};
  loop->rows.resize(2);
  loop->rows[1].groups = ring;
  rows[4].loop = loop;
  std::vector<double> starts(n, 0.0);
  ExpectSameAsFullSchedule(cost, rows, starts);
  starts[6] = 7e-4;
  ExpectSameAsFullSchedule(cost, rows, starts);
  const ChipClasses c = GroupIdenticalChips(rows, starts);
  EXPECT_LT(c.num_classes(), n);  // the far ends of the line stay alike until the ring
  EXPECT_GT(c.num_classes(), 2);
}

}  // namespace
}  // namespace jx::tpu::chip_classes_test

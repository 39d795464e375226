// A pod's step in simulated time: a synchronous collective holds its chips; an asynchronous
// one (start/done) runs on the ICI lane while the chips compute, and only the wait at the
// done is exposed; a collective-permute synchronizes each source with its target only; the
// report prints overlapped against exposed time.
#include "jx/devices/tpu/pod_step.h"
#include "jx/devices/tpu/pod_plan.h"
#include "jx/devices/tpu/step_communication.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "jx/compiler/hlo/hlo_module.h"
#include "jx/compiler/hlo/hlo_parser.h"
#include "jx/devices/tpu/chip_specs.h"

namespace jx::tpu::pod_step_test {
namespace {

using ::testing::HasSubstr;

InstructionCost Compute(std::string name, double seconds) {
  return {.name = std::move(name), .opcode = "fusion", .unit = "vpu", .seconds = seconds, .bound_by = "compute"};
}
InstructionCost Network(std::string name, std::string opcode, double seconds) {
  return {.name = std::move(name), .opcode = std::move(opcode), .unit = "ici", .seconds = seconds, .bound_by = ""};
}

CostAnalysis Costs(std::vector<InstructionCost> rows) {
  CostAnalysis cost;
  for (const InstructionCost& r : rows) cost.predicted_seconds += r.seconds;
  cost.instructions = std::move(rows);
  return cost;
}

const std::vector<std::vector<int64_t>> kAllFour = {{0, 1, 2, 3}};

TEST(PodStepTest, ASynchronousCollectiveIsAllExposed) {
  // a (4 us), all-reduce (10 us), b (4 us).
  const CostAnalysis cost = Costs({Compute("a", 4e-6), Network("ar", "all-reduce", 10e-6), Compute("b", 4e-6)});
  std::vector<PodStepRow> rows(3);
  rows[1].groups = kAllFour;
  const PodTimelines step = SchedulePodStep(cost, rows, {0, 0, 0, 0}, 0);
  for (int p = 0; p < 4; ++p) {
    EXPECT_NEAR(step.chips[p].seconds, 18e-6, 1e-15);
    EXPECT_NEAR(step.chips[p].busy.ici, 10e-6, 1e-15);
    EXPECT_NEAR(step.exposed_seconds[p], 10e-6, 1e-15);
  }
  ASSERT_EQ(step.collectives.size(), 1u);
  EXPECT_EQ(step.collectives[0].row, &cost.instructions[1]);
  EXPECT_EQ(step.collectives[0].runs, 1);
  EXPECT_NEAR(step.collectives[0].exposed_seconds, 10e-6, 1e-15);
}

TEST(PodStepTest, IndependentComputeHidesAnAsynchronousCollective) {
  // start (10 us on the ICI), a (4 us) beside it, done, b (4 us).
  const CostAnalysis cost = Costs({Network("ars", "all-reduce-start", 10e-6), Compute("a", 4e-6),
                                   Network("ard", "all-reduce-done", 0), Compute("b", 4e-6)});
  std::vector<PodStepRow> rows(4);
  rows[0].groups = kAllFour;
  rows[0].async_start = true;
  rows[2].start_row = 0;
  const PodTimelines step = SchedulePodStep(cost, rows, {0, 0, 0, 0}, 0);
  for (int p = 0; p < 4; ++p) {
    SCOPED_TRACE(p);
    // 14 us instead of the rows' 18: a's 4 us ran while the collective did.
    EXPECT_NEAR(step.chips[p].seconds, 14e-6, 1e-15);
    EXPECT_NEAR(step.exposed_seconds[p], 6e-6, 1e-15);
    EXPECT_NEAR(step.idle_seconds[p], 0, 1e-15);
    // The collective on the ICI lane from 0, a on the VPU from 0: side by side.
    ASSERT_GE(step.chips[p].instructions.size(), 2u);
    EXPECT_EQ(step.chips[p].instructions[0].lane, "ICI");
    EXPECT_DOUBLE_EQ(step.chips[p].instructions[0].start_seconds, 0);
    EXPECT_EQ(step.chips[p].instructions[1].lane, "VPU");
    EXPECT_DOUBLE_EQ(step.chips[p].instructions[1].start_seconds, 0);
  }
  ASSERT_EQ(step.collectives.size(), 1u);
  EXPECT_NEAR(step.collectives[0].seconds, 10e-6, 1e-15);
  EXPECT_NEAR(step.collectives[0].exposed_seconds, 6e-6, 1e-15);

  // The same rows with the done before a (a consumes the result): nothing hidden.
  const CostAnalysis dependent = Costs({Network("ars", "all-reduce-start", 10e-6), Network("ard", "all-reduce-done", 0),
                                        Compute("a", 4e-6), Compute("b", 4e-6)});
  std::vector<PodStepRow> dependent_rows(4);
  dependent_rows[0] = rows[0];
  dependent_rows[1].start_row = 0;
  const PodTimelines waits = SchedulePodStep(dependent, dependent_rows, {0, 0, 0, 0}, 0);
  EXPECT_NEAR(waits.chips[0].seconds, 18e-6, 1e-15);
  EXPECT_NEAR(waits.collectives[0].exposed_seconds, 10e-6, 1e-15);
}

TEST(PodStepTest, ALatePartnerIsIdleTimeNotCommunication) {
  const CostAnalysis cost = Costs({Network("ars", "all-reduce-start", 10e-6), Compute("a", 4e-6),
                                   Network("ard", "all-reduce-done", 0)});
  std::vector<PodStepRow> rows(3);
  rows[0].groups = kAllFour;
  rows[0].async_start = true;
  rows[2].start_row = 0;
  // Chip 3 starts 20 us late: the collective begins at 20 us for everyone.
  const PodTimelines step = SchedulePodStep(cost, rows, {0, 0, 0, 20e-6}, 0);
  EXPECT_NEAR(step.chips[0].start_seconds + step.chips[0].seconds, 30e-6, 1e-15);
  EXPECT_NEAR(step.chips[3].start_seconds + step.chips[3].seconds, 30e-6, 1e-15);
  EXPECT_NEAR(step.idle_seconds[0], 16e-6, 1e-15);  // from a's end (4 us) to the start (20 us)
  EXPECT_NEAR(step.exposed_seconds[0], 10e-6, 1e-15);
  EXPECT_NEAR(step.idle_seconds[3], 0, 1e-15);
  EXPECT_NEAR(step.exposed_seconds[3], 6e-6, 1e-15);
  EXPECT_NEAR(step.collectives[0].exposed_seconds, 10e-6, 1e-15);  // the chip that waited longest
}

TEST(PodStepTest, CollectivePermuteSynchronizesEachPairOnly) {
  const CostAnalysis cost = Costs({Network("cp", "collective-permute", 2e-6)});
  std::vector<PodStepRow> rows(1);
  rows[0].groups = {{0, 1}, {2, 3}};  // 0 -> 1, 2 -> 3
  const PodTimelines step = SchedulePodStep(cost, rows, {0, 0, 0, 5e-6}, 0);
  // Chips 0 and 1 do not wait for chip 3.
  EXPECT_NEAR(step.chips[0].seconds, 2e-6, 1e-15);
  EXPECT_NEAR(step.chips[1].seconds, 2e-6, 1e-15);
  EXPECT_NEAR(step.idle_seconds[0], 0, 1e-15);
  EXPECT_NEAR(step.idle_seconds[2], 5e-6, 1e-15);
  EXPECT_NEAR(step.chips[2].seconds, 7e-6, 1e-15);
}

TEST(PodStepTest, ALoopsCollectiveRunsOncePerTrip) {
  // A loop whose row stands for 3 trips of its body: compute (2 us), all-reduce (5 us).
  const CostAnalysis cost = Costs({Compute("before", 1e-6), {.name = "while.1", .opcode = "while", .unit = "ici",
                                                             .seconds = 21e-6, .bound_by = ""}});
  auto loop = std::make_shared<PodStepLoop>();
  loop->trips = 3;
  loop->costs = {Compute("body.a", 2e-6), Network("body.ar", "all-reduce", 5e-6)};
  loop->rows.resize(2);
  loop->rows[1].groups = kAllFour;
  std::vector<PodStepRow> rows(2);
  rows[1].loop = loop;
  // Chip 1 starts 1 us late: every trip's all-reduce waits for it once, the first.
  const PodTimelines step = SchedulePodStep(cost, rows, {0, 1e-6, 0, 0}, 0);
  ASSERT_EQ(step.collectives.size(), 1u);
  EXPECT_EQ(step.collectives[0].row, &loop->costs[1]);
  EXPECT_EQ(step.collectives[0].runs, 3);
  EXPECT_NEAR(step.collectives[0].seconds, 15e-6, 1e-15);
  EXPECT_NEAR(step.collectives[0].exposed_seconds, 15e-6, 1e-15);
  EXPECT_NEAR(step.chips[0].start_seconds + step.chips[0].seconds, 23e-6, 1e-15);
  EXPECT_NEAR(step.idle_seconds[0], 1e-6, 1e-15);
  EXPECT_NEAR(step.chips[0].busy.ici, 15e-6, 1e-15);
  EXPECT_NEAR(step.chips[0].busy.vpu, 7e-6, 1e-15);
}

TEST(PodStepTest, ReportPrintsOverlappedAndExposedTime) {
  StepReport report;
  report.what = "jit(f)";
  report.wall_seconds = 14e-6;
  report.chips.push_back({.chip = "TPU_0", .end_seconds = 14e-6, .compute_seconds = 8e-6,
                          .communication_seconds = 10e-6, .exposed_communication_seconds = 6e-6});
  report.collectives.push_back({.name = "all-reduce-start.1", .kind = "all-reduce", .runs = 1, .bytes = 4096,
                                .seconds = 10e-6, .exposed_seconds = 6e-6, .algorithm = "bidi ring"});
  report.links.push_back({.link = "chip 0 -> chip 1", .bytes = 4096, .busy_seconds = 10e-6, .exposed_seconds = 6e-6});
  EXPECT_NEAR(report.communication_seconds(), 10e-6, 1e-15);
  EXPECT_NEAR(report.exposed_communication_seconds(), 6e-6, 1e-15);
  EXPECT_NEAR(report.overlapped_communication_seconds(), 4e-6, 1e-15);
  const std::string text = report.ToString();
  EXPECT_THAT(text, HasSubstr("communication 10.000 us: exposed 6.000 us, overlapped 4.000 us"));
  EXPECT_THAT(text, HasSubstr("all-reduce-start.1 (all-reduce, 1 run, 4096 bytes): 10.000 us, exposed 6.000 us, "
                              "overlapped 4.000 us; bidi ring"));
  EXPECT_THAT(text, HasSubstr("link chip 0 -> chip 1: 4096 bytes, busy 10.000 us, exposed 6.000 us"));
}

// Per kind: each kind's collectives summed (instructions, runs, time, exposed), the kinds in
// XLA's collective order (all-gather, reduce-scatter, all-reduce, all-to-all,
// collective-permute), kinds that did not run left out; both reports print them.
TEST(PodStepTest, ReportSplitsCommunicationPerCollectiveKind) {
  StepReport report;
  report.what = "jit(f)";
  report.wall_seconds = 100e-6;
  report.chips.push_back({.chip = "TPU_0", .end_seconds = 100e-6});
  report.collectives = {
      {.name = "collective-permute-start.1", .kind = "collective-permute", .runs = 4, .seconds = 8e-6,
       .exposed_seconds = 2e-6},
      {.name = "all-reduce-start.1", .kind = "all-reduce", .runs = 1, .seconds = 10e-6, .exposed_seconds = 6e-6},
      {.name = "all-gather-start.1", .kind = "all-gather", .runs = 2, .seconds = 12e-6, .exposed_seconds = 0},
      {.name = "all-reduce.2", .kind = "all-reduce", .runs = 3, .seconds = 5e-6, .exposed_seconds = 5e-6},
      {.name = "all-gather-start.2", .kind = "all-gather", .runs = 1, .seconds = 3e-6, .exposed_seconds = 1e-6},
  };
  const std::vector<CollectiveKindTotals> kinds = CommunicationByKind(report);
  ASSERT_EQ(kinds.size(), 3u);
  EXPECT_EQ(kinds[0].kind, "all-gather");
  EXPECT_EQ(kinds[0].collectives, 2);
  EXPECT_EQ(kinds[0].runs, 3);
  EXPECT_NEAR(kinds[0].seconds, 15e-6, 1e-15);
  EXPECT_NEAR(kinds[0].exposed_seconds, 1e-6, 1e-15);
  EXPECT_NEAR(kinds[0].overlapped_seconds(), 14e-6, 1e-15);
  EXPECT_EQ(kinds[1].kind, "all-reduce");
  EXPECT_EQ(kinds[1].runs, 4);
  EXPECT_NEAR(kinds[1].seconds, 15e-6, 1e-15);
  EXPECT_NEAR(kinds[1].exposed_seconds, 11e-6, 1e-15);
  EXPECT_EQ(kinds[2].kind, "collective-permute");
  EXPECT_NEAR(kinds[2].overlapped_seconds(), 6e-6, 1e-15);
  // The kinds add up to the step's totals.
  double seconds = 0, exposed = 0;
  for (const CollectiveKindTotals& k : kinds) seconds += k.seconds, exposed += k.exposed_seconds;
  EXPECT_NEAR(seconds, report.communication_seconds(), 1e-15);
  EXPECT_NEAR(exposed, report.exposed_communication_seconds(), 1e-15);

  EXPECT_THAT(report.ToString(), HasSubstr("  all-reduce: 2 collectives, 4 runs: 15.000 us, exposed 11.000 us, "
                                           "overlapped 4.000 us\n"));
  PodPlan plan;
  plan.what = "jit(f)";
  plan.step = report;
  const std::string text = plan.ToString();
  EXPECT_THAT(text, HasSubstr("  all-gather            15.000 us: exposed 1.000 us, overlapped 14.000 us "
                              "(2 collectives, 3 runs)\n"));
  EXPECT_THAT(text, HasSubstr("  collective-permute     8.000 us: exposed 2.000 us, overlapped 6.000 us "
                              "(1 collective, 4 runs)\n"));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("reduce-scatter")));
}

// Rows of collectives with equal partners share one list (PodStepRowsOf keeps one per
// distinct list); different partners get their own, each the instruction's.
TEST(PodStepTest, RowsOfCollectivesWithEqualPartnersShareOneList) {
  const std::string text = R"(HloModule rows

%sum (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %x, f32[] %y)
}

ENTRY %main (a: f32[64]) -> f32[64] {
  %a = f32[64]{0} parameter(0)
  %ar1 = f32[64]{0} all-reduce(f32[64]{0} %a), channel_id=1, replica_groups={{0,1},{2,3}}, to_apply=%sum
  %ar2 = f32[64]{0} all-reduce(f32[64]{0} %ar1), channel_id=2, replica_groups={{0,1},{2,3}}, to_apply=%sum
  %ar3 = f32[64]{0} all-reduce(f32[64]{0} %ar2), channel_id=3, replica_groups={{0,2},{1,3}}, to_apply=%sum
  %cp1 = f32[64]{0} collective-permute(f32[64]{0} %ar3), channel_id=4, source_target_pairs={{0,1},{2,3}}
  ROOT %cp2 = f32[64]{0} collective-permute(f32[64]{0} %cp1), channel_id=5, source_target_pairs={{0,1},{2,3},{5,5}}
}
)";
  absl::StatusOr<std::unique_ptr<hlo::HloModule>> module = hlo::ParseHloModule(text);
  ASSERT_TRUE(module.ok()) << module.status();
  const CostAnalysis cost = Costs({Network("ar1", "all-reduce", 1e-6), Network("ar2", "all-reduce", 1e-6),
                                   Network("ar3", "all-reduce", 1e-6), Network("cp1", "collective-permute", 1e-6),
                                   Network("cp2", "collective-permute", 1e-6)});
  absl::StatusOr<std::vector<PodStepRow>> rows = PodStepRowsOf(**module, cost, 6, ChipSpec("v4"), nullptr);
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->size(), 5u);
  const std::vector<std::vector<int64_t>> pairs_of_rows = {{0, 1}, {2, 3}}, columns = {{0, 2}, {1, 3}};
  EXPECT_EQ((*rows)[0].groups.lists(), pairs_of_rows);
  EXPECT_EQ((*rows)[0].groups.identity(), (*rows)[1].groups.identity());
  EXPECT_EQ((*rows)[2].groups.lists(), columns);
  EXPECT_NE((*rows)[2].groups.identity(), (*rows)[0].groups.identity());
  // A permute's pairs are its partners (a send to itself moves nothing); the same ids as the
  // all-reduce's groups, but a permute's list of its own.
  EXPECT_EQ((*rows)[3].groups.lists(), pairs_of_rows);
  EXPECT_NE((*rows)[3].groups.identity(), (*rows)[0].groups.identity());
  EXPECT_EQ((*rows)[4].groups.lists(), pairs_of_rows);  // other pairs: its own list, equal
  EXPECT_NE((*rows)[4].groups.identity(), (*rows)[3].groups.identity());
}

// Where a chip is two devices (v7's TensorCores), the plan counts devices and says so; where
// it is one, chips.
TEST(PodStepTest, APlanOfTwoDevicesPerChipCountsDevicesAndChips) {
  PodPlan plan;
  plan.what = "jit(f)";
  plan.num_chips = 8;
  EXPECT_THAT(plan.ToString(), HasSubstr(": 8 chips, "));
  EXPECT_THAT(plan.ToString(), HasSubstr("HBM peak per chip"));
  plan.devices_per_chip = 2;
  const std::string text = plan.ToString();
  EXPECT_THAT(text, HasSubstr(": 8 devices (4 chips of 2 TensorCores), "));
  EXPECT_THAT(text, HasSubstr("HBM peak per device"));
  EXPECT_THAT(text, HasSubstr("FLOPs per device"));
  EXPECT_THAT(text, HasSubstr("devices: 0 groups with equal numbers"));
}

}  // namespace
}  // namespace jx::tpu::pod_step_test

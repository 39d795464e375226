// The TPU cost model's collectives: timed by the CollectiveTimer the device layer gives
// (here a fixed one), on the "ici" unit, summed into communication_seconds; local collectives
// (groups of one partition) cost nothing; without a timer a real collective fails the analysis.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>

#include "jx/compiler/backend/tpu/tpu_cost_model.h"
#include "jx/compiler/hlo/hlo_parser.h"
#include "jx/devices/tpu/chip_specs.h"

namespace jx::tpu::collective_cost_model_test {
namespace {

using ::testing::HasSubstr;

class FixedTimer final : public CollectiveTimer {
 public:
  absl::StatusOr<CollectiveTiming> Time(const hlo::HloInstruction& instr) const override {
    ++calls;
    return CollectiveTiming{.seconds = instr.opcode() == hlo::HloOpcode::kAllGather ? 2e-6 : 5e-6};
  }
  mutable int calls = 0;
};

constexpr std::string_view kProgram = R"(HloModule m
%sum (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %x, f32[] %y)
}
ENTRY %main (p: f32[128,128]) -> (f32[128,128], f32[256,128], f32[128,128]) {
  %p = f32[128,128]{1,0} parameter(0)
  %ar = f32[128,128]{1,0} all-reduce(f32[128,128]{1,0} %p), channel_id=1, replica_groups={{0,1}}, use_global_device_ids=true, to_apply=%sum
  %ag = f32[256,128]{1,0} all-gather(f32[128,128]{1,0} %ar), channel_id=2, replica_groups={{0,1}}, dimensions={0}, use_global_device_ids=true
  %local = f32[128,128]{1,0} all-reduce(f32[128,128]{1,0} %p), channel_id=3, replica_groups={{0},{1}}, use_global_device_ids=true, to_apply=%sum
  ROOT %t = (f32[128,128]{1,0}, f32[256,128]{1,0}, f32[128,128]{1,0}) tuple(%ar, %ag, %local)
}
)";

TEST(CollectiveCostModelTest, CollectivesTakeTheTimersTimeOnTheIciUnit) {
  std::unique_ptr<hlo::HloModule> module = hlo::ParseHloModule(kProgram).value();
  FixedTimer timer;
  const CostAnalysis cost = AnalyzeTpuCost(*module, ChipSpec("v5e"), &timer).value();
  EXPECT_EQ(timer.calls, 2);  // the local all-reduce moves nothing between chips
  EXPECT_DOUBLE_EQ(cost.communication_seconds, 7e-6);
  EXPECT_GE(cost.predicted_seconds, 7e-6);
  int ici_rows = 0;
  for (const InstructionCost& row : cost.instructions) {
    if (row.name == "ar" || row.name == "ag") {
      EXPECT_EQ(row.unit, "ici") << row.name;
      EXPECT_DOUBLE_EQ(row.seconds, row.name == "ar" ? 5e-6 : 2e-6);
      ++ici_rows;
    }
    if (row.name == "local") {
      EXPECT_DOUBLE_EQ(row.seconds, 0);
    }
  }
  EXPECT_EQ(ici_rows, 2);
}

TEST(CollectiveCostModelTest, WithoutATimerARealCollectiveFailsTheAnalysis) {
  std::unique_ptr<hlo::HloModule> module = hlo::ParseHloModule(kProgram).value();
  absl::StatusOr<CostAnalysis> cost = AnalyzeTpuCost(*module, ChipSpec("v5e"));
  ASSERT_FALSE(cost.ok());
  EXPECT_THAT(std::string(cost.status().message()), HasSubstr("%ar (all-reduce) exchanges data between partitions"));
}

}  // namespace
}  // namespace jx::tpu::collective_cost_model_test

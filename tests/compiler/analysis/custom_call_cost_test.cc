// Library custom-calls get their arithmetic from a rule registered for their target
// (HloCostAnalysis::RegisterCustomCallCost); without one a custom-call costs only its bytes,
// as XLA's HloCostAnalysis treats an opaque custom-call.
#include <gtest/gtest.h>

#include <memory>
#include <string_view>

#include "jx/compiler/analysis/hlo_cost_analysis.h"
#include "jx/compiler/hlo/hlo_parser.h"

namespace jx::hlo::custom_call_cost_test {
namespace {

constexpr std::string_view kModule = R"(HloModule m
ENTRY e {
  p = f32[8,8] parameter(0)
  ROOT c = f32[8,8] custom-call(p), custom_call_target="%s"
})";

ModuleCost CostWithTarget(std::string_view target) {
  std::string text(kModule);
  text.replace(text.find("%s"), 2, target);
  absl::StatusOr<std::unique_ptr<HloModule>> module = ParseHloModule(text);
  EXPECT_TRUE(module.ok()) << module.status();
  absl::StatusOr<ModuleCost> cost = AnalyzeCost(**module);
  EXPECT_TRUE(cost.ok()) << cost.status();
  return *cost;
}

TEST(CustomCallCostTest, RegisteredRuleGivesFlopsBytesStayDataMovement) {
  HloCostAnalysis::RegisterCustomCallCost("test_cubed", [](const HloInstruction& instr, HloCost* cost) {
    const double n = static_cast<double>(instr.operand(0)->shape().dimensions(0));
    cost->flops = n * n * n;
    cost->transcendentals = n;
  });
  const ModuleCost cost = CostWithTarget("test_cubed");
  EXPECT_EQ(cost.flops, 512);
  EXPECT_EQ(cost.transcendentals, 8);
  EXPECT_EQ(cost.bytes_accessed, 2 * 8 * 8 * 4);  // the operand read, the output written
}

TEST(CustomCallCostTest, UnknownTargetCostsOnlyBytes) {
  const ModuleCost cost = CostWithTarget("test_unregistered");
  EXPECT_EQ(cost.flops, 0);
  EXPECT_EQ(cost.bytes_accessed, 2 * 8 * 8 * 4);
}

}  // namespace
}  // namespace jx::hlo::custom_call_cost_test

#include "jx/compiler/passes/simplification_passes.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "pass_test_util.h"

namespace jx::hlo::simplification_passes_test {
namespace {

using ::jx::hlo::testing::EntryLines;
using ::testing::ElementsAre;

// "name" for a pass that ran, "name (skipped)" for one the pipeline skipped.
std::vector<std::string> Passes(const HloPassPipeline& pipeline) {
  std::vector<std::string> out;
  for (const auto& t : pipeline.timings()) out.push_back(t.name + (t.skipped ? " (skipped)" : ""));
  return out;
}

TEST(SimplificationPassesTest, TheSecondSimplificationIsSkippedWhenNoPassChangedTheModule) {
  std::unique_ptr<HloModule> module = ParseHloModule(R"(HloModule m
ENTRY %main {
  %p = f32[4]{0} parameter(0)
  %s = f32[4]{0} sine(%p)
  ROOT %n = f32[4]{0} negate(%s)
})").value();
  HloPassPipeline pipeline("simplify");
  AddSimplificationPasses(pipeline);
  ASSERT_FALSE(pipeline.Run(module.get()).value());
  EXPECT_THAT(Passes(pipeline), ElementsAre("algsimp", "canonicalize-shapes", "cse", "constant-folding",
                                            "algsimp (skipped)", "dce"));
}

TEST(SimplificationPassesTest, TheSecondSimplificationRunsOnWhatConstantFoldingExposed) {
  // 2 * 0.5 folds to 1 only in constant folding; the second algsimp then drops x * 1.
  std::unique_ptr<HloModule> module = ParseHloModule(R"(HloModule m
ENTRY %main {
  %p = f32[4]{0} parameter(0)
  %two = f32[] constant(2)
  %half = f32[] constant(0.5)
  %one = f32[] multiply(%two, %half)
  %ones = f32[4]{0} broadcast(%one), dimensions={}
  %x = f32[4]{0} multiply(%p, %ones)
  ROOT %n = f32[4]{0} negate(%x)
})").value();
  HloPassPipeline pipeline("simplify");
  AddSimplificationPasses(pipeline);
  ASSERT_TRUE(pipeline.Run(module.get()).value());
  EXPECT_THAT(Passes(pipeline), ElementsAre("algsimp", "canonicalize-shapes", "cse", "constant-folding",
                                            "algsimp", "dce"));
  EXPECT_TRUE(pipeline.timings()[4].changed);
  EXPECT_THAT(EntryLines(*module),
              ElementsAre("%p = f32[4]{0} parameter(0)", "ROOT %n = f32[4]{0} negate(%p)"));
}

}  // namespace
}  // namespace jx::hlo::simplification_passes_test

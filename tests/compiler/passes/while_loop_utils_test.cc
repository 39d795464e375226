// MayHoldWhileLoops: the while passes' early exit. A module of one computation, or of the entry
// and fusion computations, holds no loop; a module with a loop (or any other computation) is
// walked, and the passes still rewrite its loops.
#include "jx/compiler/passes/while_loop_utils.h"

#include <gtest/gtest.h>

#include "jx/compiler/hlo/hlo_parser.h"
#include "jx/compiler/passes/while_loop_simplifier.h"
#include "pass_test_util.h"
#include "while_loop_state_test_util.h"

namespace jx::hlo::while_loop_utils_test {
namespace {

using ::jx::hlo::testing::Loop;
using ::jx::hlo::testing::ParseAndRun;

TEST(MayHoldWhileLoopsTest, NoComputationBesidesTheEntryOrFusionsMeansNoLoop) {
  auto single = ParseHloModule(R"(HloModule m
ENTRY %main {
  %p = f32[8]{0} parameter(0)
  ROOT %s = f32[8]{0} sine(%p)
})");
  ASSERT_TRUE(single.ok());
  EXPECT_FALSE(MayHoldWhileLoops(**single));
  auto fused = ParseHloModule(R"(HloModule m
%fused (q: f32[8]) -> f32[8] {
  %q = f32[8]{0} parameter(0)
  ROOT %n = f32[8]{0} negate(%q)
}
ENTRY %main {
  %p = f32[8]{0} parameter(0)
  ROOT %f = f32[8]{0} fusion(%p), kind=kLoop, calls=%fused
})");
  ASSERT_TRUE(fused.ok());
  EXPECT_FALSE(MayHoldWhileLoops(**fused));
}

TEST(MayHoldWhileLoopsTest, ALoopIsStillFoundAndRewritten) {
  auto module = ParseHloModule(Loop());
  ASSERT_TRUE(module.ok());
  EXPECT_TRUE(MayHoldWhileLoops(**module));
  // The unchanged element read after the loop leaves its state (the pass has work here).
  ASSERT_NE(ParseAndRun<WhileLoopSimplifier>(Loop(), /*expect_changed=*/true), nullptr);
}

}  // namespace
}  // namespace jx::hlo::while_loop_utils_test

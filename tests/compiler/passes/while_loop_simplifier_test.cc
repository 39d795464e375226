// WhileLoopSimplifier (dead state): after WhileLoopConstantSinking the ones stack a loop only
// passed through leaves the state with its fill before the loop; an unchanged element read
// after the loop leaves too, its reads reading the initial value. Elements the condition
// reads, that change, or move to another position stay. Values are integers.
#include "jx/compiler/passes/while_loop_simplifier.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "jx/compiler/passes/algebraic_simplifier.h"
#include "jx/compiler/passes/while_loop_constant_sinking.h"
#include "pass_test_util.h"
#include "while_loop_state_test_util.h"

namespace jx::hlo::while_loop_simplifier_test {
namespace {

using ::jx::hlo::testing::ComputationLines;
using ::jx::hlo::testing::Loop;
using ::jx::hlo::testing::ParseAndRun;
using ::testing::HasSubstr;

TEST(WhileLoopSimplifierTest, SunkSplatAndUnreadStackLeaveTheState) {
  auto module = ParseAndRun<WhileLoopConstantSinking>(Loop(), true);
  ASSERT_NE(module, nullptr);
  ASSERT_TRUE(AlgebraicSimplifier().Run(module.get()).ok());  // the slice of a splat: a splat
  const std::string text = module->ToString();
  auto simplified = ParseAndRun<WhileLoopSimplifier>(text, true);
  ASSERT_NE(simplified, nullptr);
  const HloInstruction* loop = simplified->entry_computation()->root_instruction()->operand(0)->operand(0);
  ASSERT_EQ(loop->opcode(), HloOpcode::kWhile);
  // (i, g, hs): the ones stack is gone, with its fill before the loop (and keep, read after it).
  EXPECT_EQ(loop->shape().tuple_shapes_size(), 3);
  for (const std::string& line : ComputationLines(*simplified->entry_computation())) {
    EXPECT_THAT(line, ::testing::Not(HasSubstr("s32[5,4]{1,0} broadcast(")));
  }
}

TEST(WhileLoopSimplifierTest, AnUnchangedElementReadAfterTheLoopReadsItsInit) {
  // keep (element 4) passes through and is read after the loop: it leaves the state and
  // the output reads %k. ones (element 2) is still sliced: it stays.
  auto module = ParseAndRun<WhileLoopSimplifier>(Loop(), true);
  ASSERT_NE(module, nullptr);
  const HloInstruction* out = module->entry_computation()->root_instruction();
  EXPECT_EQ(out->operand(2)->name(), "k");
  EXPECT_EQ(out->operand(0)->operand(0)->shape().tuple_shapes_size(), 4);
}

TEST(WhileLoopSimplifierTest, KeepsElementsTheConditionReadsOrThatChangeOrMove) {
  // keep changes (doubled), or moves (g's next value is keep's: keep is read for element 1),
  // or the condition reads it: it stays; ones is sliced: it stays.
  ParseAndRun<WhileLoopSimplifier>(Loop("%g2"), false);
  std::string moved = Loop();
  moved.replace(moved.find("tuple(%i2, %g2,"), std::string("tuple(%i2, %g2,").size(), "tuple(%i2, %keep,");
  ParseAndRun<WhileLoopSimplifier>(moved, false);
  ParseAndRun<WhileLoopSimplifier>(
      Loop("%keep", "\n  %ck = s32[4]{0} get-tuple-element(%cs), index=4\n  %ck0 = s32[1]{0} slice(%ck), slice={[0:1]}"),
      false);
}

}  // namespace
}  // namespace jx::hlo::while_loop_simplifier_test

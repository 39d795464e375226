// WhileLoopConstantSinking and WhileLoopSimplifier on the loop the transpose of a scan leaves:
// a ones-cotangent stack carried unchanged and sliced each trip is sunk into the body (a splat
// of 1 there), then dropped from the state; an unchanged stack read only after the loop leaves
// it too, its reads reading the initial value. Elements the condition reads, that change, or
// move to another position stay. Values are integers (ParseAndRun's check is exact).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "jx/compiler/passes/algebraic_simplifier.h"
#include "jx/compiler/passes/while_loop_constant_sinking.h"
#include "jx/compiler/passes/while_loop_simplifier.h"
#include "pass_test_util.h"

namespace jx::hlo {
namespace {

using ::jx::hlo::testing::ComputationLines;
using ::jx::hlo::testing::ParseAndRun;
using ::testing::HasSubstr;

// g += ones[i] * hs[i] over 5 trips; state (i, g, ones, hs, keep); $NEXT_KEEP is element 4's
// next value, $COND_EXTRA more condition lines.
constexpr std::string_view kLoop = R"(HloModule m
%cond (cs: (s32[], s32[4], s32[5,4], s32[5,4], s32[4])) -> pred[] {
  %cs = (s32[], s32[4]{0}, s32[5,4]{1,0}, s32[5,4]{1,0}, s32[4]{0}) parameter(0)
  %ci = s32[] get-tuple-element(%cs), index=0
  %n = s32[] constant(5)$COND_EXTRA
  ROOT %lt = pred[] compare(%ci, %n), direction=LT
}
%body (s: (s32[], s32[4], s32[5,4], s32[5,4], s32[4])) -> (s32[], s32[4], s32[5,4], s32[5,4], s32[4]) {
  %s = (s32[], s32[4]{0}, s32[5,4]{1,0}, s32[5,4]{1,0}, s32[4]{0}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %g = s32[4]{0} get-tuple-element(%s), index=1
  %ones = s32[5,4]{1,0} get-tuple-element(%s), index=2
  %hs = s32[5,4]{1,0} get-tuple-element(%s), index=3
  %keep = s32[4]{0} get-tuple-element(%s), index=4
  %z = s32[] constant(0)
  %o = s32[1,4]{1,0} dynamic-slice(%ones, %i, %z), dynamic_slice_sizes={1,4}
  %h = s32[1,4]{1,0} dynamic-slice(%hs, %i, %z), dynamic_slice_sizes={1,4}
  %oh = s32[1,4]{1,0} multiply(%o, %h)
  %r = s32[4]{0} reshape(%oh)
  %g2 = s32[4]{0} add(%g, %r)
  %one = s32[] constant(1)
  %i2 = s32[] add(%i, %one)
  ROOT %t = (s32[], s32[4]{0}, s32[5,4]{1,0}, s32[5,4]{1,0}, s32[4]{0}) tuple(%i2, %g2, %ones, %hs, $NEXT_KEEP)
}
ENTRY %main (p: s32[4], q: s32[5,4], k: s32[4]) -> (s32[4], s32[5,4], s32[4]) {
  %p = s32[4]{0} parameter(0)
  %q = s32[5,4]{1,0} parameter(1)
  %k = s32[4]{0} parameter(2)
  %c0 = s32[] constant(0)
  %c1 = s32[] constant(1)
  %splat = s32[5,4]{1,0} broadcast(%c1), dimensions={}
  %init = (s32[], s32[4]{0}, s32[5,4]{1,0}, s32[5,4]{1,0}, s32[4]{0}) tuple(%c0, %p, %splat, %q, %k)
  %w = (s32[], s32[4]{0}, s32[5,4]{1,0}, s32[5,4]{1,0}, s32[4]{0}) while(%init), condition=%cond, body=%body
  %wg = s32[4]{0} get-tuple-element(%w), index=1
  %wh = s32[5,4]{1,0} get-tuple-element(%w), index=3
  %wk = s32[4]{0} get-tuple-element(%w), index=4
  ROOT %out = (s32[4]{0}, s32[5,4]{1,0}, s32[4]{0}) tuple(%wg, %wh, %wk)
})";

std::string Loop(std::string next_keep = "%keep", std::string cond_extra = "") {
  std::string text(kLoop);
  auto put = [&](const std::string& key, const std::string& value) {
    for (size_t at; (at = text.find(key)) != std::string::npos;) text.replace(at, key.size(), value);
  };
  put("$NEXT_KEEP", next_keep);
  put("$COND_EXTRA", cond_extra);
  return text;
}

const HloComputation& Body(const HloModule& module) {
  return *module.entry_computation()->root_instruction()->operand(0)->operand(0)->while_body();
}

TEST(WhileLoopConstantSinkingTest, ASplatCarriedUnchangedIsReadAsASplat) {
  auto module = ParseAndRun<WhileLoopConstantSinking>(Loop(), true);
  ASSERT_NE(module, nullptr);
  const std::vector<std::string> body = ComputationLines(Body(*module));
  // The slice reads a splat built in the body; the element only passes through.
  EXPECT_THAT(body, ::testing::Contains(HasSubstr("s32[5,4]{1,0} broadcast(")));
  for (const std::string& line : body) {
    if (line.find("dynamic-slice(") != std::string::npos && line.find("%o ") == 0) {
      EXPECT_THAT(line, ::testing::Not(HasSubstr("%ones")));
    }
  }
}

TEST(WhileLoopConstantSinkingTest, NotAnElementThatChangesOrIsNotAConstant) {
  // The splat (element 2) is replaced by hs each trip; element 4 starts as a parameter.
  std::string text = Loop();
  text.replace(text.find("tuple(%i2, %g2, %ones,"), std::string("tuple(%i2, %g2, %ones,").size(),
               "tuple(%i2, %g2, %hs,");
  ParseAndRun<WhileLoopConstantSinking>(text, false);
}

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
}  // namespace jx::hlo

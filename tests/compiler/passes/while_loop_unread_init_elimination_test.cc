// WhileLoopUnreadInitElimination: the zero-filled stack a loop fills row by row (a scan's ys)
// starts as an AllocateBuffer, its fill gone; a fill something else reads stays for it. A stack
// the condition reads, that the body reads besides updating it, written at an index that does
// not take each row once, or written a partial row at a time keeps its init. Values are
// integers (the evaluator gives the buffer zeros: the same values either way).
#include "jx/compiler/passes/while_loop_unread_init_elimination.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "jx/compiler/hlo/allocate_buffer.h"
#include "pass_test_util.h"

namespace jx::hlo::while_loop_unread_init_elimination_test {
namespace {

using ::jx::hlo::testing::ComputationLines;
using ::jx::hlo::testing::ParseAndRun;
using ::testing::HasSubstr;

// ys[i] = h * i over 5 trips, state (i, h, ys); $INDEX the row written (%i: the trip index),
// $ROW the update's shape, $EXTRA more body lines, $COND_EXTRA more condition lines, $OUT
// more entry outputs.
constexpr std::string_view kFill = R"(HloModule m
%cond (cs: (s32[], s32[4], s32[5,4])) -> pred[] {
  %cs = (s32[], s32[4]{0}, s32[5,4]{1,0}) parameter(0)
  %ci = s32[] get-tuple-element(%cs), index=0
  %n = s32[] constant(5)$COND_EXTRA
  ROOT %lt = pred[] compare(%ci, %n), direction=LT
}
%body (s: (s32[], s32[4], s32[5,4])) -> (s32[], s32[4], s32[5,4]) {
  %s = (s32[], s32[4]{0}, s32[5,4]{1,0}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %h = s32[4]{0} get-tuple-element(%s), index=1
  %ys = s32[5,4]{1,0} get-tuple-element(%s), index=2
  %z = s32[] constant(0)
  %four = s32[] constant(4)
  %rev = s32[] subtract(%four, %i)
  %ib = s32[4]{0} broadcast(%i), dimensions={}
  %hi = s32[4]{0} multiply(%h, %ib)
  %row = $ROW reshape(%hi)$EXTRA
  %ys2 = s32[5,4]{1,0} dynamic-update-slice(%ys, %row, $INDEX, %z)
  %one = s32[] constant(1)
  %i2 = s32[] add(%i, %one)
  ROOT %t = (s32[], s32[4]{0}, s32[5,4]{1,0}) tuple(%i2, %h, %ys2)
}
ENTRY %main (p: s32[4]) -> (s32[5,4]$OUT_SHAPE) {
  %p = s32[4]{0} parameter(0)
  %c0 = s32[] constant(0)
  %zeros = s32[5,4]{1,0} broadcast(%c0), dimensions={}
  %init = (s32[], s32[4]{0}, s32[5,4]{1,0}) tuple(%c0, %p, %zeros)
  %w = (s32[], s32[4]{0}, s32[5,4]{1,0}) while(%init), condition=%cond, body=%body
  %wy = s32[5,4]{1,0} get-tuple-element(%w), index=2
  ROOT %out = (s32[5,4]{1,0}$OUT_SHAPE) tuple(%wy$OUT)
})";

struct Fill {
  std::string index = "%i", row = "s32[1,4]{1,0}", extra{}, cond_extra{}, out_shape{}, out{};
};

std::string FillLoop(const Fill& f) {
  std::string text(kFill);
  auto put = [&](const std::string& key, const std::string& value) {
    for (size_t at; (at = text.find(key)) != std::string::npos;) text.replace(at, key.size(), value);
  };
  put("$INDEX", f.index);
  put("$ROW", f.row);
  put("$EXTRA", f.extra);
  put("$COND_EXTRA", f.cond_extra);
  put("$OUT_SHAPE", f.out_shape);
  put("$OUT", f.out);
  return text;
}

const HloInstruction* InitOfStack(const HloModule& module) {
  return module.entry_computation()->root_instruction()->operand(0)->operand(0)->operand(0)->operand(2);
}

TEST(WhileLoopUnreadInitEliminationTest, AStackFilledRowByRowStartsAsABuffer) {
  for (const std::string index : {"%i", "%rev"}) {  // forward and reverse
    SCOPED_TRACE(index);
    auto module = ParseAndRun<WhileLoopUnreadInitElimination>(FillLoop({.index = index}), true);
    ASSERT_NE(module, nullptr);
    EXPECT_TRUE(IsAllocateBuffer(*InitOfStack(*module))) << module->ToString();
    for (const std::string& line : ComputationLines(*module->entry_computation())) {
      EXPECT_THAT(line, ::testing::Not(HasSubstr("broadcast(")));
    }
  }
}

TEST(WhileLoopUnreadInitEliminationTest, AFillReadElsewhereStaysForItsOtherReader) {
  auto module = ParseAndRun<WhileLoopUnreadInitElimination>(
      FillLoop({.out_shape = ", s32[5,4]{1,0}", .out = ", %zeros"}), true);
  ASSERT_NE(module, nullptr);
  EXPECT_TRUE(IsAllocateBuffer(*InitOfStack(*module)));
  EXPECT_EQ(module->entry_computation()->root_instruction()->operand(1)->opcode(), HloOpcode::kBroadcast);
}

TEST(WhileLoopUnreadInitEliminationTest, KeepsInitsThatMayBeObserved) {
  // The condition reads the stack.
  ParseAndRun<WhileLoopUnreadInitElimination>(
      FillLoop({.cond_extra = "\n  %cy = s32[5,4]{1,0} get-tuple-element(%cs), index=2"}), false);
  // The body reads the stack besides updating it (a row of the init could flow into the next).
  ParseAndRun<WhileLoopUnreadInitElimination>(
      FillLoop({.extra = "\n  %old = s32[1,4]{1,0} dynamic-slice(%ys, %i, %z), dynamic_slice_sizes={1,4}"}), false);
  // The same row every trip: rows 1..4 keep their init.
  ParseAndRun<WhileLoopUnreadInitElimination>(FillLoop({.index = "%z"}), false);
  // Half a row per trip.
  std::string half = FillLoop({.row = "s32[1,2]{1,0}"});
  half.replace(half.find("%hi = s32[4]{0} multiply(%h, %ib)"), std::string("%hi = s32[4]{0} multiply(%h, %ib)").size(),
               "%hi4 = s32[4]{0} multiply(%h, %ib)\n  %hi = s32[2]{0} slice(%hi4), slice={[0:2]}");
  ParseAndRun<WhileLoopUnreadInitElimination>(half, false);
}

}  // namespace
}  // namespace jx::hlo::while_loop_unread_init_elimination_test

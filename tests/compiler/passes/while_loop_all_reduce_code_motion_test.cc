// WhileLoopAllReduceCodeMotion: an accumulator a loop adds all-reduced values to keeps them
// unreduced inside the loop and is all-reduced once after it (init added back); never when the
// loop reads the accumulator or the reduced value elsewhere, or the reduction is not a sum.
// Values are integers so "computes the same" (ParseAndRun's check) is exact.
#include "jx/compiler/passes/while_loop_all_reduce_code_motion.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "pass_test_util.h"

namespace jx::hlo::while_loop_all_reduce_code_motion_test {
namespace {

using ::jx::hlo::testing::ComputationLines;
using ::jx::hlo::testing::EntryLines;
using ::jx::hlo::testing::ParseAndRun;
using ::testing::ElementsAre;

int64_t CountAllReduces(const HloComputation& c) {
  int64_t n = 0;
  for (const HloInstruction* instr : c.instructions()) n += instr->opcode() == HloOpcode::kAllReduce;
  return n;
}

// Three trips of acc += all-reduce(x * i). $REDUCED is the value added ($AR the all-reduce),
// $EXTRA more body lines, $COND_EXTRA more condition lines, $INIT the accumulator's start.
constexpr std::string_view kLoop = R"(HloModule m
%sum (x: s32[], y: s32[]) -> s32[] {
  %x = s32[] parameter(0)
  %y = s32[] parameter(1)
  ROOT %xy = s32[] add(s32[] %x, s32[] %y)
}
%max (mx: s32[], my: s32[]) -> s32[] {
  %mx = s32[] parameter(0)
  %my = s32[] parameter(1)
  ROOT %m = s32[] maximum(s32[] %mx, s32[] %my)
}
%cond (cs: (s32[], s32[4], s32[4])) -> pred[] {
  %cs = (s32[], s32[4]{0}, s32[4]{0}) parameter(0)
  %ci = s32[] get-tuple-element(%cs), index=0
  %n = s32[] constant(3)
  $COND_EXTRA
  ROOT %lt = pred[] compare(%ci, %n), direction=LT
}
%body (s: (s32[], s32[4], s32[4])) -> (s32[], s32[4], s32[4]) {
  %s = (s32[], s32[4]{0}, s32[4]{0}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %xs = s32[4]{0} get-tuple-element(%s), index=1
  %acc = s32[4]{0} get-tuple-element(%s), index=2
  %one = s32[] constant(1)
  %next = s32[] add(%i, %one)
  %bi = s32[4]{0} broadcast(%i), dimensions={}
  %g = s32[4]{0} multiply(%xs, %bi)
  %rg = s32[4]{0} all-reduce(%g), channel_id=1, replica_groups={{0}}, use_global_device_ids=true, to_apply=$REDUCER
  $EXTRA
  %acc2 = s32[4]{0} add(%acc, $REDUCED)
  ROOT %t = (s32[], s32[4]{0}, s32[4]{0}) tuple(%next, $X, %acc2)
}
ENTRY %main {
  %px = s32[4]{0} parameter(0)
  %pinit = s32[4]{0} parameter(1)
  %zero = s32[] constant(0)
  $INIT
  %t0 = (s32[], s32[4]{0}, s32[4]{0}) tuple(%zero, %px, %init)
  %w = (s32[], s32[4]{0}, s32[4]{0}) while(%t0), condition=%cond, body=%body
  ROOT %sum_out = s32[4]{0} get-tuple-element(%w), index=2
}
)";

struct LoopOptions {
  std::string reducer = "%sum";
  std::string reduced = "%rg";
  std::string extra = "";
  std::string cond_extra = "";
  std::string x = "%xs";
  std::string init = "%init = s32[4]{0} copy(%pinit)";
};

std::string Loop(const LoopOptions& o) {
  std::string text(kLoop);
  const std::vector<std::pair<std::string, std::string>> subs = {
      {"$REDUCER", o.reducer}, {"$REDUCED", o.reduced}, {"$EXTRA", o.extra},
      {"$COND_EXTRA", o.cond_extra}, {"$X", o.x}, {"$INIT", o.init}};
  for (const auto& [from, to] : subs) {
    for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
      text.replace(at, from.size(), to);
    }
  }
  return text;
}

TEST(WhileLoopAllReduceCodeMotionTest, SumsUnreducedInTheLoopAndAllReducesOnceAfter) {
  auto module = ParseAndRun<WhileLoopAllReduceCodeMotion>(Loop({}), true);
  const HloComputation* body = module->GetComputationWithName("body");
  EXPECT_EQ(CountAllReduces(*body), 0);
  EXPECT_EQ(CountAllReduces(*module->entry_computation()), 1);
  EXPECT_THAT(ComputationLines(*body),
              ElementsAre("%s = (s32[], s32[4]{0}, s32[4]{0}) parameter(0)", "%i = s32[] get-tuple-element(%s), index=0",
                          "%one = s32[] constant(1)", "%next = s32[] add(%i, %one)",
                          "%xs = s32[4]{0} get-tuple-element(%s), index=1",
                          "%acc = s32[4]{0} get-tuple-element(%s), index=2",
                          "%bi = s32[4]{0} broadcast(%i), dimensions={}", "%g = s32[4]{0} multiply(%xs, %bi)",
                          "%acc2 = s32[4]{0} add(%acc, %g)",
                          "ROOT %t = (s32[], s32[4]{0}, s32[4]{0}) tuple(%next, %xs, %acc2)"));
  EXPECT_THAT(EntryLines(*module),
              ElementsAre("%pinit = s32[4]{0} parameter(1)", "%init = s32[4]{0} copy(%pinit)",
                          "%zero = s32[] constant(0)", "%px = s32[4]{0} parameter(0)",
                          "%constant.32 = s32[] constant(0)",
                          "%broadcast.33 = s32[4]{0} broadcast(%constant.32), dimensions={}",
                          "%tuple.34 = (s32[], s32[4]{0}, s32[4]{0}) tuple(%zero, %px, %broadcast.33)",
                          "%w = (s32[], s32[4]{0}, s32[4]{0}) while(%tuple.34), condition=%cond, body=%body",
                          "%get-tuple-element.29 = s32[4]{0} get-tuple-element(%w), index=2",
                          "%all-reduce.30 = s32[4]{0} all-reduce(%get-tuple-element.29), channel_id=1, "
                          "replica_groups={{0}}, use_global_device_ids=true, to_apply=%sum",
                          "ROOT %add.31 = s32[4]{0} add(%init, %all-reduce.30)"));
  // The evaluator ran both programs (ParseAndRun compared them): check it can.
  std::vector<Literal> args = testing::MakeArguments(*module);
  ASSERT_EQ(args.size(), 2u);
  EXPECT_TRUE(HloEvaluator().Evaluate(*module, {&args[0], &args[1]}).ok());
}

TEST(WhileLoopAllReduceCodeMotionTest, AZeroStartNeedsNoAddAfterTheLoop) {
  auto module = ParseAndRun<WhileLoopAllReduceCodeMotion>(
      Loop({.init = "%z0 = s32[] constant(0)\n  %init = s32[4]{0} broadcast(%z0), dimensions={}"}), true);
  EXPECT_THAT(EntryLines(*module),
              ElementsAre("%pinit = s32[4]{0} parameter(1)", "%zero = s32[] constant(0)",
                          "%px = s32[4]{0} parameter(0)", "%constant.32 = s32[] constant(0)",
                          "%broadcast.33 = s32[4]{0} broadcast(%constant.32), dimensions={}",
                          "%tuple.34 = (s32[], s32[4]{0}, s32[4]{0}) tuple(%zero, %px, %broadcast.33)",
                          "%w = (s32[], s32[4]{0}, s32[4]{0}) while(%tuple.34), condition=%cond, body=%body",
                          "%get-tuple-element.30 = s32[4]{0} get-tuple-element(%w), index=2",
                          "ROOT %all-reduce.31 = s32[4]{0} all-reduce(%get-tuple-element.30), channel_id=1, "
                          "replica_groups={{0}}, use_global_device_ids=true, to_apply=%sum"));
}

// s32 values all-reduced, then converted and accumulated in f32: the f32 accumulator is
// all-reduced after the loop (with a f32 sum). Small integers: every f32 sum is exact.
TEST(WhileLoopAllReduceCodeMotionTest, ThroughAConvertTheAccumulatorsTypeIsReduced) {
  auto module = ParseAndRun<WhileLoopAllReduceCodeMotion>(R"(HloModule m
%sum (x: s32[], y: s32[]) -> s32[] {
  %x = s32[] parameter(0)
  %y = s32[] parameter(1)
  ROOT %xy = s32[] add(s32[] %x, s32[] %y)
}
%cond (cs: (s32[], s32[4], f32[4])) -> pred[] {
  %cs = (s32[], s32[4]{0}, f32[4]{0}) parameter(0)
  %ci = s32[] get-tuple-element(%cs), index=0
  %n = s32[] constant(3)
  ROOT %lt = pred[] compare(%ci, %n), direction=LT
}
%body (s: (s32[], s32[4], f32[4])) -> (s32[], s32[4], f32[4]) {
  %s = (s32[], s32[4]{0}, f32[4]{0}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %xs = s32[4]{0} get-tuple-element(%s), index=1
  %acc = f32[4]{0} get-tuple-element(%s), index=2
  %one = s32[] constant(1)
  %next = s32[] add(%i, %one)
  %bi = s32[4]{0} broadcast(%i), dimensions={}
  %g = s32[4]{0} multiply(%xs, %bi)
  %rg = s32[4]{0} all-reduce(%g), channel_id=1, replica_groups={{0}}, use_global_device_ids=true, to_apply=%sum
  %cg = f32[4]{0} convert(%rg)
  %acc2 = f32[4]{0} add(%cg, %acc)
  ROOT %t = (s32[], s32[4]{0}, f32[4]{0}) tuple(%next, %xs, %acc2)
}
ENTRY %main {
  %px = s32[4]{0} parameter(0)
  %pinit = s32[4]{0} parameter(1)
  %zero = s32[] constant(0)
  %init = f32[4]{0} convert(%pinit)
  %t0 = (s32[], s32[4]{0}, f32[4]{0}) tuple(%zero, %px, %init)
  %w = (s32[], s32[4]{0}, f32[4]{0}) while(%t0), condition=%cond, body=%body
  ROOT %sum_out = f32[4]{0} get-tuple-element(%w), index=2
})",
                                                          true);
  EXPECT_THAT(ComputationLines(*module->GetComputationWithName("body")),
              ::testing::Contains("%cg = f32[4]{0} convert(%g)"));
  EXPECT_EQ(CountAllReduces(*module->GetComputationWithName("body")), 0);
  const HloInstruction* root = module->entry_computation()->root_instruction();
  EXPECT_EQ(root->ToString(HloPrintOptions::ShortParsable()), "ROOT %add.32 = f32[4]{0} add(%init, %all-reduce.31)");
  // The moved all-reduce sums f32 (a new f32 add reducer).
  const HloInstruction* moved = root->operand(1);
  EXPECT_EQ(moved->shape().element_type(), F32);
  EXPECT_EQ(moved->to_apply()->root_instruction()->opcode(), HloOpcode::kAdd);
  EXPECT_EQ(moved->to_apply()->root_instruction()->shape().element_type(), F32);
}

// pmean's accumulation: acc += psum(g) / 2, in f32. g holds integers, so every partial sum of
// halves is exact and the values compare exactly. $DIVISOR and $CONVERT vary it.
constexpr std::string_view kMeanLoop = R"(HloModule m
%fsum (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %xy = f32[] add(f32[] %x, f32[] %y)
}
%cond (cs: (s32[], s32[4], f32[4])) -> pred[] {
  %cs = (s32[], s32[4]{0}, f32[4]{0}) parameter(0)
  %ci = s32[] get-tuple-element(%cs), index=0
  %n = s32[] constant(3)
  ROOT %lt = pred[] compare(%ci, %n), direction=LT
}
%body (s: (s32[], s32[4], f32[4])) -> (s32[], s32[4], f32[4]) {
  %s = (s32[], s32[4]{0}, f32[4]{0}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %xs = s32[4]{0} get-tuple-element(%s), index=1
  %acc = f32[4]{0} get-tuple-element(%s), index=2
  %one = s32[] constant(1)
  %next = s32[] add(%i, %one)
  %bi = s32[4]{0} broadcast(%i), dimensions={}
  %gi = s32[4]{0} multiply(%xs, %bi)
  %g = f32[4]{0} convert(%gi)
  %rg = f32[4]{0} all-reduce(%g), channel_id=1, replica_groups={{0}}, use_global_device_ids=true, to_apply=%fsum
  %two = f32[] constant(2)
  %divisor = f32[4]{0} $DIVISOR
  %mean = f32[4]{0} divide(%rg, %divisor)
  %acc2 = f32[4]{0} add(%acc, %mean)
  ROOT %t = (s32[], s32[4]{0}, f32[4]{0}) tuple(%next, %xs, %acc2)
}
ENTRY %main {
  %px = s32[4]{0} parameter(0)
  %pinit = s32[4]{0} parameter(1)
  %zero = s32[] constant(0)
  %init = f32[4]{0} convert(%pinit)
  %t0 = (s32[], s32[4]{0}, f32[4]{0}) tuple(%zero, %px, %init)
  %w = (s32[], s32[4]{0}, f32[4]{0}) while(%t0), condition=%cond, body=%body
  ROOT %sum_out = f32[4]{0} get-tuple-element(%w), index=2
}
)";

TEST(WhileLoopAllReduceCodeMotionTest, ThroughAScalingByAConstantAsPmeanWrites) {
  std::string text(kMeanLoop);
  text.replace(text.find("$DIVISOR"), 8, "broadcast(%two), dimensions={}");
  auto module = ParseAndRun<WhileLoopAllReduceCodeMotion>(text, true);
  EXPECT_EQ(CountAllReduces(*module->GetComputationWithName("body")), 0);
  EXPECT_THAT(ComputationLines(*module->GetComputationWithName("body")),
              ::testing::Contains("%mean = f32[4]{0} divide(%g, %divisor)"));
  EXPECT_EQ(module->entry_computation()->root_instruction()->operand(1)->opcode(), HloOpcode::kAllReduce);
  // Divided by a value that is not a constant (here the trip number: it could as well differ
  // between partitions): left alone.
  text = std::string(kMeanLoop);
  text.replace(text.find("$DIVISOR"), 8, "broadcast(%trips), dimensions={}");
  text.replace(text.find("%two = f32[] constant(2)"), 24, "%trips = f32[] convert(%next)");
  ParseAndRun<WhileLoopAllReduceCodeMotion>(text, false);
}

// Row i of a [3,4] accumulator gets trip i's all-reduced row: the buffer is summed unreduced
// and all-reduced whole after the loop.
constexpr std::string_view kSliceLoop = R"(HloModule m
%sum (x: s32[], y: s32[]) -> s32[] {
  %x = s32[] parameter(0)
  %y = s32[] parameter(1)
  ROOT %xy = s32[] add(s32[] %x, s32[] %y)
}
%cond (cs: (s32[], s32[1,4], s32[3,4])) -> pred[] {
  %cs = (s32[], s32[1,4]{1,0}, s32[3,4]{1,0}) parameter(0)
  %ci = s32[] get-tuple-element(%cs), index=0
  %n = s32[] constant(3)
  ROOT %lt = pred[] compare(%ci, %n), direction=LT
}
%body (s: (s32[], s32[1,4], s32[3,4])) -> (s32[], s32[1,4], s32[3,4]) {
  %s = (s32[], s32[1,4]{1,0}, s32[3,4]{1,0}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %xs = s32[1,4]{1,0} get-tuple-element(%s), index=1
  %acc = s32[3,4]{1,0} get-tuple-element(%s), index=2
  %one = s32[] constant(1)
  %z = s32[] constant(0)
  %next = s32[] add(%i, %one)
  %bi = s32[1,4]{1,0} broadcast(%i), dimensions={}
  %g = s32[1,4]{1,0} multiply(%xs, %bi)
  %rg = s32[1,4]{1,0} all-reduce(%g), channel_id=1, replica_groups={{0}}, use_global_device_ids=true, to_apply=%sum
  %row = s32[1,4]{1,0} dynamic-slice(%acc, $ROW_INDEX, %z), dynamic_slice_sizes={1,4}
  %upd = s32[1,4]{1,0} add(%row, %rg)
  %acc2 = s32[3,4]{1,0} dynamic-update-slice(%acc, %upd, %i, %z)
  ROOT %t = (s32[], s32[1,4]{1,0}, s32[3,4]{1,0}) tuple(%next, %xs, %acc2)
}
ENTRY %main {
  %px = s32[1,4]{1,0} parameter(0)
  %pinit = s32[3,4]{1,0} parameter(1)
  %zero = s32[] constant(0)
  %t0 = (s32[], s32[1,4]{1,0}, s32[3,4]{1,0}) tuple(%zero, %px, %pinit)
  %w = (s32[], s32[1,4]{1,0}, s32[3,4]{1,0}) while(%t0), condition=%cond, body=%body
  ROOT %sum_out = s32[3,4]{1,0} get-tuple-element(%w), index=2
}
)";

std::string SliceLoop(std::string_view row_index) {
  std::string text(kSliceLoop);
  text.replace(text.find("$ROW_INDEX"), 10, row_index);
  return text;
}

TEST(WhileLoopAllReduceCodeMotionTest, IntoASliceOfTheAccumulator) {
  auto module = ParseAndRun<WhileLoopAllReduceCodeMotion>(SliceLoop("%i"), true);
  EXPECT_EQ(CountAllReduces(*module->GetComputationWithName("body")), 0);
  EXPECT_THAT(ComputationLines(*module->GetComputationWithName("body")),
              ::testing::Contains("%upd = s32[1,4]{1,0} add(%row, %g)"));
  const HloInstruction* root = module->entry_computation()->root_instruction();
  ASSERT_EQ(root->opcode(), HloOpcode::kAdd);
  EXPECT_EQ(root->operand(0)->name(), "pinit");
  EXPECT_EQ(root->operand(1)->opcode(), HloOpcode::kAllReduce);
  EXPECT_EQ(root->operand(1)->shape().dimensions(), (std::vector<int64_t>{3, 4}));
  // A slice read at another row than the one written is not an accumulation.
  ParseAndRun<WhileLoopAllReduceCodeMotion>(SliceLoop("%one"), false);
}

TEST(WhileLoopAllReduceCodeMotionTest, LeavesLoopsThatReadTheAccumulatorOrTheReducedValue) {
  // The body reads the accumulator (x' = acc): it would see a partial sum.
  ParseAndRun<WhileLoopAllReduceCodeMotion>(Loop({.x = "%acc"}), false);
  // The condition reads the accumulator.
  ParseAndRun<WhileLoopAllReduceCodeMotion>(
      Loop({.cond_extra = "%cacc = s32[4]{0} get-tuple-element(%cs), index=2"}), false);
  // The reduced value is read besides the accumulation.
  ParseAndRun<WhileLoopAllReduceCodeMotion>(Loop({.x = "%rg"}), false);
  // Not a sum: a max all-reduce accumulated by add is not linear in the partitions' values.
  ParseAndRun<WhileLoopAllReduceCodeMotion>(Loop({.reducer = "%max"}), false);
}

}  // namespace
}  // namespace jx::hlo::while_loop_all_reduce_code_motion_test

// WhileLoopOuterProductToDot: a loop adding the outer product of two per-trip values to an
// accumulator stacks the two factors by trip and contracts them in one dot after the loop
// (init added back; a transpose when the product's dimensions interleave the factors'); never
// when the loop reads the accumulator or the product elsewhere, the trip index is unknown, the
// product is not an outer product, or the stacks do not fit the budget. Values are integers so
// "computes the same" (ParseAndRun's check against the evaluator) is exact.
#include "jx/compiler/passes/while_loop_outer_product_to_dot.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "pass_test_util.h"

namespace jx::hlo::while_loop_outer_product_to_dot_test {
namespace {

using ::jx::hlo::testing::ComputationLines;
using ::jx::hlo::testing::ParseAndRun;

// Trips i = $START .. $START+4 of acc += outer(a, b), a = $FIRST_FACTOR (by default xs[$ROW], $ROW
// i - $START: a row of the carried xs) and b = ys * i; acc is $ACC_SHAPE, the product $PRODUCT
// (over %ba/%bb or %a/%b), $EXTRA more body lines, $COND_EXTRA more condition lines, $X state
// element 2's next value.
constexpr std::string_view kLoop = R"(HloModule m
%cond (cs: (s32[], s32[5,4], s32[3], $ACC_SHAPE)) -> pred[] {
  %cs = (s32[], s32[5,4]{1,0}, s32[3]{0}, $ACC_SHAPE) parameter(0)
  %ci = s32[] get-tuple-element(%cs), index=0
  $COND_EXTRA
  ROOT %lt = pred[] compare($COMPARE), direction=$DIRECTION
}
%body (s: (s32[], s32[5,4], s32[3], $ACC_SHAPE)) -> (s32[], s32[5,4], s32[3], $ACC_SHAPE) {
  %s = (s32[], s32[5,4]{1,0}, s32[3]{0}, $ACC_SHAPE) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %xs = s32[5,4]{1,0} get-tuple-element(%s), index=1
  %ys = s32[3]{0} get-tuple-element(%s), index=2
  %acc = $ACC_SHAPE get-tuple-element(%s), index=3
  %one = s32[] constant(1)
  %z = s32[] constant(0)
  %start = s32[] constant($START)
  %next = s32[] add(%i, %one)
  $ROW
  %xrow = s32[1,4]{1,0} dynamic-slice(%xs, %row, %z), dynamic_slice_sizes={1,4}
  $FIRST_FACTOR
  %bi = s32[3]{0} broadcast(%i), dimensions={}
  %b = s32[3]{0} multiply(%ys, %bi)
  $PRODUCT
  $EXTRA
  %acc2 = $ACC_SHAPE add(%acc, %product)
  ROOT %t = (s32[], s32[5,4]{1,0}, s32[3]{0}, $ACC_SHAPE) tuple(%next, %xs, $X, %acc2)
}
ENTRY %main {
  %pxs = s32[5,4]{1,0} parameter(0)
  %pys = s32[3]{0} parameter(1)
  %pinit = $ACC_SHAPE parameter(2)
  %i0 = s32[] constant($START)
  $INIT
  %t0 = (s32[], s32[5,4]{1,0}, s32[3]{0}, $ACC_SHAPE) tuple(%i0, %pxs, %pys, %init)
  %w = (s32[], s32[5,4]{1,0}, s32[3]{0}, $ACC_SHAPE) while(%t0), condition=%cond, body=%body
  ROOT %out = $ACC_SHAPE get-tuple-element(%w), index=3
}
)";

constexpr std::string_view kOuter =
    "%ba = s32[4,3]{1,0} broadcast(%a), dimensions={0}\n"
    "  %bb = s32[4,3]{1,0} broadcast(%b), dimensions={1}\n"
    "  %product = s32[4,3]{1,0} multiply(%ba, %bb)";

struct LoopOptions {
  std::string row = "%row = s32[] subtract(%i, %start)";
  std::string a = "%a = s32[4]{0} reshape(%xrow)";
  std::string acc_shape = "s32[4,3]{1,0}";
  std::string product = std::string(kOuter);
  std::string start = "0";
  std::string compare = "%ci, %limit";
  std::string direction = "LT";
  std::string limit = "%limit = s32[] constant($START_PLUS_5)";
  std::string extra = "";
  std::string cond_extra = "";
  std::string x = "%ys";
  std::string init = "%init = s32[4,3]{1,0} copy(%pinit)";
};

std::string Loop(const LoopOptions& o) {
  std::string text(kLoop);
  const std::vector<std::pair<std::string, std::string>> subs = {
      {"$COND_EXTRA", o.limit + "\n  " + o.cond_extra},
      {"$START_PLUS_5", std::to_string(std::stoi(o.start) + 5)},
      {"$ROW", o.row}, {"$FIRST_FACTOR", o.a}, {"$ACC_SHAPE", o.acc_shape}, {"$PRODUCT", o.product}, {"$START", o.start},
      {"$COMPARE", o.compare}, {"$DIRECTION", o.direction}, {"$EXTRA", o.extra}, {"$X", o.x},
      {"$INIT", o.init}};
  for (const auto& [from, to] : subs) {
    for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
      text.replace(at, from.size(), to);
    }
  }
  return text;
}

int64_t Count(const HloComputation& c, HloOpcode opcode) {
  int64_t n = 0;
  for (const HloInstruction* instr : c.instructions()) n += instr->opcode() == opcode;
  return n;
}

// a computed in the body (not a row of a carried stack).
constexpr std::string_view kComputedA = "%x4 = s32[4]{0} reshape(%xrow)\n  %a = s32[4]{0} negate(%x4)";

TEST(WhileLoopOuterProductToDotTest, StacksTheFactorsAndContractsThemAfterTheLoop) {
  auto module = ParseAndRun<WhileLoopOuterProductToDot>(Loop({.a = std::string(kComputedA)}), true);
  const HloComputation* body = module->GetComputationWithName("body");
  // No [4,3] product in the loop: a and b go to their stacks, a's in the accumulator's place.
  EXPECT_EQ(Count(*body, HloOpcode::kBroadcast), 1);  // %bi only
  EXPECT_EQ(Count(*body, HloOpcode::kDynamicUpdateSlice), 2);
  const HloInstruction* root = module->entry_computation()->root_instruction();
  ASSERT_EQ(root->opcode(), HloOpcode::kAdd);
  EXPECT_EQ(root->operand(0)->name(), "init");
  const HloInstruction* dot = root->operand(1);
  ASSERT_EQ(dot->opcode(), HloOpcode::kDot);
  EXPECT_EQ(dot->operand(0)->shape().dimensions(), (std::vector<int64_t>{5, 4}));
  EXPECT_EQ(dot->operand(1)->shape().dimensions(), (std::vector<int64_t>{5, 3}));
  EXPECT_EQ(dot->dot_dimension_numbers().lhs_contracting_dims, (std::vector<int64_t>{0}));
  EXPECT_EQ(dot->dot_dimension_numbers().rhs_contracting_dims, (std::vector<int64_t>{0}));
  EXPECT_EQ(dot->operand(0)->tuple_index(), 3);
  EXPECT_EQ(dot->operand(1)->tuple_index(), 4);
  EXPECT_EQ(dot->operand(0)->operand(0)->opcode(), HloOpcode::kWhile);
  EXPECT_EQ(dot->operand(0)->operand(0)->shape().tuple_shapes_size(), 5);
}

// a is row i of xs, which the loop carries unchanged: the dot reads xs itself and only b is
// stacked (in the accumulator's place), written at a's row.
TEST(WhileLoopOuterProductToDotTest, ARowOfACarriedStackIsReadFromIt) {
  auto module = ParseAndRun<WhileLoopOuterProductToDot>(Loop({}), true);
  const HloComputation* body = module->GetComputationWithName("body");
  EXPECT_EQ(Count(*body, HloOpcode::kDynamicUpdateSlice), 1);
  EXPECT_EQ(Count(*body, HloOpcode::kDynamicSlice), 0);  // a's slice is gone with the product
  const HloInstruction* dot = module->entry_computation()->root_instruction()->operand(1);
  ASSERT_EQ(dot->opcode(), HloOpcode::kDot);
  EXPECT_EQ(dot->operand(0)->tuple_index(), 1);  // xs
  EXPECT_EQ(dot->operand(1)->tuple_index(), 3);  // b's rows
  EXPECT_EQ(dot->operand(0)->operand(0)->shape().tuple_shapes_size(), 4);
  // Read in reverse (a scan's transpose reads its residuals from the last row): b is written
  // at the same reversed row. The evaluator's values (ParseAndRun) check the pairing.
  module = ParseAndRun<WhileLoopOuterProductToDot>(
      Loop({.row = "%last = s32[] constant(4)\n  %row = s32[] subtract(%last, %i)"}), true);
  EXPECT_EQ(Count(*module->GetComputationWithName("body"), HloOpcode::kDynamicUpdateSlice), 1);
  module = ParseAndRun<WhileLoopOuterProductToDot>(
      Loop({.row = "%last = s32[] constant(11)\n  %row = s32[] subtract(%last, %i)", .start = "7"}), true);
  EXPECT_EQ(Count(*module->GetComputationWithName("body"), HloOpcode::kDynamicUpdateSlice), 1);
  // Both factors rows of xs at the same index: nothing is stacked; the dot reads xs twice.
  module = ParseAndRun<WhileLoopOuterProductToDot>(
      Loop({.acc_shape = "s32[4,4]{1,0}",
            .product = "%ba = s32[4,4]{1,0} broadcast(%a), dimensions={0}\n"
                       "  %bb = s32[4,4]{1,0} broadcast(%a), dimensions={1}\n"
                       "  %product = s32[4,4]{1,0} multiply(%ba, %bb)",
            .init = "%init = s32[4,4]{1,0} copy(%pinit)"}),
      true);
  EXPECT_EQ(Count(*module->GetComputationWithName("body"), HloOpcode::kDynamicUpdateSlice), 0);
  dot = module->entry_computation()->root_instruction()->operand(1);
  EXPECT_EQ(dot->operand(0)->tuple_index(), 1);
  EXPECT_EQ(dot->operand(1)->tuple_index(), 1);
  // A row index that does not visit each row once (always row 0; or reversed from the wrong
  // end): a is stacked by trip like any value.
  module = ParseAndRun<WhileLoopOuterProductToDot>(Loop({.row = "%row = s32[] constant(0)"}), true);
  EXPECT_EQ(Count(*module->GetComputationWithName("body"), HloOpcode::kDynamicUpdateSlice), 2);
  module = ParseAndRun<WhileLoopOuterProductToDot>(
      Loop({.row = "%last = s32[] constant(5)\n  %row = s32[] subtract(%last, %i)"}), true);
  EXPECT_EQ(Count(*module->GetComputationWithName("body"), HloOpcode::kDynamicUpdateSlice), 2);
}

TEST(WhileLoopOuterProductToDotTest, AZeroStartNeedsNoAddAfterTheLoop) {
  auto module = ParseAndRun<WhileLoopOuterProductToDot>(
      Loop({.init = "%zi = s32[] constant(0)\n  %init = s32[4,3]{1,0} broadcast(%zi), dimensions={}"}), true);
  EXPECT_EQ(module->entry_computation()->root_instruction()->opcode(), HloOpcode::kDot);
}

// The trip index is the counter minus its start: the rows of the stacks are 0..4.
TEST(WhileLoopOuterProductToDotTest, ACounterFromAnyStartOrComparedFromTheRight) {
  auto module = ParseAndRun<WhileLoopOuterProductToDot>(Loop({.start = "7"}), true);
  EXPECT_THAT(ComputationLines(*module->GetComputationWithName("body")),
              ::testing::Contains(::testing::HasSubstr("subtract(%get-tuple-element")));
  ParseAndRun<WhileLoopOuterProductToDot>(Loop({.compare = "%limit, %ci", .direction = "GT"}), true);
}

// The product's dimensions are b's then a's: a transpose follows the dot.
TEST(WhileLoopOuterProductToDotTest, InterleavedDimensionsTransposeTheDot) {
  auto module = ParseAndRun<WhileLoopOuterProductToDot>(
      Loop({.acc_shape = "s32[3,4]{1,0}",
            .product = "%ba = s32[3,4]{1,0} broadcast(%a), dimensions={1}\n"
                       "  %bb = s32[3,4]{1,0} broadcast(%b), dimensions={0}\n"
                       "  %product = s32[3,4]{1,0} multiply(%ba, %bb)",
            .init = "%init = s32[3,4]{1,0} copy(%pinit)"}),
      true);
  const HloInstruction* transpose = module->entry_computation()->root_instruction()->operand(1);
  ASSERT_EQ(transpose->opcode(), HloOpcode::kTranspose);
  EXPECT_EQ(transpose->dimensions(), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(transpose->operand(0)->opcode(), HloOpcode::kDot);
  // A rank-2 factor whose dimensions surround the other's: [4,3] * [2] -> [4,2,3].
  module = ParseAndRun<WhileLoopOuterProductToDot>(
      Loop({.acc_shape = "s32[4,2,3]{2,1,0}",
            .product = "%ab = s32[4,3]{1,0} broadcast(%a), dimensions={0}\n"
                       "  %a2 = s32[4,3]{1,0} multiply(%ab, %ab)\n"
                       "  %two = s32[2]{0} iota(), iota_dimension=0\n"
                       "  %ba = s32[4,2,3]{2,1,0} broadcast(%a2), dimensions={0,2}\n"
                       "  %bb = s32[4,2,3]{2,1,0} broadcast(%two), dimensions={1}\n"
                       "  %product = s32[4,2,3]{2,1,0} multiply(%ba, %bb)",
            .init = "%init = s32[4,2,3]{2,1,0} copy(%pinit)"}),
      true);
  EXPECT_EQ(module->entry_computation()->root_instruction()->operand(1)->dimensions(),
            (std::vector<int64_t>{0, 2, 1}));
}

// dot(a, b) without contracting dimensions is the same outer product.
TEST(WhileLoopOuterProductToDotTest, ADotWithoutContractingDimensions) {
  auto module = ParseAndRun<WhileLoopOuterProductToDot>(
      Loop({.product = "%product = s32[4,3]{1,0} dot(%a, %b), lhs_contracting_dims={}, rhs_contracting_dims={}"}),
      true);
  EXPECT_EQ(Count(*module->GetComputationWithName("body"), HloOpcode::kDot), 0);
  EXPECT_EQ(Count(*module->entry_computation(), HloOpcode::kDot), 1);
}

TEST(WhileLoopOuterProductToDotTest, LeavesLoopsWhereItWouldChangeWhatIsRead) {
  // The body reads the accumulator (ys' = a row of it): it would see a partial sum.
  ParseAndRun<WhileLoopOuterProductToDot>(
      Loop({.extra = "%arow = s32[1,3]{1,0} slice(%acc), slice={[0:1], [0:3]}\n  %ar = s32[3]{0} reshape(%arow)",
            .x = "%ar"}),
      false);
  // The condition reads the accumulator.
  ParseAndRun<WhileLoopOuterProductToDot>(
      Loop({.cond_extra = "%cacc = s32[4,3]{1,0} get-tuple-element(%cs), index=3"}), false);
  // The product is read besides the accumulation.
  ParseAndRun<WhileLoopOuterProductToDot>(
      Loop({.extra = "%prow = s32[1,3]{1,0} slice(%product), slice={[0:1], [0:3]}\n  %pr = s32[3]{0} reshape(%prow)",
            .x = "%pr"}),
      false);
}

TEST(WhileLoopOuterProductToDotTest, LeavesProductsThatAreNotOuterProducts) {
  // Both factors broadcast along the same dimension: an elementwise product.
  ParseAndRun<WhileLoopOuterProductToDot>(
      Loop({.product = "%ba = s32[4,3]{1,0} broadcast(%a), dimensions={0}\n"
                       "  %bb = s32[4,3]{1,0} broadcast(%a), dimensions={0}\n"
                       "  %product = s32[4,3]{1,0} multiply(%ba, %bb)"}),
      false);
  // A scaling by a scalar.
  ParseAndRun<WhileLoopOuterProductToDot>(
      Loop({.acc_shape = "s32[4]{0}",
            .product = "%ba = s32[4]{0} broadcast(%a), dimensions={0}\n"
                       "  %bb = s32[4]{0} broadcast(%i), dimensions={}\n"
                       "  %product = s32[4]{0} multiply(%ba, %bb)",
            .init = "%init = s32[4]{0} copy(%pinit)"}),
      false);
}

// pred's add and multiply are or and and: not a sum a dot may take.
TEST(WhileLoopOuterProductToDotTest, LeavesPredAccumulators) {
  ParseAndRun<WhileLoopOuterProductToDot>(
      Loop({.acc_shape = "pred[4,3]{1,0}",
            .product = "%z4 = s32[4]{0} broadcast(%z), dimensions={}\n"
                       "  %pa = pred[4]{0} compare(%a, %z4), direction=GT\n"
                       "  %z3 = s32[3]{0} broadcast(%z), dimensions={}\n"
                       "  %pb = pred[3]{0} compare(%b, %z3), direction=GT\n"
                       "  %ba = pred[4,3]{1,0} broadcast(%pa), dimensions={0}\n"
                       "  %bb = pred[4,3]{1,0} broadcast(%pb), dimensions={1}\n"
                       "  %product = pred[4,3]{1,0} multiply(%ba, %bb)",
            .init = "%init = pred[4,3]{1,0} copy(%pinit)"}),
      false);
}

TEST(WhileLoopOuterProductToDotTest, LeavesLoopsWithoutAKnownTripIndex) {
  // The limit is carried state, not a constant.
  ParseAndRun<WhileLoopOuterProductToDot>(
      Loop({.compare = "%ci, %climit", .cond_extra = "%cys = s32[3]{0} get-tuple-element(%cs), index=2\n"
                                                     "  %cy = s32[1]{0} slice(%cys), slice={[0:1]}\n"
                                                     "  %climit = s32[] reshape(%cy)"}),
      false);
  // The counter steps by 2.
  std::string text = Loop({});
  text.replace(text.find("%one = s32[] constant(1)"), 24, "%one = s32[] constant(2)");
  ParseAndRun<WhileLoopOuterProductToDot>(text, false);
  // Counted down (i > limit).
  ParseAndRun<WhileLoopOuterProductToDot>(Loop({.direction = "GT"}), false);
}

TEST(WhileLoopOuterProductToDotTest, LeavesLoopsWhoseStacksExceedTheBudget) {
  // 5 * (4 + 3) s32 = 140 bytes of new stacks.
  const std::string computed_a = Loop({.a = std::string(kComputedA)});
  ParseAndRun<WhileLoopOuterProductToDot>(computed_a, false, WhileLoopOuterProductToDot(139));
  ParseAndRun<WhileLoopOuterProductToDot>(computed_a, true, WhileLoopOuterProductToDot(140));
  // a read from xs: 5 * 3 s32 = 60 bytes.
  ParseAndRun<WhileLoopOuterProductToDot>(Loop({}), false, WhileLoopOuterProductToDot(59));
  ParseAndRun<WhileLoopOuterProductToDot>(Loop({}), true, WhileLoopOuterProductToDot(60));
}

}  // namespace
}  // namespace jx::hlo::while_loop_outer_product_to_dot_test

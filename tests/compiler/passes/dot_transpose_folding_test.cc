#include "jx/compiler/passes/dot_transpose_folding.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

#include "pass_test_util.h"

namespace jx::hlo::dot_transpose_folding_test {
namespace {

using ::jx::hlo::testing::ComputationLines;
using ::jx::hlo::testing::ParseAndRun;
using ::testing::ElementsAre;

// The entry's lines with the new dots' numbered names (%dot.14) read as %dot.
std::vector<std::string> EntryLines(const HloModule& module) {
  std::vector<std::string> lines = testing::EntryLines(module);
  for (std::string& line : lines) line = std::regex_replace(line, std::regex("%dot\\.[0-9]+"), "%dot");
  return lines;
}

TEST(DotTransposeFoldingTest, OperandTransposesBecomeDimensionNumbers) {
  auto module = ParseAndRun<DotTransposeFolding>(R"(HloModule m
ENTRY %main {
  %x = f32[4,3]{1,0} parameter(0)
  %y = f32[5,4]{1,0} parameter(1)
  %xt = f32[3,4]{1,0} transpose(%x), dimensions={1,0}
  %yt = f32[4,5]{1,0} transpose(%y), dimensions={1,0}
  ROOT %d = f32[3,5]{1,0} dot(%xt, %yt), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})",
                                                 true);
  EXPECT_THAT(EntryLines(*module),
              ElementsAre("%x = f32[4,3]{1,0} parameter(0)", "%y = f32[5,4]{1,0} parameter(1)",
                          "ROOT %dot = f32[3,5]{1,0} dot(%x, %y), lhs_contracting_dims={0}, "
                          "rhs_contracting_dims={1}"));
}

TEST(DotTransposeFoldingTest, BatchedOperandTransposeMovesTheBatchDim) {
  // A vmapped matmul: the batch dim was moved to the front by a transpose.
  auto module = ParseAndRun<DotTransposeFolding>(R"(HloModule m
ENTRY %main {
  %x = f32[3,8,4]{2,1,0} parameter(0)
  %w = f32[8,4,5]{2,1,0} parameter(1)
  %xt = f32[8,3,4]{2,1,0} transpose(%x), dimensions={1,0,2}
  ROOT %d = f32[8,3,5]{2,1,0} dot(%xt, %w), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
})",
                                                 true);
  EXPECT_THAT(EntryLines(*module),
              ElementsAre("%x = f32[3,8,4]{2,1,0} parameter(0)",
                          "%w = f32[8,4,5]{2,1,0} parameter(1)",
                          "ROOT %dot = f32[8,3,5]{2,1,0} dot(%x, %w), lhs_batch_dims={1}, "
                          "lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}"));
}

TEST(DotTransposeFoldingTest, FoldsThroughTransposesWhileTheyKeepTheFreeDimOrder) {
  // t2 keeps t1's free dims in order and folds; t1 swaps x's free dims and stays.
  auto module = ParseAndRun<DotTransposeFolding>(R"(HloModule m
ENTRY %main {
  %x = f32[2,3,4]{2,1,0} parameter(0)
  %y = f32[4,5]{1,0} parameter(1)
  %t1 = f32[3,2,4]{2,1,0} transpose(%x), dimensions={1,0,2}
  %t2 = f32[4,3,2]{2,1,0} transpose(%t1), dimensions={2,0,1}
  ROOT %d = f32[3,2,5]{2,1,0} dot(%t2, %y), lhs_contracting_dims={0}, rhs_contracting_dims={0}
})",
                                                 true);
  EXPECT_THAT(EntryLines(*module),
              ElementsAre("%x = f32[2,3,4]{2,1,0} parameter(0)",
                          "%t1 = f32[3,2,4]{2,1,0} transpose(%x), dimensions={1,0,2}",
                          "%y = f32[4,5]{1,0} parameter(1)",
                          "ROOT %dot = f32[3,2,5]{2,1,0} dot(%t1, %y), lhs_contracting_dims={2}, "
                          "rhs_contracting_dims={0}"));
}

TEST(DotTransposeFoldingTest, ChainedFoldableTransposesAllGo) {
  auto module = ParseAndRun<DotTransposeFolding>(R"(HloModule m
ENTRY %main {
  %x = f32[4,3]{1,0} parameter(0)
  %y = f32[4,5]{1,0} parameter(1)
  %t1 = f32[3,4]{1,0} transpose(%x), dimensions={1,0}
  %t2 = f32[4,3]{1,0} transpose(%t1), dimensions={1,0}
  ROOT %d = f32[3,5]{1,0} dot(%t2, %y), lhs_contracting_dims={0}, rhs_contracting_dims={0}
})",
                                                 true);
  EXPECT_THAT(EntryLines(*module),
              ElementsAre("%x = f32[4,3]{1,0} parameter(0)", "%y = f32[4,5]{1,0} parameter(1)",
                          "ROOT %dot = f32[3,5]{1,0} dot(%x, %y), lhs_contracting_dims={0}, "
                          "rhs_contracting_dims={0}"));
}

TEST(DotTransposeFoldingTest, FreeDimReorderingTransposeStays) {
  ParseAndRun<DotTransposeFolding>(R"(HloModule m
ENTRY %main {
  %x = f32[2,3,4]{2,1,0} parameter(0)
  %y = f32[4,5]{1,0} parameter(1)
  %xt = f32[3,2,4]{2,1,0} transpose(%x), dimensions={1,0,2}
  ROOT %d = f32[3,2,5]{2,1,0} dot(%xt, %y), lhs_contracting_dims={2}, rhs_contracting_dims={0}
})",
                                   false);
}

TEST(DotTransposeFoldingTest, ResultTransposeSwapsTheOperands) {
  auto module = ParseAndRun<DotTransposeFolding>(R"(HloModule m
ENTRY %main {
  %x = f32[3,4]{1,0} parameter(0)
  %y = f32[4,5]{1,0} parameter(1)
  %d = f32[3,5]{1,0} dot(%x, %y), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT %t = f32[5,3]{1,0} transpose(%d), dimensions={1,0}
})",
                                                 true);
  EXPECT_THAT(EntryLines(*module),
              ElementsAre("%y = f32[4,5]{1,0} parameter(1)", "%x = f32[3,4]{1,0} parameter(0)",
                          "ROOT %dot = f32[5,3]{1,0} dot(%y, %x), lhs_contracting_dims={0}, "
                          "rhs_contracting_dims={1}"));
}

TEST(DotTransposeFoldingTest, RewrittenDotsKeepTheirOperandPrecision) {
  // Folding keeps each operand's precision; swapping the operands swaps it too.
  auto folded = ParseAndRun<DotTransposeFolding>(R"(HloModule m
ENTRY %main {
  %x = f32[4,3]{1,0} parameter(0)
  %y = f32[4,5]{1,0} parameter(1)
  %xt = f32[3,4]{1,0} transpose(%x), dimensions={1,0}
  ROOT %d = f32[3,5]{1,0} dot(%xt, %y), lhs_contracting_dims={1}, rhs_contracting_dims={0}, operand_precision={highest,high}
})",
                                                 true);
  EXPECT_THAT(EntryLines(*folded),
              ElementsAre("%x = f32[4,3]{1,0} parameter(0)", "%y = f32[4,5]{1,0} parameter(1)",
                          "ROOT %dot = f32[3,5]{1,0} dot(%x, %y), lhs_contracting_dims={0}, "
                          "rhs_contracting_dims={0}, operand_precision={highest,high}"));
  auto swapped = ParseAndRun<DotTransposeFolding>(R"(HloModule m
ENTRY %main {
  %x = f32[3,4]{1,0} parameter(0)
  %y = f32[4,5]{1,0} parameter(1)
  %d = f32[3,5]{1,0} dot(%x, %y), lhs_contracting_dims={1}, rhs_contracting_dims={0}, operand_precision={highest,default}
  ROOT %t = f32[5,3]{1,0} transpose(%d), dimensions={1,0}
})",
                                                  true);
  EXPECT_THAT(EntryLines(*swapped),
              ElementsAre("%y = f32[4,5]{1,0} parameter(1)", "%x = f32[3,4]{1,0} parameter(0)",
                          "ROOT %dot = f32[5,3]{1,0} dot(%y, %x), lhs_contracting_dims={0}, "
                          "rhs_contracting_dims={1}, operand_precision={default,highest}"));
}

TEST(DotTransposeFoldingTest, ResultTransposeOfADotWithOtherUsersStays) {
  ParseAndRun<DotTransposeFolding>(R"(HloModule m
ENTRY %main {
  %x = f32[3,4]{1,0} parameter(0)
  %y = f32[4,5]{1,0} parameter(1)
  %d = f32[3,5]{1,0} dot(%x, %y), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %t = f32[5,3]{1,0} transpose(%d), dimensions={1,0}
  ROOT %r = (f32[3,5]{1,0}, f32[5,3]{1,0}) tuple(%d, %t)
})",
                                   false);
}

TEST(DotTransposeFoldingTest, LoopFusionReadingTheDotTransposedReadsTheSwappedDot) {
  // tanh(d * 2)ᵀ + bᵀ... the transpose after an elementwise op with a scalar broadcast.
  auto module = ParseAndRun<DotTransposeFolding>(R"(HloModule m
%fused (p0: f32[3,5], p1: f32[5,3]) -> f32[5,3] {
  %p0 = f32[3,5]{1,0} parameter(0)
  %p1 = f32[5,3]{1,0} parameter(1)
  %two = f32[] constant(2)
  %b2 = f32[3,5]{1,0} broadcast(%two), dimensions={}
  %m = f32[3,5]{1,0} multiply(%p0, %b2)
  %th = f32[3,5]{1,0} tanh(%m)
  %tt = f32[5,3]{1,0} transpose(%th), dimensions={1,0}
  ROOT %a = f32[5,3]{1,0} add(%tt, %p1)
}
ENTRY %main {
  %x = f32[3,4]{1,0} parameter(0)
  %y = f32[4,5]{1,0} parameter(1)
  %z = f32[5,3]{1,0} parameter(2)
  %d = f32[3,5]{1,0} dot(%x, %y), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT %f = f32[5,3]{1,0} fusion(%d, %z), kind=kLoop, calls=%fused
})",
                                                 true);
  EXPECT_THAT(EntryLines(*module),
              ElementsAre("%y = f32[4,5]{1,0} parameter(1)", "%x = f32[3,4]{1,0} parameter(0)",
                          "%dot = f32[5,3]{1,0} dot(%y, %x), lhs_contracting_dims={0}, "
                          "rhs_contracting_dims={1}",
                          "%z = f32[5,3]{1,0} parameter(2)",
                          "ROOT %f = f32[5,3]{1,0} fusion(%dot, %z), kind=kLoop, calls=%fused"));
  EXPECT_THAT(ComputationLines(*module->GetComputationWithName("fused")),
              ElementsAre("%p0 = f32[5,3]{1,0} parameter(0)", "%two = f32[] constant(2)",
                          "%b2 = f32[5,3]{1,0} broadcast(%two), dimensions={}",
                          "%m = f32[5,3]{1,0} multiply(%p0, %b2)",
                          "%th = f32[5,3]{1,0} tanh(%m)", "%p1 = f32[5,3]{1,0} parameter(1)",
                          "ROOT %a = f32[5,3]{1,0} add(%th, %p1)"));
}

TEST(DotTransposeFoldingTest, LoopFusionAlsoReadingTheDotAsIsStays) {
  ParseAndRun<DotTransposeFolding>(R"(HloModule m
%fused (p0: f32[3,3]) -> f32[3,3] {
  %p0 = f32[3,3]{1,0} parameter(0)
  %tt = f32[3,3]{1,0} transpose(%p0), dimensions={1,0}
  ROOT %a = f32[3,3]{1,0} add(%tt, %p0)
}
ENTRY %main {
  %x = f32[3,4]{1,0} parameter(0)
  %y = f32[4,3]{1,0} parameter(1)
  %d = f32[3,3]{1,0} dot(%x, %y), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT %f = f32[3,3]{1,0} fusion(%d), kind=kLoop, calls=%fused
})",
                                   false);
}

TEST(DotTransposeFoldingTest, LoopFusionMixingInANonScalarOperandStays) {
  // %p1 is read in the dot's order: transposing the chain would misread it.
  ParseAndRun<DotTransposeFolding>(R"(HloModule m
%fused (p0: f32[3,5], p1: f32[3,5]) -> f32[5,3] {
  %p0 = f32[3,5]{1,0} parameter(0)
  %p1 = f32[3,5]{1,0} parameter(1)
  %s = f32[3,5]{1,0} subtract(%p0, %p1)
  ROOT %tt = f32[5,3]{1,0} transpose(%s), dimensions={1,0}
}
ENTRY %main {
  %x = f32[3,4]{1,0} parameter(0)
  %y = f32[4,5]{1,0} parameter(1)
  %z = f32[3,5]{1,0} parameter(2)
  %d = f32[3,5]{1,0} dot(%x, %y), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT %f = f32[5,3]{1,0} fusion(%d, %z), kind=kLoop, calls=%fused
})",
                                   false);
}

}  // namespace
}  // namespace jx::hlo::dot_transpose_folding_test

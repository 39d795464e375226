#include "jx/compiler/passes/layout_assignment.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "pass_test_util.h"

namespace jx::hlo::layout_assignment_test {
namespace {

using ::jx::hlo::testing::ComputationLines;
using ::jx::hlo::testing::EntryLines;
using ::jx::hlo::testing::ParseAndRun;
using ::testing::ElementsAre;

TEST(LayoutAssignmentTest, EveryShapeGetsTheDefaultLayout) {
  auto module = ParseAndRun<LayoutAssignment>(R"(HloModule m
%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %sum = f32[] add(%x, %y)
}
%fused (fp: f32[2,3]) -> f32[2,3] {
  %fp = f32[2,3]{0,1} parameter(0)
  ROOT %fn = f32[2,3]{0,1} negate(%fp)
}
ENTRY %main (p: f32[2,3], q: f32[4,5,6]) -> (f32[2,3], f32[3], f32[4,5,6]) {
  %p = f32[2,3]{0,1} parameter(0)
  %q = f32[4,5,6]{0,2,1} parameter(1)
  %e = f32[2,3]{0,1} exponential(%p)
  %f = f32[2,3]{0,1} fusion(%e), kind=kLoop, calls=%fused
  %zero = f32[] constant(0)
  %r = f32[3]{0} reduce(%f, %zero), dimensions={0}, to_apply=%add
  %n = f32[4,5,6]{2,0,1} negate(%q)
  ROOT %t = (f32[2,3]{0,1}, f32[3]{0}, f32[4,5,6]{1,2,0}) tuple(%f, %r, %n)
})",
                                              true);
  EXPECT_THAT(EntryLines(*module),
              ElementsAre("%p = f32[2,3]{1,0} parameter(0)",
                          "%e = f32[2,3]{1,0} exponential(%p)",
                          "%f = f32[2,3]{1,0} fusion(%e), kind=kLoop, calls=%fused",
                          "%zero = f32[] constant(0)",
                          "%r = f32[3]{0} reduce(%f, %zero), dimensions={0}, to_apply=%add",
                          "%q = f32[4,5,6]{2,1,0} parameter(1)",
                          "%n = f32[4,5,6]{2,1,0} negate(%q)",
                          "ROOT %t = (f32[2,3]{1,0}, f32[3]{0}, f32[4,5,6]{2,1,0}) "
                          "tuple(%f, %r, %n)"));
  EXPECT_THAT(ComputationLines(*module->GetComputationWithName("fused")),
              ElementsAre("%fp = f32[2,3]{1,0} parameter(0)",
                          "ROOT %fn = f32[2,3]{1,0} negate(%fp)"));
}

TEST(LayoutAssignmentTest, DefaultLayoutsAreLeftAlone) {
  ParseAndRun<LayoutAssignment>(R"(HloModule m
ENTRY %main {
  %p = f32[2,3]{1,0} parameter(0)
  %t = f32[3,2]{1,0} transpose(%p), dimensions={1,0}
  %b = f32[6]{0} bitcast(%p)
  ROOT %r = (f32[3,2]{1,0}, f32[6]{0}) tuple(%t, %b)
})",
                                false);
}

TEST(LayoutAssignmentTest, MissingLayoutGetsTheDefault) {
  auto module = ParseHloModule(R"(HloModule m
ENTRY %main {
  %p = f32[2,3]{1,0} parameter(0)
  ROOT %n = f32[2,3]{1,0} negate(%p)
})")
                    .value();
  Shape* root_shape = module->entry_computation()->root_instruction()->mutable_shape();
  Layout missing = root_shape->layout();
  missing.minor_to_major.clear();
  root_shape->set_layout(std::move(missing));
  EXPECT_FALSE(VerifyHloModule(*module).ok());
  LayoutAssignment pass;
  EXPECT_TRUE(pass.Run(module.get()).value());
  EXPECT_TRUE(VerifyHloModule(*module).ok()) << VerifyHloModule(*module);
  EXPECT_THAT(EntryLines(*module), ElementsAre("%p = f32[2,3]{1,0} parameter(0)",
                                               "ROOT %n = f32[2,3]{1,0} negate(%p)"));
  EXPECT_FALSE(pass.Run(module.get()).value());
}

// Tiles and memory spaces are part of a layout too: the default has neither, inside tuples
// as well.
TEST(LayoutAssignmentTest, TilesAndMemorySpacesGiveWayToTheDefault) {
  auto module = ParseAndRun<LayoutAssignment>(R"(HloModule m
ENTRY %main {
  %p = f32[8,128]{1,0:T(8,128)} parameter(0)
  %q = f32[4]{0:S(1)} parameter(1)
  %n = f32[8,128]{1,0} negate(%p)
  %u = (f32[4]{0:S(1)}) tuple(%q)
  ROOT %t = (f32[8,128]{1,0}, (f32[4]{0:S(1)})) tuple(%n, %u)
})",
                                              true);
  EXPECT_THAT(EntryLines(*module),
              ElementsAre("%p = f32[8,128]{1,0} parameter(0)", "%n = f32[8,128]{1,0} negate(%p)",
                          "%q = f32[4]{0} parameter(1)", "%u = (f32[4]{0}) tuple(%q)",
                          "ROOT %t = (f32[8,128]{1,0}, (f32[4]{0})) tuple(%n, %u)"));
}

// Reading a column-major buffer as a row-major one of the swapped dims is a transpose.
TEST(LayoutAssignmentTest, BitcastFromColumnMajorBecomesTranspose) {
  auto module = ParseAndRun<LayoutAssignment>(R"(HloModule m
ENTRY %main {
  %p = f32[2,3]{0,1} parameter(0)
  ROOT %b = f32[3,2]{1,0} bitcast(%p)
})",
                                              true);
  EXPECT_THAT(EntryLines(*module),
              ElementsAre("%p = f32[2,3]{1,0} parameter(0)",
                          "ROOT %transpose.3 = f32[3,2]{1,0} transpose(%p), dimensions={1,0}"));
}

TEST(LayoutAssignmentTest, BitcastToColumnMajorBecomesTranspose) {
  auto module = ParseAndRun<LayoutAssignment>(R"(HloModule m
ENTRY %main {
  %p = f32[2,3]{1,0} parameter(0)
  %b = f32[3,2]{0,1} bitcast(%p)
  ROOT %n = f32[3,2]{1,0} negate(%b)
})",
                                              true);
  EXPECT_THAT(EntryLines(*module),
              ElementsAre("%p = f32[2,3]{1,0} parameter(0)",
                          "%transpose.4 = f32[3,2]{1,0} transpose(%p), dimensions={1,0}",
                          "ROOT %n = f32[3,2]{1,0} negate(%transpose.4)"));
}

// Both sides non-default and different dims: physical order in, reshape, logical order out.
TEST(LayoutAssignmentTest, BitcastBetweenNonDefaultLayoutsMovesTheSameBytes) {
  auto module = ParseAndRun<LayoutAssignment>(R"(HloModule m
ENTRY %main {
  %p = f32[4,6]{0,1} parameter(0)
  ROOT %b = f32[2,12]{0,1} bitcast(%p)
})",
                                              true);
  EXPECT_THAT(EntryLines(*module),
              ElementsAre("%p = f32[4,6]{1,0} parameter(0)",
                          "%transpose.3 = f32[6,4]{1,0} transpose(%p), dimensions={1,0}",
                          "%reshape.4 = f32[12,2]{1,0} reshape(%transpose.3)",
                          "ROOT %transpose.5 = f32[2,12]{1,0} transpose(%reshape.4), "
                          "dimensions={1,0}"));
}

TEST(LayoutAssignmentTest, BitcastChangingElementTypeKeepsARowMajorBitcast) {
  auto module = ParseAndRun<LayoutAssignment>(R"(HloModule m
ENTRY %main {
  %p = f32[2,3]{0,1} parameter(0)
  ROOT %b = s32[3,2]{1,0} bitcast(%p)
})",
                                              true);
  EXPECT_THAT(EntryLines(*module),
              ElementsAre("%p = f32[2,3]{1,0} parameter(0)",
                          "%transpose.3 = f32[3,2]{1,0} transpose(%p), dimensions={1,0}",
                          "ROOT %bitcast.4 = s32[3,2]{1,0} bitcast(%transpose.3)"));
}

// Layouts that differ only in where a size-1 dim goes describe the same bytes.
TEST(LayoutAssignmentTest, BitcastOverSizeOneDimsStaysABitcast) {
  auto module = ParseAndRun<LayoutAssignment>(R"(HloModule m
ENTRY %main {
  %p = f32[1,4]{0,1} parameter(0)
  ROOT %b = f32[4,1]{1,0} bitcast(%p)
})",
                                              true);
  EXPECT_THAT(EntryLines(*module), ElementsAre("%p = f32[1,4]{1,0} parameter(0)",
                                               "ROOT %b = f32[4,1]{1,0} bitcast(%p)"));
}

TEST(LayoutAssignmentTest, TransposeOfSizeOneDimsBecomesBitcast) {
  auto module = ParseAndRun<LayoutAssignment>(R"(HloModule m
ENTRY %main {
  %p = f32[1,8,3]{2,1,0} parameter(0)
  %t = f32[8,1,3]{2,1,0} transpose(%p), dimensions={1,0,2}
  %u = f32[3,8,1]{2,1,0} transpose(%p), dimensions={2,1,0}
  ROOT %r = (f32[8,1,3]{2,1,0}, f32[3,8,1]{2,1,0}) tuple(%t, %u)
})",
                                              true);
  EXPECT_THAT(EntryLines(*module),
              ElementsAre("%p = f32[1,8,3]{2,1,0} parameter(0)",
                          "%bitcast.5 = f32[8,1,3]{2,1,0} bitcast(%p)",
                          "%u = f32[3,8,1]{2,1,0} transpose(%p), dimensions={2,1,0}",
                          "ROOT %r = (f32[8,1,3]{2,1,0}, f32[3,8,1]{2,1,0}) tuple(%bitcast.5, %u)"));
}

TEST(LayoutAssignmentTest, IsRowMajorNoOpTranspose) {
  EXPECT_TRUE(IsRowMajorNoOpTranspose({2, 3}, {0, 1}));
  EXPECT_FALSE(IsRowMajorNoOpTranspose({2, 3}, {1, 0}));
  EXPECT_TRUE(IsRowMajorNoOpTranspose({1, 3}, {1, 0}));
  EXPECT_TRUE(IsRowMajorNoOpTranspose({2, 1, 3}, {1, 0, 2}));
  EXPECT_FALSE(IsRowMajorNoOpTranspose({2, 1, 3}, {2, 1, 0}));
}

// A custom-call's declared layout is the callee's: it stays, and readers get a copy.
class PinnedLayoutTest : public ::testing::Test {
 protected:
  static constexpr char kTarget[] = "jx_layout_test_negate";
  void SetUp() override {
    HloEvaluator::RegisterCustomCallTarget(
        kTarget, [](const HloInstruction& instr,
                    absl::Span<const Literal* const> operands) -> absl::StatusOr<Literal> {
          Literal out(instr.shape());
          for (int64_t i = 0; i < out.element_count(); ++i) {
            out.SetFromDouble(i, -operands[0]->GetAsDouble(i));
          }
          return out;
        });
  }
  void TearDown() override { HloEvaluator::UnregisterCustomCallTarget(kTarget); }
};

TEST_F(PinnedLayoutTest, ReadersButCopiesGetOneConvertingCopy) {
  auto module = ParseAndRun<LayoutAssignment>(R"(HloModule m
ENTRY %main {
  %p = f32[2,3]{1,0} parameter(0)
  %cc = f32[2,3]{0,1} custom-call(%p), custom_call_target="jx_layout_test_negate"
  %e = f32[2,3]{1,0} exponential(%cc)
  %c = f32[2,3]{1,0} copy(%cc)
  %t = f32[3,2]{1,0} transpose(%cc), dimensions={1,0}
  ROOT %r = (f32[2,3]{1,0}, f32[2,3]{1,0}, f32[3,2]{1,0}) tuple(%e, %c, %t)
})",
                                              true);
  EXPECT_THAT(EntryLines(*module),
              ElementsAre("%p = f32[2,3]{1,0} parameter(0)",
                          "%cc = f32[2,3]{0,1} custom-call(%p), "
                          "custom_call_target=\"jx_layout_test_negate\"",
                          "%copy.7 = f32[2,3]{1,0} copy(%cc)",
                          "%e = f32[2,3]{1,0} exponential(%copy.7)",
                          "%c = f32[2,3]{1,0} copy(%cc)",
                          "%t = f32[3,2]{1,0} transpose(%copy.7), dimensions={1,0}",
                          "ROOT %r = (f32[2,3]{1,0}, f32[2,3]{1,0}, f32[3,2]{1,0}) "
                          "tuple(%e, %c, %t)"));
}

TEST_F(PinnedLayoutTest, EntryResultIsConvertedToRowMajor) {
  auto module = ParseAndRun<LayoutAssignment>(R"(HloModule m
ENTRY %main {
  %p = f32[2,3]{0,1} parameter(0)
  ROOT %cc = f32[2,3]{0,1} custom-call(%p), custom_call_target="jx_layout_test_negate"
})",
                                              true);
  EXPECT_THAT(EntryLines(*module),
              ElementsAre("%p = f32[2,3]{1,0} parameter(0)",
                          "%cc = f32[2,3]{0,1} custom-call(%p), "
                          "custom_call_target=\"jx_layout_test_negate\"",
                          "ROOT %copy.3 = f32[2,3]{1,0} copy(%cc)"));
  EXPECT_EQ(module->entry_computation()->ComputeProgramShape().ToString(),
            "(f32[2,3]{1,0})->f32[2,3]{1,0}");
}

// A bitcast reading the custom-call's buffer sees its declared layout.
TEST_F(PinnedLayoutTest, BitcastOfPinnedLayoutReadsItsBytes) {
  auto module = ParseAndRun<LayoutAssignment>(R"(HloModule m
ENTRY %main {
  %p = f32[2,3]{1,0} parameter(0)
  %cc = f32[2,3]{0,1} custom-call(%p), custom_call_target="jx_layout_test_negate"
  ROOT %b = f32[6]{0} bitcast(%cc)
})",
                                              true);
  EXPECT_THAT(EntryLines(*module),
              ElementsAre("%p = f32[2,3]{1,0} parameter(0)",
                          "%cc = f32[2,3]{0,1} custom-call(%p), "
                          "custom_call_target=\"jx_layout_test_negate\"",
                          "%copy.6 = f32[2,3]{1,0} copy(%cc)",
                          "%transpose.4 = f32[3,2]{1,0} transpose(%copy.6), dimensions={1,0}",
                          "ROOT %reshape.5 = f32[6]{0} reshape(%transpose.4)"));
}

TEST(LayoutAssignmentTest, WhileLoopStateAndBodiesAgree) {
  ParseAndRun<LayoutAssignment>(R"(HloModule m
%cond (cs: (s32[], f32[2,3])) -> pred[] {
  %cs = (s32[], f32[2,3]{0,1}) parameter(0)
  %ci = s32[] get-tuple-element(%cs), index=0
  %limit = s32[] constant(3)
  ROOT %lt = pred[] compare(%ci, %limit), direction=LT
}
%body (bs: (s32[], f32[2,3])) -> (s32[], f32[2,3]) {
  %bs = (s32[], f32[2,3]{0,1}) parameter(0)
  %bi = s32[] get-tuple-element(%bs), index=0
  %bx = f32[2,3]{0,1} get-tuple-element(%bs), index=1
  %one = s32[] constant(1)
  %next = s32[] add(%bi, %one)
  %sx = f32[2,3]{0,1} sine(%bx)
  ROOT %bt = (s32[], f32[2,3]{0,1}) tuple(%next, %sx)
}
ENTRY %main {
  %p = f32[2,3]{1,0} parameter(0)
  %zero = s32[] constant(0)
  %init = (s32[], f32[2,3]{0,1}) tuple(%zero, %p)
  %w = (s32[], f32[2,3]{0,1}) while(%init), condition=%cond, body=%body
  ROOT %out = f32[2,3]{0,1} get-tuple-element(%w), index=1
})",
                                true);
}

}  // namespace
}  // namespace jx::hlo::layout_assignment_test

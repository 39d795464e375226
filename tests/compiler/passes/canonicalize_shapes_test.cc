#include "jx/compiler/passes/canonicalize_shapes.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "jx/compiler/hlo/pattern_matcher.h"
#include "pass_test_util.h"

namespace jx::hlo::canonicalize_shapes_test {
namespace {

namespace m = ::jx::hlo::match;
using ::jx::hlo::testing::EntryLines;
using ::jx::hlo::testing::ParseAndRun;
using ::testing::ElementsAre;

std::unique_ptr<HloModule> Canonicalize(std::string_view text, bool expect_changed = true) {
  return ParseAndRun<CanonicalizeShapes>(text, expect_changed);
}

TEST(CanonicalizeShapesTest, DegenerateReshapeIntoBroadcastFolds) {
  auto module = Canonicalize(R"(HloModule m
ENTRY %main {
  %p = f32[8]{0} parameter(0)
  %r = f32[1,8,1]{2,1,0} reshape(%p)
  ROOT %b = f32[4,1,8,1]{3,2,1,0} broadcast(%r), dimensions={1,2,3}
})");
  EXPECT_THAT(EntryLines(*module),
              ElementsAre("%p = f32[8]{0} parameter(0)",
                          "ROOT %broadcast.4 = f32[4,1,8,1]{3,2,1,0} broadcast(%p), dimensions={2}"));
}

TEST(CanonicalizeShapesTest, ReshapeRemovingUnitDimsLandsThemOnUnitResultDims) {
  auto module = Canonicalize(R"(HloModule m
ENTRY %main {
  %p = f32[1,8]{1,0} parameter(0)
  %r = f32[8]{0} reshape(%p)
  ROOT %b = f32[8,1]{1,0} broadcast(%r), dimensions={0}
})");
  EXPECT_THAT(EntryLines(*module),
              ElementsAre("%p = f32[1,8]{1,0} parameter(0)",
                          "ROOT %broadcast.4 = f32[8,1]{1,0} broadcast(%p), dimensions={1,0}"));
}

TEST(CanonicalizeShapesTest, RealReshapeOrNoRoomForUnitDimsIsKept) {
  Canonicalize(R"(HloModule m
ENTRY %main {
  %p = f32[2,4]{1,0} parameter(0)
  %r = f32[8]{0} reshape(%p)
  %b = f32[3,8]{1,0} broadcast(%r), dimensions={1}
  %q = f32[1,8]{1,0} parameter(1)
  %r2 = f32[8]{0} reshape(%q)
  %b2 = f32[3,8]{1,0} broadcast(%r2), dimensions={1}
  ROOT %a = f32[3,8]{1,0} add(%b, %b2)
})",
               false);
}

TEST(CanonicalizeShapesTest, BroadcastOfBroadcastIsOneBroadcast) {
  auto module = Canonicalize(R"(HloModule m
ENTRY %main {
  %p = f32[3]{0} parameter(0)
  %b1 = f32[3,5]{1,0} broadcast(%p), dimensions={0}
  ROOT %b2 = f32[2,5,3]{2,1,0} broadcast(%b1), dimensions={2,1}
})");
  EXPECT_THAT(EntryLines(*module),
              ElementsAre("%p = f32[3]{0} parameter(0)",
                          "ROOT %broadcast.4 = f32[2,5,3]{2,1,0} broadcast(%p), dimensions={2}"));
}

TEST(CanonicalizeShapesTest, TransposeOfBroadcastIsABroadcast) {
  auto module = Canonicalize(R"(HloModule m
ENTRY %main {
  %p = f32[3,4]{1,0} parameter(0)
  %b = f32[3,4,5]{2,1,0} broadcast(%p), dimensions={0,1}
  ROOT %t = f32[5,4,3]{2,1,0} transpose(%b), dimensions={2,1,0}
})");
  EXPECT_THAT(EntryLines(*module),
              ElementsAre("%p = f32[3,4]{1,0} parameter(0)",
                          "ROOT %broadcast.4 = f32[5,4,3]{2,1,0} broadcast(%p), dimensions={2,1}"));
}

TEST(CanonicalizeShapesTest, TransposesSinkThroughElementwiseChains) {
  auto module = Canonicalize(R"(HloModule m
ENTRY %main {
  %a = f32[2,3]{1,0} parameter(0)
  %b = f32[2,3]{1,0} parameter(1)
  %ta = f32[3,2]{1,0} transpose(%a), dimensions={1,0}
  %tb = f32[3,2]{1,0} transpose(%b), dimensions={1,0}
  %c = f32[] constant(2)
  %cb = f32[3,2]{1,0} broadcast(%c), dimensions={}
  %mul = f32[3,2]{1,0} multiply(%ta, %cb)
  %add = f32[3,2]{1,0} add(%mul, %tb)
  ROOT %e = f32[3,2]{1,0} exponential(%add)
})");
  // One transpose left, at the output; the ops run in the operands' own order.
  HloInstruction* a = nullptr;
  HloInstruction* b = nullptr;
  HloInstruction* t = nullptr;
  ASSERT_TRUE(Match(module->entry_computation()->root_instruction(),
                    m::Transpose(&t, m::Exp(m::Add(m::Multiply(m::Parameter(&a),
                                                               m::Broadcast(m::Constant())),
                                                   m::Parameter(&b))))))
      << module->ToString();
  EXPECT_EQ(a->name(), "a");
  EXPECT_EQ(b->name(), "b");
  EXPECT_THAT(t->dimensions(), ElementsAre(1, 0));
  EXPECT_EQ(t->operand(0)->shape(), ShapeUtil::MakeShape(F32, {2, 3}));
  int transposes = 0;
  for (const HloInstruction* instr : module->entry_computation()->instructions()) {
    transposes += instr->opcode() == HloOpcode::kTranspose;
  }
  EXPECT_EQ(transposes, 1);
}

TEST(CanonicalizeShapesTest, CompareKeepsItsDirectionWhenSunk) {
  auto module = Canonicalize(R"(HloModule m
ENTRY %main {
  %a = s32[2,3]{1,0} parameter(0)
  %b = s32[2,3]{1,0} parameter(1)
  %ta = s32[3,2]{1,0} transpose(%a), dimensions={1,0}
  %tb = s32[3,2]{1,0} transpose(%b), dimensions={1,0}
  ROOT %lt = pred[3,2]{1,0} compare(%ta, %tb), direction=LT
})");
  HloInstruction* cmp = nullptr;
  ASSERT_TRUE(Match(module->entry_computation()->root_instruction(),
                    m::Transpose(m::Compare(&cmp, m::Parameter(), m::Parameter()))));
  EXPECT_EQ(cmp->comparison_direction(), ComparisonDirection::kLt);
  EXPECT_EQ(cmp->shape(), ShapeUtil::MakeShape(PRED, {2, 3}));
}

TEST(CanonicalizeShapesTest, MismatchedOrSharedTransposesStay) {
  Canonicalize(R"(HloModule m
ENTRY %main {
  %a = f32[2,2]{1,0} parameter(0)
  %b = f32[2,2]{1,0} parameter(1)
  %ta = f32[2,2]{1,0} transpose(%a), dimensions={1,0}
  %add = f32[2,2]{1,0} add(%ta, %b)
  %shared = f32[2,2]{1,0} transpose(%b), dimensions={1,0}
  %n = f32[2,2]{1,0} negate(%shared)
  %s = f32[2,2]{1,0} sine(%shared)
  ROOT %r = (f32[2,2]{1,0}, f32[2,2]{1,0}, f32[2,2]{1,0}) tuple(%add, %n, %s)
})",
               false);
}

TEST(CanonicalizeShapesTest, BitcastLikeReshapeStaysAReshape) {
  Canonicalize(R"(HloModule m
ENTRY %main {
  %p = f32[2,3]{1,0} parameter(0)
  %r = f32[6]{0} reshape(%p)
  ROOT %n = f32[6]{0} negate(%r)
})",
               false);
}

}  // namespace
}  // namespace jx::hlo::canonicalize_shapes_test

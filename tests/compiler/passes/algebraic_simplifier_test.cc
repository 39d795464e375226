#include "jx/compiler/passes/algebraic_simplifier.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "jx/compiler/hlo/pattern_matcher.h"
#include "pass_test_util.h"

namespace jx::hlo::algebraic_simplifier_test {
namespace {

namespace m = ::jx::hlo::match;
using ::jx::hlo::testing::ComputationLines;
using ::jx::hlo::testing::EntryLines;
using ::jx::hlo::testing::ParseAndRun;
using ::testing::ElementsAre;

std::unique_ptr<HloModule> Simplify(std::string_view text, bool expect_changed = true) {
  return ParseAndRun<AlgebraicSimplifier>(text, expect_changed);
}

HloInstruction* Root(const HloModule& module) {
  return module.entry_computation()->root_instruction();
}

TEST(AlgebraicSimplifierTest, AddZeroEitherSideWithBroadcastOrArrayZero) {
  auto module = Simplify(R"(HloModule m
ENTRY %main {
  %p = f32[4]{0} parameter(0)
  %c = f32[] constant(0)
  %z = f32[4]{0} broadcast(%c), dimensions={}
  %za = f32[4]{0} constant({0, 0, 0, 0})
  %a = f32[4]{0} add(%p, %z)
  %b = f32[4]{0} add(%za, %a)
  ROOT %r = f32[4]{0} negate(%b)
})");
  EXPECT_THAT(EntryLines(*module),
              ElementsAre("%p = f32[4]{0} parameter(0)", "ROOT %r = f32[4]{0} negate(%p)"));
}

TEST(AlgebraicSimplifierTest, AddOfNonZeroConstantIsKept) {
  Simplify(R"(HloModule m
ENTRY %main {
  %p = f32[2]{0} parameter(0)
  %c = f32[2]{0} constant({0, 1})
  ROOT %a = f32[2]{0} add(%p, %c)
})",
           false);
}

TEST(AlgebraicSimplifierTest, SubtractZeroMultiplyOneDivideOne) {
  auto module = Simplify(R"(HloModule m
ENTRY %main {
  %p = f32[4]{0} parameter(0)
  %zero = f32[] constant(0)
  %one = f32[] constant(1)
  %z = f32[4]{0} broadcast(%zero), dimensions={}
  %o = f32[4]{0} broadcast(%one), dimensions={}
  %s = f32[4]{0} subtract(%p, %z)
  %m1 = f32[4]{0} multiply(%o, %s)
  %m2 = f32[4]{0} multiply(%m1, %o)
  ROOT %d = f32[4]{0} divide(%m2, %o)
})");
  EXPECT_THAT(EntryLines(*module), ElementsAre("ROOT %p = f32[4]{0} parameter(0)"));
}

// The binary identities look for a constant, broadcast or reshape operand before matching:
// a splat behind a reshape still folds.
TEST(AlgebraicSimplifierTest, MultiplyByAReshapedSplatOfOne) {
  auto module = Simplify(R"(HloModule m
ENTRY %main {
  %p = f32[4]{0} parameter(0)
  %c = f32[1,4]{1,0} constant({ { 1, 1, 1, 1 } })
  %o = f32[4]{0} reshape(%c)
  ROOT %m = f32[4]{0} multiply(%o, %p)
})");
  EXPECT_THAT(EntryLines(*module), ElementsAre("ROOT %p = f32[4]{0} parameter(0)"));
}

TEST(AlgebraicSimplifierTest, ZeroMinusXAndOneOverXAreKept) {
  Simplify(R"(HloModule m
ENTRY %main {
  %p = f32[16]{0} parameter(0)
  %zero = f32[] constant(0)
  %z = f32[16]{0} broadcast(%zero), dimensions={}
  %s = f32[16]{0} subtract(%z, %p)
  %one = f32[] constant(1)
  %o = f32[16]{0} broadcast(%one), dimensions={}
  ROOT %d = f32[16]{0} divide(%o, %s)
})",
           false);
}

TEST(AlgebraicSimplifierTest, MultiplyByZeroFoldsForIntegersOnly) {
  auto module = Simplify(R"(HloModule m
ENTRY %main {
  %p = s32[16]{0} parameter(0)
  %zero = s32[] constant(0)
  %z = s32[16]{0} broadcast(%zero), dimensions={}
  ROOT %m = s32[16]{0} multiply(%p, %z)
})");
  EXPECT_THAT(EntryLines(*module), ElementsAre("%p = s32[16]{0} parameter(0)", "%zero = s32[] constant(0)",
                                               "ROOT %z = s32[16]{0} broadcast(%zero), dimensions={}"));
  // x * 0 is nan for x = inf or nan: XLA keeps it for floats, and so do we.
  Simplify(R"(HloModule m
ENTRY %main {
  %p = f32[16]{0} parameter(0)
  %zero = f32[] constant(0)
  %z = f32[16]{0} broadcast(%zero), dimensions={}
  ROOT %m = f32[16]{0} multiply(%z, %p)
})",
           false);
}

TEST(AlgebraicSimplifierTest, DoubleNegationMaxMinOfSelf) {
  auto module = Simplify(R"(HloModule m
ENTRY %main {
  %p = f32[4]{0} parameter(0)
  %n1 = f32[4]{0} negate(%p)
  %n2 = f32[4]{0} negate(%n1)
  %mx = f32[4]{0} maximum(%n2, %n2)
  %mn = f32[4]{0} minimum(%mx, %mx)
  ROOT %e = f32[4]{0} exponential(%mn)
})");
  EXPECT_THAT(EntryLines(*module),
              ElementsAre("%p = f32[4]{0} parameter(0)", "ROOT %e = f32[4]{0} exponential(%p)"));
}

TEST(AlgebraicSimplifierTest, PredAndTrueOrFalse) {
  auto module = Simplify(R"(HloModule m
ENTRY %main {
  %p = pred[4]{0} parameter(0)
  %t = pred[] constant(true)
  %f = pred[] constant(false)
  %tb = pred[4]{0} broadcast(%t), dimensions={}
  %fb = pred[4]{0} broadcast(%f), dimensions={}
  %a = pred[4]{0} and(%tb, %p)
  ROOT %o = pred[4]{0} or(%a, %fb)
})");
  EXPECT_THAT(EntryLines(*module), ElementsAre("ROOT %p = pred[4]{0} parameter(0)"));
}

TEST(AlgebraicSimplifierTest, ExpOfLogAndLogOfExpAreNotFolded) {
  Simplify(R"(HloModule m
ENTRY %main {
  %p = f32[4]{0} parameter(0)
  %l = f32[4]{0} log(%p)
  %e = f32[4]{0} exponential(%l)
  %e2 = f32[4]{0} exponential(%e)
  ROOT %l2 = f32[4]{0} log(%e2)
})",
           false);
}

TEST(AlgebraicSimplifierTest, TransposeOfTransposeComposes) {
  auto module = Simplify(R"(HloModule m
ENTRY %main {
  %p = f32[2,3,4]{2,1,0} parameter(0)
  %t1 = f32[3,4,2]{2,1,0} transpose(%p), dimensions={1,2,0}
  ROOT %t2 = f32[4,3,2]{2,1,0} transpose(%t1), dimensions={1,0,2}
})");
  HloInstruction* p = nullptr;
  HloInstruction* t = nullptr;
  ASSERT_TRUE(Match(Root(*module), m::Transpose(&t, m::Parameter(&p))));
  EXPECT_THAT(t->dimensions(), ElementsAre(2, 1, 0));
  EXPECT_EQ(t->shape(), ShapeUtil::MakeShape(F32, {4, 3, 2}));
  EXPECT_EQ(module->entry_computation()->instruction_count(), 2);
}

TEST(AlgebraicSimplifierTest, InverseAndIdentityTransposesVanish) {
  auto module = Simplify(R"(HloModule m
ENTRY %main {
  %p = f32[2,3,4]{2,1,0} parameter(0)
  %t1 = f32[3,4,2]{2,1,0} transpose(%p), dimensions={1,2,0}
  %t2 = f32[2,3,4]{2,1,0} transpose(%t1), dimensions={2,0,1}
  %id = f32[2,3,4]{2,1,0} transpose(%t2), dimensions={0,1,2}
  ROOT %s = f32[2,3,4]{2,1,0} sine(%id)
})");
  EXPECT_THAT(EntryLines(*module), ElementsAre("%p = f32[2,3,4]{2,1,0} parameter(0)",
                                               "ROOT %s = f32[2,3,4]{2,1,0} sine(%p)"));
}

// The transpose of an outer product (a scan gradient's per-step weight update) folds into
// the broadcasts: no transposed index is left for the fused loop.
TEST(AlgebraicSimplifierTest, TransposeOfOuterProductFoldsIntoBroadcasts) {
  auto module = Simplify(R"(HloModule m
ENTRY %main {
  %a = f32[3]{0} parameter(0)
  %b = f32[4]{0} parameter(1)
  %ba = f32[3,4]{1,0} broadcast(%a), dimensions={0}
  %bb = f32[3,4]{1,0} broadcast(%b), dimensions={1}
  %m = f32[3,4]{1,0} multiply(%ba, %bb)
  ROOT %t = f32[4,3]{1,0} transpose(%m), dimensions={1,0}
})");
  HloInstruction* x = nullptr;
  HloInstruction* y = nullptr;
  ASSERT_TRUE(Match(Root(*module), m::Multiply(m::Broadcast(&x, m::Parameter()), m::Broadcast(&y, m::Parameter()))));
  EXPECT_THAT(x->dimensions(), ElementsAre(1));
  EXPECT_THAT(y->dimensions(), ElementsAre(0));
  EXPECT_EQ(Root(*module)->shape(), ShapeUtil::MakeShape(F32, {4, 3}));
}

// A broadcast whose dims would leave its operand's order, and a compare (its direction), keep
// their transposes.
TEST(AlgebraicSimplifierTest, TransposeStaysOnReorderingBroadcastAndCompare) {
  Simplify(R"(HloModule m
ENTRY %main {
  %a = f32[3,4]{1,0} parameter(0)
  %ba = f32[3,4,5]{2,1,0} broadcast(%a), dimensions={0,1}
  ROOT %t = f32[4,3,5]{2,1,0} transpose(%ba), dimensions={1,0,2}
})",
           false);
  Simplify(R"(HloModule m
ENTRY %main {
  %a = f32[3]{0} parameter(0)
  %b = f32[4]{0} parameter(1)
  %ba = f32[3,4]{1,0} broadcast(%a), dimensions={0}
  %bb = f32[3,4]{1,0} broadcast(%b), dimensions={1}
  %c = pred[3,4]{1,0} compare(%ba, %bb), direction=LT
  ROOT %t = pred[4,3]{1,0} transpose(%c), dimensions={1,0}
})",
           false);
}

TEST(AlgebraicSimplifierTest, ReshapeOfReshapeAndNoOpReshape) {
  auto module = Simplify(R"(HloModule m
ENTRY %main {
  %p = f32[2,6]{1,0} parameter(0)
  %r1 = f32[12]{0} reshape(%p)
  %r2 = f32[3,4]{1,0} reshape(%r1)
  %same = f32[3,4]{1,0} reshape(%r2)
  ROOT %n = f32[3,4]{1,0} negate(%same)
})");
  HloInstruction* r = nullptr;
  ASSERT_TRUE(Match(Root(*module), m::Negate(m::Reshape(&r, m::Parameter()))));
  EXPECT_EQ(r->shape(), ShapeUtil::MakeShape(F32, {3, 4}));
  EXPECT_EQ(module->entry_computation()->instruction_count(), 3);
}

TEST(AlgebraicSimplifierTest, ReshapeBackToOriginalShapeVanishes) {
  auto module = Simplify(R"(HloModule m
ENTRY %main {
  %p = f32[2,6]{1,0} parameter(0)
  %r1 = f32[12]{0} reshape(%p)
  %r2 = f32[2,6]{1,0} reshape(%r1)
  ROOT %n = f32[2,6]{1,0} negate(%r2)
})");
  EXPECT_THAT(EntryLines(*module), ElementsAre("%p = f32[2,6]{1,0} parameter(0)",
                                               "ROOT %n = f32[2,6]{1,0} negate(%p)"));
}

TEST(AlgebraicSimplifierTest, TinyBroadcastOfScalarConstantBecomesAConstant) {
  auto module = Simplify(R"(HloModule m
ENTRY %main {
  %p = f32[2,2]{1,0} parameter(0)
  %c = f32[] constant(3)
  %b = f32[2,2]{1,0} broadcast(%c), dimensions={}
  ROOT %m = f32[2,2]{1,0} multiply(%p, %b)
})");
  HloInstruction* c = nullptr;
  ASSERT_TRUE(Match(Root(*module), m::Multiply(m::Parameter(), m::Constant(&c))));
  EXPECT_EQ(c->literal().ToString(), "{{3, 3}, {3, 3}}");
  // Larger broadcasts stay broadcasts (fusion reads them for free).
  Simplify(R"(HloModule m
ENTRY %main {
  %p = f32[16]{0} parameter(0)
  %c = f32[] constant(3)
  %b = f32[16]{0} broadcast(%c), dimensions={}
  ROOT %m = f32[16]{0} multiply(%p, %b)
})",
           false);
}

TEST(AlgebraicSimplifierTest, NoOpShapeOpsVanish) {
  auto module = Simplify(R"(HloModule m
ENTRY %main {
  %p = f32[2,3]{1,0} parameter(0)
  %b = f32[2,3]{1,0} broadcast(%p), dimensions={0,1}
  %s = f32[2,3]{1,0} slice(%b), slice={[0:2], [0:3]}
  %c = f32[2,3]{1,0} concatenate(%s), dimensions={1}
  %v = f32[2,3]{1,0} convert(%c)
  %zero = f32[] constant(0)
  %pad = f32[2,3]{1,0} pad(%v, %zero), padding=0_0x0_0
  ROOT %n = f32[2,3]{1,0} negate(%pad)
})");
  EXPECT_THAT(EntryLines(*module), ElementsAre("%p = f32[2,3]{1,0} parameter(0)",
                                               "ROOT %n = f32[2,3]{1,0} negate(%p)"));
}

TEST(AlgebraicSimplifierTest, WindowsOfASplatAreSplats) {
  // A slice or dynamic-slice of a broadcast scalar (a constant stack a loop slices each
  // trip, once WhileLoopConstantSinking put it there) is the scalar broadcast to the window.
  auto module = Simplify(R"(HloModule m
ENTRY %main {
  %p = f32[] parameter(0)
  %i = s32[] parameter(1)
  %b = f32[64,8]{1,0} broadcast(%p), dimensions={}
  %s = f32[4,8]{1,0} slice(%b), slice={[0:4], [0:8]}
  %z = s32[] constant(0)
  %d = f32[4,8]{1,0} dynamic-slice(%b, %i, %z), dynamic_slice_sizes={4,8}
  ROOT %a = f32[4,8]{1,0} add(%s, %d)
})");
  const std::vector<std::string> ops = ::jx::hlo::testing::Opcodes(*module->entry_computation());
  EXPECT_THAT(ops, ::testing::Not(::testing::Contains("slice")));
  EXPECT_THAT(ops, ::testing::Not(::testing::Contains("dynamic-slice")));
  const HloInstruction* root = module->entry_computation()->root_instruction();
  for (const HloInstruction* window : root->operands()) {
    EXPECT_EQ(window->opcode(), HloOpcode::kBroadcast);
    EXPECT_EQ(window->operand(0)->name(), "p");
  }
}

TEST(AlgebraicSimplifierTest, PartialSliceTransposingBroadcastRealPadAreKept) {
  Simplify(R"(HloModule m
ENTRY %main {
  %p = f32[2,2]{1,0} parameter(0)
  %b = f32[2,2]{1,0} broadcast(%p), dimensions={1,0}
  %s = f32[2,1]{1,0} slice(%b), slice={[0:2], [0:1]}
  %zero = f32[] constant(0)
  %pad = f32[2,2]{1,0} pad(%s, %zero), padding=0_0x0_1
  ROOT %v = s32[2,2]{1,0} convert(%pad)
})",
           false);
}

TEST(AlgebraicSimplifierTest, ReduceOverNothingWithIdentityInit) {
  auto module = Simplify(R"(HloModule m
%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(%x, %y)
}
%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %mx = f32[] maximum(%a, %b)
}
ENTRY %main {
  %p = f32[4,1]{1,0} parameter(0)
  %zero = f32[] constant(0)
  %ninf = f32[] constant(-inf)
  %r0 = f32[4,1]{1,0} reduce(%p, %zero), dimensions={}, to_apply=%add
  %r1 = f32[4]{0} reduce(%r0, %ninf), dimensions={1}, to_apply=%max
  ROOT %n = f32[4]{0} negate(%r1)
})");
  HloInstruction* p = nullptr;
  ASSERT_TRUE(Match(Root(*module), m::Negate(m::Reshape(m::Parameter(&p)))));
  EXPECT_EQ(module->entry_computation()->instruction_count(), 3);
}

TEST(AlgebraicSimplifierTest, ReduceWithNonIdentityInitOrRealDimsIsKept) {
  Simplify(R"(HloModule m
%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(%x, %y)
}
ENTRY %main {
  %p = f32[4,2]{1,0} parameter(0)
  %one = f32[] constant(1)
  %zero = f32[] constant(0)
  %r0 = f32[4,2]{1,0} reduce(%p, %one), dimensions={}, to_apply=%add
  ROOT %r1 = f32[4]{0} reduce(%r0, %zero), dimensions={1}, to_apply=%add
})",
           false);
}

TEST(AlgebraicSimplifierTest, SelectWithConstantPredicate) {
  auto module = Simplify(R"(HloModule m
ENTRY %main {
  %a = f32[4]{0} parameter(0)
  %b = f32[4]{0} parameter(1)
  %t = pred[] constant(true)
  %tb = pred[4]{0} broadcast(%t), dimensions={}
  %f = pred[4]{0} constant({false, false, false, false})
  %s1 = f32[4]{0} select(%tb, %a, %b)
  %s2 = f32[4]{0} select(%f, %a, %b)
  ROOT %r = f32[4]{0} subtract(%s1, %s2)
})");
  EXPECT_THAT(EntryLines(*module),
              ElementsAre("%a = f32[4]{0} parameter(0)", "%b = f32[4]{0} parameter(1)",
                          "ROOT %r = f32[4]{0} subtract(%a, %b)"));
}

TEST(AlgebraicSimplifierTest, IntegerCompareWithItself) {
  auto module = Simplify(R"(HloModule m
ENTRY %main {
  %p = s32[16]{0} parameter(0)
  %ge = pred[16]{0} compare(%p, %p), direction=GE
  %lt = pred[16]{0} compare(%p, %p), direction=LT
  ROOT %r = pred[16]{0} xor(%ge, %lt)
})");
  HloInstruction* t = nullptr;
  HloInstruction* f = nullptr;
  ASSERT_TRUE(Match(Root(*module), m::Xor(m::Broadcast(m::Constant(&t)),
                                          m::Broadcast(m::Constant(&f)))));
  EXPECT_EQ(t->literal().ToString(), "true");
  EXPECT_EQ(f->literal().ToString(), "false");
  // Floats: nan != nan, so x == x is not known.
  Simplify(R"(HloModule m
ENTRY %main {
  %p = f32[16]{0} parameter(0)
  ROOT %eq = pred[16]{0} compare(%p, %p), direction=EQ
})",
           false);
}

TEST(AlgebraicSimplifierTest, RewritesInsideCalledComputations) {
  auto module = Simplify(R"(HloModule m
%sum (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  %one = f32[] constant(1)
  %xm = f32[] multiply(%x, %one)
  ROOT %s = f32[] add(%xm, %y)
}
ENTRY %main {
  %p = f32[4]{0} parameter(0)
  %zero = f32[] constant(0)
  ROOT %r = f32[] reduce(%p, %zero), dimensions={0}, to_apply=%sum
})");
  EXPECT_THAT(ComputationLines(*module->GetComputationWithName("sum")),
              ElementsAre("%x = f32[] parameter(0)", "%y = f32[] parameter(1)",
                          "ROOT %s = f32[] add(%x, %y)"));
}

TEST(AlgebraicSimplifierTest, OuterProductDotBecomesMultiplyOfBroadcasts) {
  auto module = Simplify(R"(HloModule m
ENTRY %main {
  %x = f32[3,1]{1,0} parameter(0)
  %y = f32[1,4]{1,0} parameter(1)
  ROOT %d = f32[3,4]{1,0} dot(%x, %y), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})");
  HloInstruction* bx = nullptr;
  HloInstruction* by = nullptr;
  ASSERT_TRUE(Match(Root(*module),
                    m::Multiply(m::Broadcast(&bx, m::Reshape(m::Parameter())),
                                m::Broadcast(&by, m::Reshape(m::Parameter())))))
      << module->ToString();
  EXPECT_THAT(bx->dimensions(), ElementsAre(0));
  EXPECT_THAT(by->dimensions(), ElementsAre(1));
  // A real contraction (size 2) stays a dot.
  Simplify(R"(HloModule m
ENTRY %main {
  %x = f32[3,2]{1,0} parameter(0)
  %y = f32[2,4]{1,0} parameter(1)
  ROOT %d = f32[3,4]{1,0} dot(%x, %y), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})",
           false);
}

// A computation is glanced at (opcodes) for anything Simplify may rewrite before its post
// order is built: a long chain of sines and multiplies (nothing to rewrite) with one double
// negation at its start and one x * 1 at its end still loses both, and without them the
// chain is left as it was.
std::string SineChain(int64_t length, bool with_rewrites) {
  std::string text = "HloModule m\nENTRY %main {\n  %p = f32[8]{0} parameter(0)\n";
  std::string last = "p";
  if (with_rewrites) {
    text += "  %n1 = f32[8]{0} negate(%p)\n  %n2 = f32[8]{0} negate(%n1)\n";
    last = "n2";
  }
  for (int64_t i = 0; i < length; ++i) {
    const std::string s = "s" + std::to_string(i), m = "m" + std::to_string(i);
    text += "  %" + s + " = f32[8]{0} sine(%" + last + ")\n  %" + m + " = f32[8]{0} multiply(%" + s + ", %p)\n";
    last = m;
  }
  if (with_rewrites) {
    text += "  %one = f32[] constant(1)\n  %ones = f32[8]{0} broadcast(%one), dimensions={}\n";
    text += "  %times_one = f32[8]{0} multiply(%" + last + ", %ones)\n";
    last = "times_one";
  }
  return text + "  ROOT %r = f32[8]{0} negate(%" + last + ")\n}\n";
}

TEST(AlgebraicSimplifierTest, FindsTheFewRewritesOfALongChain) {
  auto module = Simplify(SineChain(100, /*with_rewrites=*/true));
  const HloComputation& entry = *module->entry_computation();
  EXPECT_EQ(entry.GetInstructionWithName("s0")->operand(0), entry.parameter_instruction(0));
  EXPECT_EQ(Root(*module)->operand(0), entry.GetInstructionWithName("m99"));
  Simplify(SineChain(100, /*with_rewrites=*/false), /*expect_changed=*/false);
}

}  // namespace
}  // namespace jx::hlo::algebraic_simplifier_test

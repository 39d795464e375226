#include "jx/compiler/hlo/pattern_matcher.h"

#include <gtest/gtest.h>

#include <memory>

#include "jx/compiler/hlo/hlo_parser.h"

namespace jx::hlo::pattern_matcher_test {
namespace {

namespace m = ::jx::hlo::match;

class PatternMatcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    module_ = ParseHloModule(R"(HloModule m
ENTRY %main {
  %p = f32[4]{0} parameter(0)
  %q = f32[4]{0} parameter(1)
  %zero = f32[] constant(0)
  %two = f32[] constant(2)
  %z = f32[4]{0} broadcast(%zero), dimensions={}
  %za = f32[4]{0} constant({0, 0, 0, 0})
  %mixed = f32[4]{0} constant({0, 1, 0, 0})
  %add = f32[4]{0} add(%p, %z)
  %radd = f32[4]{0} add(%za, %q)
  %madd = f32[4]{0} add(%p, %mixed)
  %neg = f32[4]{0} negate(%add)
  %neg2 = f32[4]{0} negate(%neg)
  %t = f32[4]{0} transpose(%neg2), dimensions={0}
  ROOT %r = (f32[4]{0}, f32[4]{0}, f32[4]{0}, f32[4]{0}) tuple(%t, %radd, %madd, %add)
})")
                  .value();
  }
  HloInstruction* Get(std::string_view name) {
    HloInstruction* instr = module_->entry_computation()->GetInstructionWithName(name);
    EXPECT_NE(instr, nullptr) << name;
    return instr;
  }
  std::unique_ptr<HloModule> module_;
};

TEST_F(PatternMatcherTest, OpcodeOperandsAndCaptures) {
  HloInstruction* x = nullptr;
  HloInstruction* zero = nullptr;
  EXPECT_TRUE(Match(Get("add"), m::Add()));
  EXPECT_FALSE(Match(Get("add"), m::Multiply()));
  EXPECT_TRUE(Match(Get("add"), m::Add(m::Parameter(&x), m::Broadcast(m::Constant(&zero)))));
  EXPECT_EQ(x, Get("p"));
  EXPECT_EQ(zero, Get("zero"));
  EXPECT_TRUE(Match(Get("neg2"), m::Negate(m::Negate(m::Add(m::Op(&x), m::Op())))));
  EXPECT_EQ(x, Get("p"));
  EXPECT_TRUE(Match(Get("neg"), m::Op(HloOpcode::kNegate)));
  EXPECT_TRUE(Match(Get("t"), m::Transpose(m::Negate())));
}

TEST_F(PatternMatcherTest, FailedMatchLeavesCapturesAlone) {
  HloInstruction* x = nullptr;
  // The first operand matches (and would capture) but the second does not.
  EXPECT_FALSE(Match(Get("add"), m::Add(m::Parameter(&x), m::Parameter())));
  EXPECT_EQ(x, nullptr);
  // Wrong operand count.
  EXPECT_FALSE(Match(Get("add"), m::Op(HloOpcode::kAdd).WithOperands({m::Op(&x)})));
  EXPECT_EQ(x, nullptr);
}

TEST_F(PatternMatcherTest, AnyOrderTriesBothOperandOrdersAndCapturesTheMatchingOne) {
  HloInstruction* x = nullptr;
  // %radd = add(zeros, q): the plain pattern needs x first, AnyOrder finds it second.
  EXPECT_FALSE(Match(Get("radd"), m::Add(m::Op(&x), m::ConstantSplat(0))));
  EXPECT_EQ(x, nullptr);
  EXPECT_TRUE(Match(Get("radd"), m::AddAnyOrder(m::Op(&x), m::ConstantSplat(0))));
  EXPECT_EQ(x, Get("q"));
  EXPECT_TRUE(Match(Get("add"), m::AddAnyOrder(m::Op(&x), m::ConstantSplat(0))));
  EXPECT_EQ(x, Get("p"));
  // Both operands qualify for Op(&x): the in-order match wins.
  HloInstruction* y = nullptr;
  EXPECT_TRUE(Match(Get("radd"), m::AddAnyOrder(m::Op(&x), m::Op(&y))));
  EXPECT_EQ(x, Get("za"));
  EXPECT_EQ(y, Get("q"));
}

TEST_F(PatternMatcherTest, ConstantScalarAndSplat) {
  EXPECT_TRUE(Match(Get("zero"), m::ConstantScalar(0)));
  EXPECT_FALSE(Match(Get("two"), m::ConstantScalar(0)));
  EXPECT_TRUE(Match(Get("two"), m::ConstantScalar(2)));
  EXPECT_TRUE(Match(Get("two"), m::ConstantScalar()));
  EXPECT_FALSE(Match(Get("za"), m::ConstantScalar(0)));  // rank 1
  EXPECT_TRUE(Match(Get("za"), m::ConstantSplat(0)));
  EXPECT_TRUE(Match(Get("z"), m::ConstantSplat(0)));  // through the broadcast
  EXPECT_FALSE(Match(Get("mixed"), m::ConstantSplat(0)));
  EXPECT_FALSE(Match(Get("p"), m::ConstantSplat(0)));
  HloInstruction* c = nullptr;
  EXPECT_TRUE(Match(Get("madd"), m::Add(m::Op(), m::Constant(&c))));
  EXPECT_EQ(c, Get("mixed"));
}

TEST_F(PatternMatcherTest, ShapeUserAndPredicateRefinements) {
  EXPECT_TRUE(Match(Get("add"), m::Add().WithShape(ShapeUtil::MakeShape(F32, {4}))));
  EXPECT_FALSE(Match(Get("add"), m::Add().WithShape(ShapeUtil::MakeShape(F32, {5}))));
  EXPECT_FALSE(Match(Get("add"), m::Add().WithElementType(S32)));
  // %add feeds %neg and the tuple; %neg feeds only %neg2.
  EXPECT_FALSE(Match(Get("add"), m::Add().WithOneUser()));
  EXPECT_TRUE(Match(Get("neg2"), m::Negate(m::Negate().WithOneUser())));
  EXPECT_TRUE(Match(Get("t"), m::Op().WithPredicate([](const HloInstruction* i) {
    return i->dimensions().size() == 1;
  })));
}

}  // namespace
}  // namespace jx::hlo::pattern_matcher_test

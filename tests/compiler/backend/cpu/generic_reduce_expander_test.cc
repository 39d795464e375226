// GenericReduceExpander: a reduce whose reducer no native kernel handles becomes a tree of
// vectorized reducer code with the reduce's value (reducers exact in any order here: integer
// ring arithmetic and a (x, y, index) pick), and reduces a kernel handles stay.
#include "jx/compiler/backend/cpu/generic_reduce_expander.h"

#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string_view>
#include <vector>

#include "jx/compiler/hlo/hlo_evaluator.h"
#include "jx/compiler/hlo/hlo_parser.h"
#include "tests/compiler/backend/cpu/cpu_test_util.h"

namespace jx::cpu::generic_reduce_expander_test {
namespace {

using hlo::Literal;
using testing::RandomLiteral;

// (1 + a)(1 + b) - 1 in int32: associative and commutative exactly (mod 2^32), identity 0.
constexpr std::string_view kRing = R"(HloModule ring
ring {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  s = s32[] add(a, b)
  p = s32[] multiply(a, b)
  ROOT r = s32[] add(s, p)
}
ENTRY e {
  x = s32[6,5,3] parameter(0)
  z = s32[] constant(0)
  ROOT out = s32[5] reduce(x, z), dimensions={2,0}, to_apply=ring
})";

// Three operands: keeps the (x, y, index) whose x + y is largest, the smaller index on ties.
constexpr std::string_view kPick = R"(HloModule pick
pick {
  a0 = f32[] parameter(0)
  a1 = f32[] parameter(1)
  a2 = s32[] parameter(2)
  b0 = f32[] parameter(3)
  b1 = f32[] parameter(4)
  b2 = s32[] parameter(5)
  sa = f32[] add(a0, a1)
  sb = f32[] add(b0, b1)
  gt = pred[] compare(sb, sa), direction=GT
  eq = pred[] compare(sb, sa), direction=EQ
  lt = pred[] compare(b2, a2), direction=LT
  tie = pred[] and(eq, lt)
  take = pred[] or(gt, tie)
  r0 = f32[] select(take, b0, a0)
  r1 = f32[] select(take, b1, a1)
  r2 = s32[] select(take, b2, a2)
  ROOT t = (f32[], f32[], s32[]) tuple(r0, r1, r2)
}
ENTRY e {
  x = f32[4,7] parameter(0)
  y = f32[4,7] parameter(1)
  i = s32[4,7] iota(), iota_dimension=1
  low = f32[] constant(-1e+30)
  z = s32[] constant(0)
  ROOT r = (f32[4], f32[4], s32[4]) reduce(x, y, i, low, low, z), dimensions={1}, to_apply=pick
})";

int64_t CountReduces(const hlo::HloModule& m) {
  int64_t n = 0;
  for (const hlo::HloInstruction* instr : m.entry_computation()->MakeInstructionPostOrder()) {
    n += instr->opcode() == hlo::HloOpcode::kReduce;
  }
  return n;
}

void ExpectExpandedWithTheSameValue(std::string_view text) {
  auto original = hlo::ParseHloModule(text).value();
  auto expanded = hlo::ParseHloModule(text).value();
  absl::StatusOr<bool> changed = GenericReduceExpander().Run(expanded.get());
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_TRUE(*changed);
  EXPECT_EQ(CountReduces(*expanded), 0) << expanded->ToString();
  std::mt19937 rng(7);
  std::vector<Literal> args;
  const hlo::HloComputation& entry = *original->entry_computation();
  for (int64_t i = 0; i < entry.num_parameters(); ++i) {
    args.push_back(RandomLiteral(entry.parameter_instruction(i)->shape(), rng, -3, 3));
  }
  std::vector<const Literal*> ptrs;
  for (const Literal& a : args) ptrs.push_back(&a);
  absl::StatusOr<Literal> want = hlo::HloEvaluator().Evaluate(*original, ptrs);
  absl::StatusOr<Literal> got = hlo::HloEvaluator().Evaluate(*expanded, ptrs);
  ASSERT_TRUE(want.ok()) << want.status();
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(*got == *want);
}

TEST(GenericReduceExpanderTest, RingReducerOverTwoDims) { ExpectExpandedWithTheSameValue(kRing); }

TEST(GenericReduceExpanderTest, VariadicPickReducer) { ExpectExpandedWithTheSameValue(kPick); }

TEST(GenericReduceExpanderTest, NativeReducesStay) {
  auto m = hlo::ParseHloModule(R"(HloModule sum
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b)
}
ENTRY e {
  x = f32[4,7] parameter(0)
  z = f32[] constant(0)
  ROOT out = f32[4] reduce(x, z), dimensions={1}, to_apply=add
})").value();
  absl::StatusOr<bool> changed = GenericReduceExpander().Run(m.get());
  ASSERT_TRUE(changed.ok());
  EXPECT_FALSE(*changed);
  EXPECT_EQ(CountReduces(*m), 1);
}

}  // namespace
}  // namespace jx::cpu::generic_reduce_expander_test

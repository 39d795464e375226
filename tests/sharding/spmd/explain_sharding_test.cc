// explain_sharding: a propagation conflict shows both candidates, what propagation kept and
// each candidate's resharding price; each dot_general shows its strategies and the winner is
// the cheapest. On a 4x2 v5e pod.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "absl/strings/str_join.h"
#include "jx/jx.h"
#include "jx/sharding/spmd/explain_sharding.h"
#include "jx/sharding/spmd/spmd_jit.h"

namespace jx::explain_sharding_test {
namespace {

namespace jnp = jx::numpy;
using ::testing::HasSubstr;

struct V5e {
  tpu::Pod pod = tpu::make_pod("v5e", {4, 2});
  Mesh mesh = make_mesh({4, 2}, {"x", "y"}, pod.devices());
  NamedSharding S(PartitionSpec p) const { return NamedSharding(mesh, std::move(p)); }
};

auto Add = [](const Array& a, const Array& b) { return a + b; };
auto Matmul = [](const Array& a, const Array& b) { return jnp::matmul(a, b); };

TEST(ExplainShardingTest, ConflictListsBothCandidatesAndWhatWon) {
  V5e v;
  Array a = jnp::ones({64, 16}), b = jnp::ones({64, 16});
  auto step = jit(Add, in_shardings{v.S(P("x", none)), v.S(P("y", none))});
  ShardingExplanation why = explain_sharding(step).lower(a, b);
  ASSERT_EQ(why.conflicts().size(), 1u) << why.ToString();
  const ConflictExplanation& c = why.conflicts()[0];
  EXPECT_THAT(c.equation, HasSubstr("add f32[64,16], f32[64,16]"));
  EXPECT_THAT(c.what, HasSubstr("sharded as 'x' and as 'y'"));
  ASSERT_EQ(c.candidates.size(), 2u);
  EXPECT_THAT(c.candidates[0].sharding, HasSubstr("'x' on dimension 0 of operand 0"));
  EXPECT_THAT(c.candidates[1].sharding, HasSubstr("'y' on dimension 0 of operand 1"));
  EXPECT_THAT(c.candidates[0].wanted_by[0], HasSubstr("operand 0 P('x', None) (given)"));
  // Propagation keeps the first operand's choice; the result follows it.
  ASSERT_TRUE(c.chosen.has_value());
  EXPECT_EQ(*c.chosen, 0u);
  EXPECT_THAT(why.ToString(), HasSubstr("out_shardings: (PartitionSpec('x', None))"));
  // Keeping 'x' reshards operand 1 only; keeping 'y' reshards operand 0 and the result.
  EXPECT_EQ(c.candidates[0].reshards.size(), 1u);
  EXPECT_THAT(c.candidates[0].reshards[0], HasSubstr("operand 1 to P('x', None): all-gather f32[32,16] over 'y'"));
  EXPECT_EQ(c.candidates[1].reshards.size(), 2u);
  EXPECT_GT(c.candidates[0].predicted_seconds, 0);
  EXPECT_LT(c.candidates[0].predicted_seconds, c.candidates[1].predicted_seconds);
  EXPECT_EQ(c.cheapest, 0u);
  const std::string text = why.ToString();
  EXPECT_THAT(text, HasSubstr("propagation conflicts: 1"));
  EXPECT_THAT(text, HasSubstr("* 'x' on dimension 0 of operand 0"));
  EXPECT_THAT(text, HasSubstr("why: operand 0's 'x' was met first and is given"));
}

TEST(ExplainShardingTest, CostModelDisagreesWithPropagationWhenTheFirstChoiceCostsMore) {
  // Operand 0 is sharded over 'y', operand 1 over 'x' and the result is fixed to 'x': keeping
  // operand 0's 'y' (propagation's choice) reshards operand 1 and the result, keeping 'x'
  // reshards operand 0 only.
  // Abstract arguments: nothing allocated.
  V5e v;
  const ShapeDtypeStruct a{{64, 16}, float32};
  auto step = jit(Add, in_shardings{v.S(P("y", none)), v.S(P("x", none))}, out_shardings{v.S(P("x", none))});
  ShardingExplanation why = explain_sharding(step).lower(a, a);
  ASSERT_EQ(why.conflicts().size(), 1u) << why.ToString();
  const ConflictExplanation& c = why.conflicts()[0];
  ASSERT_TRUE(c.chosen.has_value());
  EXPECT_EQ(*c.chosen, 0u);  // operand 0's 'y'
  EXPECT_EQ(c.cheapest, 1u) << why.ToString();
  EXPECT_THAT(c.why, HasSubstr("the cost model prefers 'x' on dimension 0 of operand 1"));
}

TEST(ExplainShardingTest, MeshAxisOnTwoDimensionsIsAConflict) {
  V5e v;
  Array a = jnp::ones({64, 16}), b = jnp::ones({64, 16});
  auto step = jit(Add, in_shardings{v.S(P("x", none)), v.S(P(none, "x"))});
  ShardingExplanation why = explain_sharding(step).lower(a, b);
  ASSERT_EQ(why.conflicts().size(), 1u) << why.ToString();
  const ConflictExplanation& c = why.conflicts()[0];
  EXPECT_THAT(c.what, HasSubstr("mesh axis 'x' shards dimension 0 of operand 0 and dimension 1 of operand 1"));
  ASSERT_EQ(c.candidates.size(), 2u);
  EXPECT_THAT(absl::StrJoin(c.candidates[0].wanted_by, "; "), HasSubstr("operand 0 P('x', None) (given); result 0"));
  ASSERT_TRUE(c.chosen.has_value());
  EXPECT_EQ(*c.chosen, 0u);
  // Moving operand 1's 'x' to dimension 0 is one all-to-all.
  EXPECT_THAT(absl::StrJoin(c.candidates[0].reshards, "\n"), HasSubstr("operand 1 to P('x', None): all-to-all"));
}

TEST(ExplainShardingTest, ConflictInsideAnInnerJitIsListed) {
  V5e v;
  Array a = jnp::ones({64, 16}), b = jnp::ones({64, 16});
  auto outer = [](const Array& x, const Array& y) { return jit(Add)(x, y) * 2.f; };
  ShardingExplanation why =
      explain_sharding(outer, in_shardings{v.S(P("x", none)), v.S(P("y", none))}).lower(a, b);
  ASSERT_EQ(why.conflicts().size(), 1u) << why.ToString();
  EXPECT_THAT(why.conflicts()[0].equation, HasSubstr("(equation 0): add f32[64,16], f32[64,16]"));
  EXPECT_EQ(why.conflicts()[0].candidates.size(), 2u);
}

TEST(ExplainShardingTest, NoConflictWhenShardingsAgree) {
  V5e v;
  Array a = jnp::ones({64, 16});
  ShardingExplanation why = explain_sharding(Add, in_shardings{v.S(P("x", none))}).lower(a, a);
  EXPECT_TRUE(why.conflicts().empty()) << why.ToString();
  EXPECT_THAT(why.ToString(), HasSubstr("propagation conflicts: 0"));
}

void ExpectWinnerIsCheapest(const ShardingExplanation& why) {
  ASSERT_FALSE(why.dots().empty()) << why.ToString();
  for (const spmd::DotDecision& d : why.dots()) {
    ASSERT_GE(d.candidates.size(), 2u);
    for (const spmd::DotCandidate& c : d.candidates) {
      EXPECT_LE(d.candidates[d.chosen].predicted_seconds, c.predicted_seconds) << why.ToString();
    }
  }
}

TEST(ExplainShardingTest, DotWinnerIsTheCheapestCandidate) {
  V5e v;
  // A small result of a long contraction: multiply then all-reduce wins.
  Array a = jnp::ones({8, 4096}), b = jnp::ones({4096, 8});
  ShardingExplanation reduce = explain_sharding(Matmul, in_shardings{v.S(P(none, "x")), v.S(P("x", none))}).lower(a, b);
  ExpectWinnerIsCheapest(reduce);
  EXPECT_THAT(reduce.dots()[0].candidates[reduce.dots()[0].chosen].strategy, HasSubstr("multiply then all-reduce"));
  // A big result of a short contraction: all-gathering the operands first wins.
  Array c = jnp::ones({512, 8}), d = jnp::ones({8, 512});
  ShardingExplanation gather = explain_sharding(Matmul, in_shardings{v.S(P(none, "y")), v.S(P("y", none))}).lower(c, d);
  ExpectWinnerIsCheapest(gather);
  EXPECT_THAT(gather.dots()[0].candidates[gather.dots()[0].chosen].strategy, HasSubstr("all-gather"));
  const std::string text = gather.ToString();
  EXPECT_THAT(text, HasSubstr("dot_general strategies: 1"));
  EXPECT_THAT(text, HasSubstr("* all-gather lhs+rhs over 'y' first"));
  EXPECT_THAT(text, HasSubstr("multiply then all-reduce over 'y'"));
}

}  // namespace
}  // namespace jx::explain_sharding_test

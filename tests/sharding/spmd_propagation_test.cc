// Sharding rules (Shardy's factor text) and propagation on jaxprs: shardings given for some
// arguments reach every value through elementwise ops, dot_general, reductions, reshape,
// transpose, broadcast_in_dim and with_sharding_constraint, forward and backward.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "jx/core/interpreter.h"
#include "jx/core/registry.h"
#include "jx/jx.h"
#include "jx/lax/primitives.h"
#include "jx/sharding/spmd/propagation.h"
#include "jx/sharding/spmd/sharding_constraint.h"

namespace jx::spmd_propagation_test {
namespace {

namespace jnp = jx::numpy;
using spmd::MaybeSharding;
using spmd::PropagateShardings;
using spmd::ShardingPlan;
using ::testing::HasSubstr;

const AbstractMesh kMesh({4, 2}, {"x", "y"});

DimShardings S(std::initializer_list<std::vector<std::string>> dims) { return DimShardings(dims); }

std::string RuleText(Primitive p, std::vector<ShapedArray> in, const ParamMap& params) {
  std::vector<const ShapedArray*> ptrs;
  for (const ShapedArray& a : in) ptrs.push_back(&a);
  Avals out = AbstractEval(p, ptrs, params);
  return GlobalRegistry().Get(p).sharding_rule(ptrs, params, std::vector<ShapedArray>(out.begin(), out.end())).ToString();
}

// The output sharding of f's jaxpr given its arguments' shardings.
template <typename F, typename... Args>
std::pair<ClosedJaxpr, ShardingPlan> Propagate(F f, std::vector<MaybeSharding> in, const Args&... args) {
  ClosedJaxpr j = make_jaxpr(f)(args...);
  ShardingPlan plan = PropagateShardings(*j.jaxpr, kMesh, in, {});
  return {j, std::move(plan)};
}

const DimShardings& Out(const std::pair<ClosedJaxpr, ShardingPlan>& r, size_t i = 0) {
  return r.second.sharding(std::get<Var>(r.first.jaxpr->outvars[i]));
}

TEST(ShardingRuleTest, MatmulReadsAsShardy) {
  lax::RegisterAll();
  ParamMap params = lax::internal::DotGeneralParams({{1}, {0}, {}, {}}, std::nullopt, std::nullopt);
  EXPECT_EQ(RuleText(lax::kDotGeneral, {ShapedArray{{8, 16}}, ShapedArray{{16, 4}}}, params),
            "([i, k], [k, j])->([i, j]) {i=8, j=4, k=16} reduction={k}");
}

TEST(ShardingRuleTest, BatchedDotSharesTheBatchFactor) {
  lax::RegisterAll();
  ParamMap params = lax::internal::DotGeneralParams({{2}, {1}, {0}, {0}}, std::nullopt, std::nullopt);
  EXPECT_EQ(RuleText(lax::kDotGeneral, {ShapedArray{{2, 8, 16}}, ShapedArray{{2, 16, 4}}}, params),
            "([i, j, l], [i, l, k])->([i, j, k]) {i=2, j=8, k=4, l=16} reduction={l}");
}

TEST(ShardingRuleTest, ReshapeSplitsAndMergesFactors) {
  lax::RegisterAll();
  EXPECT_EQ(RuleText(lax::kReshape, {ShapedArray{{8}}},
                     ParamMap{{"new_sizes", std::vector<int64_t>{2, 4}}, {"dimensions", ParamNone{}}, {"sharding", ParamNone{}}}),
            "([ij])->([i, j]) {i=2, j=4}");
  EXPECT_EQ(RuleText(lax::kReshape, {ShapedArray{{2, 3}}},
                     ParamMap{{"new_sizes", std::vector<int64_t>{3, 2}}, {"dimensions", ParamNone{}}, {"sharding", ParamNone{}}}),
            "([i, i])->([i, i]) {i=6} need_replication={i}");
}

TEST(ShardingRuleTest, ReductionsAndCumulativeOps) {
  lax::RegisterAll();
  EXPECT_EQ(RuleText(lax::kReduceSum, {ShapedArray{{8, 4}}}, ParamMap{{"axes", std::vector<int64_t>{1}}}),
            "([i, j])->([i]) {i=8, j=4} reduction={j}");
  EXPECT_EQ(RuleText(lax::kArgmax, {ShapedArray{{8, 4}}},
                     ParamMap{{"axes", std::vector<int64_t>{1}}, {"index_dtype", int32}}),
            "([i, j])->([i]) {i=8, j=4} need_replication={j}");
  EXPECT_EQ(RuleText(lax::kCumsum, {ShapedArray{{8, 4}}}, ParamMap{{"axis", 0}, {"reverse", false}}),
            "([i, j])->([i, j]) {i=8, j=4} need_replication={i}");
}

TEST(PropagationTest, ElementwiseForwardAndBackward) {
  auto r = Propagate([](const Array& x, const Array& y) { return jnp::sin(x) + y; }, {S({{"x"}, {}}), std::nullopt},
                     jnp::ones({8, 4}), jnp::ones({8, 4}));
  EXPECT_EQ(Out(r), S({{"x"}, {}}));
  // y had no sharding: the add carries x's back to it.
  EXPECT_EQ(r.second.sharding(r.first.jaxpr->invars[1]), S({{"x"}, {}}));
}

TEST(PropagationTest, DotNonContractingDims) {
  auto r = Propagate([](const Array& x, const Array& w) { return jnp::matmul(x, w); }, {S({{"x"}, {}}), S({{}, {"y"}})},
                     jnp::ones({8, 16}), jnp::ones({16, 4}));
  EXPECT_EQ(Out(r), S({{"x"}, {"y"}}));
}

TEST(PropagationTest, DotContractingDimReachesTheOtherOperand) {
  auto r = Propagate([](const Array& x, const Array& w) { return jnp::matmul(x, w); }, {S({{}, {"x"}}), std::nullopt},
                     jnp::ones({8, 16}), jnp::ones({16, 4}));
  EXPECT_EQ(r.second.sharding(r.first.jaxpr->invars[1]), S({{"x"}, {}}));
  EXPECT_TRUE(Out(r).empty());  // a partial sum, not a sharded result
}

TEST(PropagationTest, ReductionKeepsTheOtherDims) {
  auto r = Propagate([](const Array& x) { return jnp::sum(x, 1); }, {S({{"x"}, {"y"}})}, jnp::ones({8, 4}));
  EXPECT_EQ(Out(r), S({{"x"}}));
}

TEST(PropagationTest, TransposeAndBroadcast) {
  auto t = Propagate([](const Array& x) { return x.T(); }, {S({{"x"}, {"y"}})}, jnp::ones({8, 4}));
  EXPECT_EQ(Out(t), S({{"y"}, {"x"}}));
  auto b = Propagate([](const Array& x) { return jnp::broadcast_to(x, {6, 8}); }, {S({{"x"}})}, jnp::ones({8}));
  EXPECT_EQ(Out(b), S({{}, {"x"}}));
}

TEST(PropagationTest, ReshapeKeepsTheMajorSharding) {
  auto merge = Propagate([](const Array& x) { return x.reshape({32}); }, {S({{"x"}, {}})}, jnp::ones({8, 4}));
  EXPECT_EQ(Out(merge), S({{"x"}}));
  auto split = Propagate([](const Array& x) { return x.reshape({8, 4}); }, {S({{"x"}})}, jnp::ones({32}));
  EXPECT_EQ(Out(split), S({{"x"}, {}}));
}

TEST(PropagationTest, ShardingConstraintPropagatesBothWays) {
  tpu::Pod pod = tpu::make_pod("v5e", {4, 2});
  Mesh mesh = make_mesh({4, 2}, {"x", "y"}, pod.devices());
  NamedSharding s(mesh, P(none, "y"));
  auto r = Propagate([&](const Array& x) { return jnp::cos(lax::with_sharding_constraint(jnp::sin(x), s)); },
                     {std::nullopt}, jnp::ones({8, 4}));
  EXPECT_THAT(r.first.ToString(), HasSubstr("sharding_constraint["));
  EXPECT_EQ(Out(r), S({{}, {"y"}}));
  EXPECT_EQ(r.second.sharding(r.first.jaxpr->invars[0]), S({{}, {"y"}}));
}

TEST(PropagationTest, AnAxisNeverShardsADimItDoesNotDivide) {
  // [8] -> [2, 4] is ([ij])->([i, j]) {i=2, j=4}: x (size 4) does not divide i, so the
  // result is not sharded on it.
  auto r = Propagate([](const Array& x) { return jnp::sin(x).reshape({2, 4}); }, {S({{"x"}})}, jnp::ones({8}));
  EXPECT_TRUE(Out(r).empty());
  EXPECT_THROW(Propagate([](const Array& x) { return x; }, {S({{"x"}})}, jnp::ones({6})), ValueError);
  EXPECT_THROW(Propagate([](const Array& x) { return x; }, {S({{"z"}})}, jnp::ones({8})), ValueError);
}

TEST(ExplicitShardingTypesTest, ResultsCarryTheRuleSpec) {
  lax::RegisterAll();
  ShapedArray x{{8, 4}};
  x.spec = {{"x"}, {}};
  ShapedArray w{{4, 2}};
  const ShapedArray* sin_in[] = {&x};
  EXPECT_EQ(AbstractEval(lax::kSin, sin_in, {})[0].str(), "f32[8@x,4]");
  const ShapedArray* dot_in[] = {&x, &w};
  ParamMap dn = lax::internal::DotGeneralParams({{1}, {0}, {}, {}}, std::nullopt, std::nullopt);
  EXPECT_EQ(AbstractEval(lax::kDotGeneral, dot_in, dn)[0].str(), "f32[8@x,2]");
  ShapedArray y{{8, 4}};
  y.spec = {{"y"}, {}};
  const ShapedArray* add_in[] = {&x, &y};
  try {
    AbstractEval(lax::kAdd, add_in, {});
    FAIL() << "expected TypeError";
  } catch (const TypeError& e) {
    EXPECT_THAT(e.what(), HasSubstr("[add]"));
    EXPECT_THAT(e.what(), HasSubstr("f32[8@x,4], f32[8@y,4]"));
  }
  // Contracting over a sharded dim is ambiguous in explicit mode (JAX asks for out_sharding).
  ShapedArray xc{{8, 4}};
  xc.spec = {{}, {"x"}};
  const ShapedArray* dot_c[] = {&xc, &w};
  EXPECT_THROW(AbstractEval(lax::kDotGeneral, dot_c, dn), TypeError);
  // A reduction over a sharded dim is allowed (the compiler all-reduces).
  const ShapedArray* sum_in[] = {&x};
  EXPECT_EQ(AbstractEval(lax::kReduceSum, sum_in, ParamMap{{"axes", std::vector<int64_t>{0}}})[0].str(), "f32[4]");
}

TEST(ExplicitShardingTypesTest, AReshapeMergingAMinorShardedDimIsATypeError) {
  lax::RegisterAll();
  const ParamMap merge{{"new_sizes", std::vector<int64_t>{32}}, {"dimensions", ParamNone{}}, {"sharding", ParamNone{}}};
  ShapedArray major{{8, 4}};
  major.spec = {{"x"}, {}};
  const ShapedArray* major_in[] = {&major};
  EXPECT_EQ(AbstractEval(lax::kReshape, major_in, merge)[0].str(), "f32[32@x]");
  // [8, 4@y] -> [32]: each device's elements would be strided.
  ShapedArray minor{{8, 4}};
  minor.spec = {{}, {"y"}};
  const ShapedArray* minor_in[] = {&minor};
  try {
    AbstractEval(lax::kReshape, minor_in, merge);
    FAIL() << "expected TypeError";
  } catch (const TypeError& e) {
    EXPECT_THAT(e.what(), HasSubstr("[reshape]"));
    EXPECT_THAT(e.what(), HasSubstr("f32[8,4@y]"));
    EXPECT_THAT(e.what(), HasSubstr("strided"));
  }
  // Both sharded, major first: the merged dim is split over (x, y).
  ShapedArray both{{8, 4}};
  both.spec = {{"x"}, {"y"}};
  const ShapedArray* both_in[] = {&both};
  EXPECT_EQ(AbstractEval(lax::kReshape, both_in, merge)[0].str(), "f32[32@(x,y)]");
}

}  // namespace
}  // namespace jx::spmd_propagation_test

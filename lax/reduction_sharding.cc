// Sharding rules of reductions and cumulative ops. A reduction's reduced dims are reduction
// factors: in explicit-sharding types they drop their mesh axes (the result is replicated over
// them, JAX's rule); under the partitioner their partial results combine by the op's
// collective (sum: psum, max: pmax, min: pmin) or, for prod, and/or and argmax/argmin
// (Combiner::kNone: no one all-reduce combines them), by gathering the per-device partial
// results and reducing again (sharding/spmd/partial_reductions.h). A cumulative op's axis must
// be whole; its other dims pass through.
#include <algorithm>

#include "jx/core/registry.h"
#include "jx/lax/primitives.h"
#include "jx/lax/sharding_rules.h"

namespace jx::lax::internal {
namespace {

ShardingRule ReductionRule(InAvals in, const std::vector<int64_t>& axes, ShardingRule::Combiner combiner) {
  const ShapedArray& x = *in[0];
  ShardingRuleBuilder b;
  TensorFactors operand, result;
  for (int64_t d = 0; d < x.ndim(); ++d) {
    operand.push_back({b.AddFactor(x.shape[d])});
    if (std::find(axes.begin(), axes.end(), d) == axes.end()) result.push_back(operand.back());
  }
  b.AddOperand(std::move(operand)).AddResult(std::move(result)).SetCombiner(combiner);
  return std::move(b).Build();
}

ShardingRuleFn Reduction(ShardingRule::Combiner combiner) {
  return [combiner](InAvals in, const ParamMap& params, absl::Span<const ShapedArray>) {
    return ReductionRule(in, params.GetInts("axes"), combiner);
  };
}

ShardingRule CumulativeRule(InAvals in, const ParamMap& params, absl::Span<const ShapedArray>) {
  const ShapedArray& x = *in[0];
  ShardingRuleBuilder b;
  TensorFactors t;
  for (int64_t d = 0; d < x.ndim(); ++d) t.push_back({b.AddFactor(x.shape[d])});
  if (x.ndim() > 0) b.NeedReplication(t[params.GetInt("axis")][0]);
  b.AddOperand(t).AddResult(t);
  return std::move(b).Build();
}

}  // namespace

void RegisterReductionSharding(Registry& r) {
  using C = ShardingRule::Combiner;
  r.Define(kReduceSum).sharding_rule = Reduction(C::kSum);
  r.Define(kReduceMax).sharding_rule = Reduction(C::kMax);
  r.Define(kReduceMin).sharding_rule = Reduction(C::kMin);
  for (Primitive p : {kReduceProd, kReduceAnd, kReduceOr, kArgmax, kArgmin}) r.Define(p).sharding_rule = Reduction(C::kNone);
  for (Primitive p : {kCumsum, kCumprod, kCummax, kCummin, kCumlogsumexp}) r.Define(p).sharding_rule = CumulativeRule;
}

}  // namespace jx::lax::internal

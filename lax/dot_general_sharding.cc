// dot_general's sharding rule: a factor per batch dimension (shared by lhs, rhs and result),
// per lhs and rhs free dimension, and per contracting pair (a reduction factor: sharding it
// leaves partial sums). Matmul: ([i, j], [j, k])->([i, k]) reduction={j}. In explicit mode a
// sharded contraction is a TypeError unless the op has an out_sharding (JAX's rule; its
// transpose passes the primal operand's sharding).
#include <algorithm>

#include "jx/core/out_sharding.h"
#include "jx/core/registry.h"
#include "jx/lax/dot_general.h"
#include "jx/lax/primitives.h"
#include "jx/lax/sharding_rules.h"

namespace jx::lax::internal {
namespace {

bool Contains(const std::vector<int64_t>& v, int64_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }

ShardingRule DotGeneralShardingRule(InAvals in, const ParamMap& params, absl::Span<const ShapedArray>) {
  const DotDimensionNumbers& dn = GetDotDimensionNumbers(params);
  const ShapedArray& lhs = *in[0];
  const ShapedArray& rhs = *in[1];
  ShardingRuleBuilder b;
  TensorFactors l(lhs.ndim()), r(rhs.ndim()), out;
  for (size_t k = 0; k < dn.lhs_batch_dims.size(); ++k) {
    const int f = b.AddFactor(lhs.shape[dn.lhs_batch_dims[k]]);
    l[dn.lhs_batch_dims[k]] = {f};
    r[dn.rhs_batch_dims[k]] = {f};
    out.push_back({f});
  }
  for (int64_t d = 0; d < lhs.ndim(); ++d) {
    if (Contains(dn.lhs_batch_dims, d) || Contains(dn.lhs_contracting_dims, d)) continue;
    l[d] = {b.AddFactor(lhs.shape[d])};
    out.push_back(l[d]);
  }
  for (int64_t d = 0; d < rhs.ndim(); ++d) {
    if (Contains(dn.rhs_batch_dims, d) || Contains(dn.rhs_contracting_dims, d)) continue;
    r[d] = {b.AddFactor(rhs.shape[d])};
    out.push_back(r[d]);
  }
  for (size_t k = 0; k < dn.lhs_contracting_dims.size(); ++k) {
    const int f = b.AddFactor(lhs.shape[dn.lhs_contracting_dims[k]]);
    l[dn.lhs_contracting_dims[k]] = {f};
    r[dn.rhs_contracting_dims[k]] = {f};
  }
  b.AddOperand(std::move(l)).AddOperand(std::move(r)).AddResult(std::move(out));
  // With out_sharding the result's sharding is given, so a sharded contraction is not ambiguous.
  if (OutShardingOf(params) == nullptr) b.ShardedReductionIsTypeError();
  return std::move(b).Build();
}

}  // namespace

void RegisterDotGeneralSharding(Registry& r) { r.Define(kDotGeneral).sharding_rule = DotGeneralShardingRule; }

}  // namespace jx::lax::internal

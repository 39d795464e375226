// Sharding rule of gather (JAX's and Shardy's): the indices' batch dims pass through to the
// result's batch dims; an operand dim the gather takes whole (not indexed, its slice the full
// dim) passes through to its offset dim; operand batching dims share the factor of their
// indices batching dims. The index vector dim, and every operand dim that is indexed or sliced,
// need replication. So an embedding lookup keeps the tokens' batch sharding and the table's
// feature sharding:
//
//   gather f32[1000,64@y] at int32[8@x,16,1]   -> f32[8@x,16,64@y]
#include <algorithm>

#include "jx/core/registry.h"
#include "jx/lax/primitives.h"
#include "jx/lax/sharding_rules.h"
#include "jx/lax/slicing_ops.h"

namespace jx::lax::internal {

const GatherDimensionNumbers& GatherDnOf(const ParamMap& p);  // gather_scatter.cc

namespace {

bool Contains(const std::vector<int64_t>& v, int64_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }

ShardingRule GatherRule(InAvals in, const ParamMap& params, absl::Span<const ShapedArray> out) {
  const GatherDimensionNumbers& dn = GatherDnOf(params);
  const std::vector<int64_t>& slice_sizes = params.GetInts("slice_sizes");
  const ShapedArray& x = *in[0];
  const ShapedArray& ind = *in[1];
  const ShapedArray& o = out[0];
  ShardingRuleBuilder b;
  TensorFactors operand(x.ndim()), indices(ind.ndim()), result(o.ndim());
  auto replicated = [&](int64_t size) {
    const int f = b.AddFactor(size);
    b.NeedReplication(f);
    return DimFactors{f};
  };
  // Indices' batch dims (all but the last, the index vector) are the result's non-offset dims.
  int64_t batch = 0;
  for (int64_t d = 0; d < o.ndim(); ++d) {
    if (Contains(dn.offset_dims, d)) continue;
    indices[batch] = {b.AddFactor(ind.shape[batch])};
    result[d] = indices[batch];
    ++batch;
  }
  indices[ind.ndim() - 1] = replicated(ind.shape[ind.ndim() - 1]);
  // Operand dims: batching dims share their indices dim's factor; the rest are collapsed
  // (replicated) or offset dims, in order.
  size_t next_offset = 0;
  for (int64_t d = 0; d < x.ndim(); ++d) {
    const auto k = std::find(dn.operand_batching_dims.begin(), dn.operand_batching_dims.end(), d);
    if (k != dn.operand_batching_dims.end()) {
      operand[d] = indices[dn.start_indices_batching_dims[k - dn.operand_batching_dims.begin()]];
      continue;
    }
    if (Contains(dn.collapsed_slice_dims, d)) {
      operand[d] = replicated(x.shape[d]);
      continue;
    }
    const int64_t od = dn.offset_dims[next_offset++];
    if (!Contains(dn.start_index_map, d) && slice_sizes[d] == x.shape[d]) {
      operand[d] = {b.AddFactor(x.shape[d])};
      result[od] = operand[d];
    } else {
      operand[d] = replicated(x.shape[d]);
      result[od] = replicated(o.shape[od]);
    }
  }
  b.AddOperand(std::move(operand)).AddOperand(std::move(indices));
  for (size_t i = 2; i < in.size(); ++i) b.AddOperand({});
  b.AddResult(std::move(result));
  return std::move(b).Build();
}

}  // namespace

void RegisterGatherSharding(Registry& r) { r.Define(kGather).sharding_rule = GatherRule; }

}  // namespace jx::lax::internal

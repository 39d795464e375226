// Sharding rules of sort and top_k (JAX's): the sorted dimension (sort's `dimension`, top_k's
// last) needs replication; every other dimension passes through, shared by all operands and
// results.
//
//   sort f32[8@x,4] along dimension 1   -> f32[8@x,4]
//   top_k f32[8@x,4@y]                  -> TypeError: the last dim needs whole
#include "jx/core/registry.h"
#include "jx/lax/primitives.h"
#include "jx/lax/sharding_rules.h"

namespace jx::lax::internal {
namespace {

// Operands and results of shape `in` / `out` (equal but in the sorted dim), sorted along `dim`.
ShardingRule SortedAlong(const ShapedArray& in, const ShapedArray& out, int64_t dim, size_t num_operands,
                         size_t num_results) {
  PerDimRule t;
  for (int64_t d = 0; d < in.ndim(); ++d) t.Dim(in.shape[d], out.shape[d], d != dim);
  for (size_t i = 0; i < num_operands; ++i) t.b.AddOperand(t.operand);
  for (size_t i = 0; i < num_results; ++i) t.b.AddResult(t.result);
  return std::move(t.b).Build();
}

}  // namespace

void RegisterSortSharding(Registry& r) {
  r.Define(kSort).sharding_rule = [](InAvals in, const ParamMap& params, absl::Span<const ShapedArray> out) {
    return SortedAlong(*in[0], out[0], params.GetInt("dimension"), in.size(), out.size());
  };
  r.Define(kTopK).sharding_rule = [](InAvals in, const ParamMap&, absl::Span<const ShapedArray> out) {
    return SortedAlong(*in[0], out[0], in[0]->ndim() - 1, in.size(), out.size());
  };
}

}  // namespace jx::lax::internal

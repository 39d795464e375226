// Sharding rule of reduce_window_{sum,max,min} (JAX's): a dimension whose window is the identity
// (size 1, stride 1, no dilation, no padding) passes through; a dimension the window spans or
// strides needs replication (a window would cross devices' blocks). So pooling over the spatial
// dims of an image batch keeps the batch and channel dims' sharding:
//
//   reduce_window_max f32[8@x,6,6,4] window (1,2,2,1) strides (1,2,2,1)   -> f32[8@x,3,3,4]
#include "jx/core/registry.h"
#include "jx/lax/primitives.h"
#include "jx/lax/sharding_rules.h"

namespace jx::lax::internal {
namespace {

ShardingRule ReduceWindowRule(InAvals in, const ParamMap& params, absl::Span<const ShapedArray> out) {
  const ShapedArray& x = *in[0];
  const std::vector<int64_t>& dims = params.GetInts("window_dimensions");
  const std::vector<int64_t>& strides = params.GetInts("window_strides");
  const std::vector<int64_t>& base = params.GetInts("base_dilation");
  const std::vector<int64_t>& wdil = params.GetInts("window_dilation");
  const ParamList& padding = params.GetList("padding");
  PerDimRule t;
  for (int64_t d = 0; d < x.ndim(); ++d) {
    const size_t k = static_cast<size_t>(d);
    const auto& pad = std::get<std::vector<int64_t>>(padding[k].value);
    t.Dim(x.shape[d], out[0].shape[d],
          dims[k] == 1 && strides[k] == 1 && base[k] == 1 && wdil[k] == 1 && pad[0] == 0 && pad[1] == 0);
  }
  t.b.AddOperand(std::move(t.operand)).AddResult(std::move(t.result));
  return std::move(t.b).Build();
}

}  // namespace

void RegisterWindowSharding(Registry& r) {
  for (Primitive p : {kReduceWindowSum, kReduceWindowMax, kReduceWindowMin}) r.Define(p).sharding_rule = ReduceWindowRule;
}

}  // namespace jx::lax::internal

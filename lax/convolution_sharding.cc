// Sharding rule of conv_general_dilated (JAX's): the batch dim passes from lhs to the result and
// the output-feature dim from rhs to the result (when no feature or batch groups split them);
// the input-feature contraction and every spatial dim need replication (a window would cross
// devices' blocks; a sharded contraction would leave partial sums no out_sharding names).
//
//   conv f32[8@x,3,6,6] (NCHW) * f32[4@y,3,3,3] (OIHW)   -> f32[8@x,4@y,4,4]
#include "jx/core/registry.h"
#include "jx/lax/convolution.h"
#include "jx/lax/primitives.h"
#include "jx/lax/sharding_rules.h"

namespace jx::lax::internal {
namespace {

ShardingRule ConvRule(InAvals in, const ParamMap& params, absl::Span<const ShapedArray> out) {
  const ConvDimensionNumbers& dn = GetConvDimensionNumbers(params);
  const ShapedArray& lhs = *in[0];
  const ShapedArray& rhs = *in[1];
  const bool grouped = params.GetInt("feature_group_count") != 1 || params.GetInt("batch_group_count") != 1;
  ShardingRuleBuilder b;
  TensorFactors l(lhs.ndim()), r(rhs.ndim()), o(out[0].ndim());
  auto replicated = [&](TensorFactors& t, int64_t dim, int64_t size) {
    const int f = b.AddFactor(size);
    b.NeedReplication(f);
    t[dim] = {f};
  };
  // Passes `size` from (t, dim) to (u, u_dim) unless `split`; else each side needs replication.
  auto shared = [&](TensorFactors& t, int64_t dim, TensorFactors& u, int64_t u_dim, const ShapedArray& t_aval,
                    const ShapedArray& u_aval, bool split) {
    if (split || t_aval.shape[dim] != u_aval.shape[u_dim]) {
      replicated(t, dim, t_aval.shape[dim]);
      replicated(u, u_dim, u_aval.shape[u_dim]);
      return;
    }
    t[dim] = {b.AddFactor(t_aval.shape[dim])};
    u[u_dim] = t[dim];
  };
  shared(l, dn.lhs_spec[0], o, dn.out_spec[0], lhs, out[0], params.GetInt("batch_group_count") != 1);
  shared(r, dn.rhs_spec[0], o, dn.out_spec[1], rhs, out[0], grouped);
  replicated(l, dn.lhs_spec[1], lhs.shape[dn.lhs_spec[1]]);
  replicated(r, dn.rhs_spec[1], rhs.shape[dn.rhs_spec[1]]);
  for (size_t s = 2; s < dn.lhs_spec.size(); ++s) {
    replicated(l, dn.lhs_spec[s], lhs.shape[dn.lhs_spec[s]]);
    replicated(r, dn.rhs_spec[s], rhs.shape[dn.rhs_spec[s]]);
    replicated(o, dn.out_spec[s], out[0].shape[dn.out_spec[s]]);
  }
  b.AddOperand(std::move(l)).AddOperand(std::move(r)).AddResult(std::move(o));
  return std::move(b).Build();
}

}  // namespace

void RegisterConvolutionSharding(Registry& r) { r.Define(kConvGeneralDilated).sharding_rule = ConvRule; }

}  // namespace jx::lax::internal

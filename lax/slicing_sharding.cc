// Sharding rules of pad, dynamic_slice and dynamic_update_slice (JAX's explicit-mode rules):
// a dimension the op keeps whole passes through (one factor shared by the operands and the
// result); a padded dimension, or one sliced or updated at a run-time offset, needs replication
// (a device's block would not be one block of the result). Scalar operands (the padding value,
// the start indices) take no factors.
//
//   pad f32[8@x,4] by ((0,0,0), (1,1,0))   -> f32[8@x,6]
//   pad f32[8,4@y] by ((0,0,0), (1,1,0))   -> TypeError: the padded dim needs whole
#include "jx/core/registry.h"
#include "jx/lax/primitives.h"
#include "jx/lax/sharding_rules.h"

namespace jx::lax::internal {
namespace {

ShardingRule PadRule(InAvals in, const ParamMap& params, absl::Span<const ShapedArray> out) {
  const ShapedArray& x = *in[0];
  const ParamList& config = params.GetList("padding_config");
  PerDimRule t;
  for (int64_t d = 0; d < x.ndim(); ++d) {
    const auto& c = std::get<std::vector<int64_t>>(config[static_cast<size_t>(d)].value);
    t.Dim(x.shape[d], out[0].shape[d], c[0] == 0 && c[1] == 0 && c[2] == 0);
  }
  t.b.AddOperand(std::move(t.operand)).AddOperand({}).AddResult(std::move(t.result));
  return std::move(t.b).Build();
}

ShardingRule DynamicSliceRule(InAvals in, const ParamMap&, absl::Span<const ShapedArray> out) {
  const ShapedArray& x = *in[0];
  PerDimRule t;
  for (int64_t d = 0; d < x.ndim(); ++d) t.Dim(x.shape[d], out[0].shape[d], out[0].shape[d] == x.shape[d]);
  t.b.AddOperand(std::move(t.operand));
  for (size_t i = 1; i < in.size(); ++i) t.b.AddOperand({});
  t.b.AddResult(std::move(t.result));
  return std::move(t.b).Build();
}

// dynamic_update_slice(operand, update, *starts): a dim the update covers whole is shared by
// operand, update and result; the others need replication on all three.
ShardingRule DynamicUpdateSliceRule(InAvals in, const ParamMap&, absl::Span<const ShapedArray>) {
  const ShapedArray& x = *in[0];
  const ShapedArray& u = *in[1];
  ShardingRuleBuilder b;
  TensorFactors operand, update;
  for (int64_t d = 0; d < x.ndim(); ++d) {
    const int f = b.AddFactor(x.shape[d]);
    operand.push_back({f});
    if (u.shape[d] == x.shape[d]) {
      update.push_back({f});
      continue;
    }
    const int g = b.AddFactor(u.shape[d]);
    b.NeedReplication(f).NeedReplication(g);
    update.push_back({g});
  }
  b.AddOperand(operand).AddOperand(std::move(update));
  for (size_t i = 2; i < in.size(); ++i) b.AddOperand({});
  b.AddResult(std::move(operand));
  return std::move(b).Build();
}

}  // namespace

void PerDimRule::Dim(int64_t in_size, int64_t out_size, bool whole) {
  if (whole) {
    operand.push_back({b.AddFactor(in_size)});
    result.push_back(operand.back());
    return;
  }
  const int from = b.AddFactor(in_size), to = b.AddFactor(out_size);
  b.NeedReplication(from).NeedReplication(to);
  operand.push_back({from});
  result.push_back({to});
}

void RegisterSlicingSharding(Registry& r) {
  r.Define(kPad).sharding_rule = PadRule;
  r.Define(kDynamicSlice).sharding_rule = DynamicSliceRule;
  r.Define(kDynamicUpdateSlice).sharding_rule = DynamicUpdateSliceRule;
}

}  // namespace jx::lax::internal

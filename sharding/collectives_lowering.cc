// Lowering of the collective primitives (collectives.h) to HLO collectives, for the
// per-device program every chip of a shard_map runs (an SPMD module: partition p is mesh
// device p). Replica groups and permute pairs are mesh device ids, so the collectives say
// use_global_device_ids=true; each gets its own channel. As XLA builds them:
//   psum/pmax/pmin  all-reduce with an add/maximum/minimum reducer, one of all the operands
//                   (a tuple all-reduce; one per element type)
//   all_gather      all-gather along all_gather_dimension (untiled: a size-1 dimension is
//                   inserted first, so the members stack)
//   psum_scatter    reduce-scatter along scatter_dimension (untiled: the size-1 result
//                   dimension is dropped)
//   all_to_all      all-to-all along a split of split_axis into (group, block), then the group
//                   dimension moved before concat_axis and merged into it
//   ppermute        collective-permute over the device pairs of every group
//   axis_index      partition-id turned into the position along the axes
//   pvary           nothing (a typing marker)
//   shard_map       in a per-device program: its body inlined
#include <algorithm>
#include <string>
#include <vector>

#include "jx/compiler/hlo/hlo_builder.h"
#include "jx/compiler/hlo/status_macros.h"
#include "jx/compiler/lower/lower_context.h"
#include "jx/core/registry.h"
#include "jx/core/str_util.h"
#include "jx/sharding/collectives.h"
#include "jx/sharding/collectives_lowering.h"
#include "jx/sharding/shard_map.h"
#include "jx/sharding/shard_map_internal.h"

namespace jx {
namespace {

using hlo::HloInstruction;
using hlo::HloOpcode;

absl::StatusOr<hlo::HloComputation*> ScalarReducer(LowerContext& ctx, HloOpcode op, hlo::PrimitiveType type) {
  return ctx.ScalarBinaryComputation(op, type, StrCat(hlo::HloOpcodeString(op), "_reducer"));
}

hlo::HloBuilder::CollectiveOptions Groups(LowerContext& ctx) {
  return {ReplicaGroups(ctx.params()), ctx.NewChannelId()};
}

// One all-reduce of all the operands (XLA's variadic all-reduce: a tuple of their shapes),
// as JAX binds psum of several arrays once. Its reducer is one scalar computation, so
// operands of different element types form one all-reduce per type (in order of first
// appearance); a single operand is a plain all-reduce.
LowerRule AllReduceRule(HloOpcode op) {
  return [op](LowerContext& ctx) -> absl::Status {
    const std::vector<HloInstruction*> operands(ctx.operands().begin(), ctx.operands().end());
    std::vector<hlo::PrimitiveType> types;
    for (HloInstruction* x : operands) {
      if (std::find(types.begin(), types.end(), x->shape().element_type()) == types.end()) {
        types.push_back(x->shape().element_type());
      }
    }
    std::vector<HloInstruction*> outs(operands.size());
    for (hlo::PrimitiveType type : types) {
      std::vector<size_t> members;
      for (size_t i = 0; i < operands.size(); ++i) {
        if (operands[i]->shape().element_type() == type) members.push_back(i);
      }
      HLO_ASSIGN_OR_RETURN(hlo::HloComputation * reducer, ScalarReducer(ctx, op, type));
      if (members.size() == 1) {
        HLO_ASSIGN_OR_RETURN(outs[members[0]], ctx.builder().AllReduce(operands[members[0]], reducer, Groups(ctx)));
        continue;
      }
      std::vector<HloInstruction*> group;
      std::vector<hlo::Shape> shapes;
      for (size_t i : members) {
        group.push_back(operands[i]);
        shapes.push_back(operands[i]->shape());
      }
      auto all = HloInstruction::Create(HloOpcode::kAllReduce, hlo::Shape::Tuple(std::move(shapes)), group);
      const hlo::HloBuilder::CollectiveOptions options = Groups(ctx);
      all->set_channel_id(options.channel_id);
      all->set_replica_groups(options.replica_groups);
      all->set_use_global_device_ids(true);
      all->set_to_apply(reducer);
      HLO_ASSIGN_OR_RETURN(HloInstruction * tuple, ctx.builder().AddInstruction(std::move(all)));
      for (size_t k = 0; k < members.size(); ++k) {
        HLO_ASSIGN_OR_RETURN(outs[members[k]], ctx.builder().GetTupleElement(tuple, static_cast<int64_t>(k)));
      }
    }
    ctx.SetOutputs(std::move(outs));
    return absl::OkStatus();
  };
}

absl::Status PvaryRule(LowerContext& ctx) {
  ctx.SetOutputs({ctx.operands().begin(), ctx.operands().end()});
  return absl::OkStatus();
}

std::vector<int64_t> Dims(const HloInstruction* x) { return hlo::SpanToVector(x->shape().dimensions()); }

absl::Status AllGatherRule(LowerContext& ctx) {
  hlo::HloBuilder& b = ctx.builder();
  HloInstruction* x = ctx.operand(0);
  const int64_t d = ctx.params().GetInt("all_gather_dimension");
  if (!ctx.params().GetBool("tiled")) {
    std::vector<int64_t> dims = Dims(x);
    dims.insert(dims.begin() + d, 1);
    HLO_ASSIGN_OR_RETURN(x, b.Reshape(x, dims));
  }
  HLO_ASSIGN_OR_RETURN(HloInstruction * y, b.AllGather(x, d, Groups(ctx)));
  ctx.SetOutputs({y});
  return absl::OkStatus();
}

absl::Status ReduceScatterRule(LowerContext& ctx) {
  hlo::HloBuilder& b = ctx.builder();
  HloInstruction* x = ctx.operand(0);
  const int64_t d = ctx.params().GetInt("scatter_dimension");
  HLO_ASSIGN_OR_RETURN(hlo::HloComputation * reducer, ScalarReducer(ctx, HloOpcode::kAdd, x->shape().element_type()));
  HLO_ASSIGN_OR_RETURN(HloInstruction * y, b.ReduceScatter(x, d, reducer, Groups(ctx)));
  if (!ctx.params().GetBool("tiled")) {
    std::vector<int64_t> dims = Dims(y);
    dims.erase(dims.begin() + d);
    HLO_ASSIGN_OR_RETURN(y, b.Reshape(y, dims));
  }
  ctx.SetOutputs({y});
  return absl::OkStatus();
}

absl::Status AllToAllRule(LowerContext& ctx) {
  hlo::HloBuilder& b = ctx.builder();
  HloInstruction* x = ctx.operand(0);
  const int64_t split = ctx.params().GetInt("split_axis");
  const int64_t concat = ctx.params().GetInt("concat_axis");
  const bool tiled = ctx.params().GetBool("tiled");
  const hlo::ReplicaGroups groups = ReplicaGroups(ctx.params());
  const int64_t n = groups.group_size();
  const std::vector<int64_t> in = Dims(x);
  // y: split_axis as (n, size / n); its group dimension is `split`.
  std::vector<int64_t> ydims = in;
  ydims[split] = in[split] / n;
  ydims.insert(ydims.begin() + split, n);
  HLO_ASSIGN_OR_RETURN(HloInstruction * y, b.Reshape(x, ydims));
  HLO_ASSIGN_OR_RETURN(y, b.AllToAll(y, split, {groups, ctx.NewChannelId()}));
  // Member i's block now sits at index i of the group dimension: move it before the concat
  // dimension (y's numbering) and merge the two.
  const int64_t target = concat + (concat >= split ? 1 : 0);
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < static_cast<int64_t>(ydims.size()); ++i) {
    if (i == target) perm.push_back(split);
    if (i != split) perm.push_back(i);
  }
  HLO_ASSIGN_OR_RETURN(y, b.Transpose(y, perm));
  std::vector<int64_t> out = in;
  if (tiled) {
    out[split] = in[split] / n;
    out[concat] *= n;
  } else {
    // Untiled: split_axis (of size n) leaves, a concat_axis of size n arrives.
    out.erase(out.begin() + split);
    out.insert(out.begin() + concat, n);
  }
  HLO_ASSIGN_OR_RETURN(y, b.Reshape(y, out));
  ctx.SetOutputs({y});
  return absl::OkStatus();
}

absl::Status PpermuteRule(LowerContext& ctx) {
  HLO_ASSIGN_OR_RETURN(HloInstruction * y,
                       ctx.builder().CollectivePermute(ctx.operand(0), PermutePairs(ctx.params()), ctx.NewChannelId()));
  ctx.SetOutputs({y});
  return absl::OkStatus();
}

// position = sum over the axes (in the order given) of coord(axis) * (sizes of the later
// given axes), coord(axis) = (partition / stride(axis)) % size(axis), strides row-major over
// the mesh.
absl::Status AxisIndexRule(LowerContext& ctx) {
  hlo::HloBuilder& b = ctx.builder();
  const CollectiveMesh& mesh = CollectiveMeshOf(ctx.params());
  const std::vector<std::string> axes = CollectiveAxes(ctx.params());
  HLO_ASSIGN_OR_RETURN(HloInstruction * pid, b.PartitionId());
  HLO_ASSIGN_OR_RETURN(HloInstruction * id, b.Convert(pid, hlo::S32));
  auto constant = [&](int64_t v) { return ctx.ConstantInt(v, DType::kInt32); };
  HLO_ASSIGN_OR_RETURN(HloInstruction * position, constant(0));
  for (const std::string& axis : axes) {
    int64_t stride = 1;
    const auto& names = mesh.axis_names();
    for (size_t a = names.size(); a-- > 0 && names[a] != axis;) stride *= mesh.axis_sizes()[a];
    HLO_ASSIGN_OR_RETURN(HloInstruction * s, constant(stride));
    HLO_ASSIGN_OR_RETURN(HloInstruction * size, constant(mesh.axis_size(axis)));
    HLO_ASSIGN_OR_RETURN(HloInstruction * q, b.Binary(HloOpcode::kDivide, id, s));
    HLO_ASSIGN_OR_RETURN(HloInstruction * coord, b.Binary(HloOpcode::kRemainder, q, size));
    HLO_ASSIGN_OR_RETURN(HloInstruction * scaled, b.Binary(HloOpcode::kMultiply, position, size));
    HLO_ASSIGN_OR_RETURN(position, b.Binary(HloOpcode::kAdd, scaled, coord));
  }
  ctx.SetOutputs({position});
  return absl::OkStatus();
}

}  // namespace

// A shard_map equation inside a per-device program (its operands already each device's
// blocks, as the body takes them): the body inlined, its collectives lowered as above. In a
// program over global values the blocks are not formed yet: ShardMapCompiled (or spmd's
// partitioner) makes the per-device program first.
absl::Status LowerShardMap(LowerContext& ctx) {
  const shard_map_internal::ShardMapParams p = shard_map_internal::ShardMapParams::From(ctx.params());
  const std::vector<ShapedArray> body_avals = p.jaxpr.jaxpr->in_avals();
  for (size_t i = 0; i < body_avals.size() && i < ctx.in_avals().size(); ++i) {
    if (ctx.in_aval(i).shape != body_avals[i].shape || ctx.in_aval(i).dtype != body_avals[i].dtype) {
      return absl::FailedPreconditionError(StrCat(
          "shard_map: operand ", i, " is ", ctx.in_aval(i).str(), " but the body takes ", body_avals[i].str(),
          " on each of the mesh's ", p.mesh.devices().size(),
          " devices: lower the per-device program (shard_map_internal::ShardMapCompiled)"));
    }
  }
  HLO_ASSIGN_OR_RETURN(std::vector<HloInstruction*> outs,
                       ctx.InlineJaxpr(ctx.builder(), p.jaxpr, ctx.operands(), "shard_map"));
  ctx.SetOutputs(std::move(outs));
  return absl::OkStatus();
}

void RegisterCollectiveLowering(Registry& r) {
  r.Define(lax::kPsum).lower = AllReduceRule(HloOpcode::kAdd);
  r.Define(lax::kPmax).lower = AllReduceRule(HloOpcode::kMaximum);
  r.Define(lax::kPmin).lower = AllReduceRule(HloOpcode::kMinimum);
  r.Define(lax::kAllGather).lower = AllGatherRule;
  r.Define(lax::kReduceScatter).lower = ReduceScatterRule;
  r.Define(lax::kAllToAll).lower = AllToAllRule;
  r.Define(lax::kPpermute).lower = PpermuteRule;
  r.Define(lax::kAxisIndex).lower = AxisIndexRule;
  r.Define(lax::kPvary).lower = PvaryRule;
}

}  // namespace jx

#include "jx/sharding/spmd/reshard.h"

#include <memory>
#include <vector>

#include "jx/compiler/lower/lower_context.h"
#include "jx/core/errors.h"
#include "jx/core/interpreter.h"
#include "jx/core/registry.h"
#include "jx/sharding/sharded_put.h"
#include "jx/sharding/spmd/mesh_axes.h"
#include "jx/sharding/spmd/propagation.h"
#include "jx/sharding/spmd/sharding_constraint.h"

namespace jx {
namespace spmd {
namespace {

const NamedSharding& DstOf(const ParamMap& params) {
  const auto* p = dynamic_cast<const ShardingParam*>(params.GetObject("dst_sharding").get());
  if (p == nullptr) throw InternalError("[reshard] dst_sharding param has the wrong type");
  return p->sharding();
}

ParamMap ReshardParams(NamedSharding s) {
  return ParamMap{{"dst_sharding", std::shared_ptr<const ParamObject>(std::make_shared<ShardingParam>(std::move(s)))}};
}

// A spec of one entry per dimension of a type's explicit axes.
PartitionSpec SpecOfType(const ShapedArray& aval) {
  std::vector<DimSpec> dims;
  for (const std::vector<std::string>& axes : aval.spec) dims.emplace_back(axes);
  return PartitionSpec(std::move(dims));
}

}  // namespace

DimShardings ReshardLayout(const ParamMap& params, int64_t rank) { return SpecShardings(DstOf(params).spec(), rank); }

void RegisterReshard(Registry& r) {
  const Primitive p = ReshardPrimitive();
  PrimitiveRules& rules = r.Define(p);
  rules.abstract_eval = [](InAvals in, const ParamMap& params) {
    ShapedArray out = *in[0];
    const NamedSharding& dst = DstOf(params);
    dst.CheckCompatible(out.shape, "reshard");
    out.spec = dst.TypeSpec(out.ndim());  // the result's type is the destination's
    return Avals{out};
  };
  rules.impl = [](absl::Span<const Array> in, const ParamMap& params, absl::Span<const ShapedArray>) {
    return Arrays{device_put(in[0], DstOf(params))};
  };
  rules.jvp = [p](absl::Span<const Array> primals, absl::Span<const Array> tangents, const ParamMap& params) {
    Array t = tangents[0].defined() ? Bind1(p, {tangents[0]}, params) : Array();
    return JvpResult{{Bind1(p, {primals[0]}, params)}, {t}};
  };
  // The cotangent goes back to the operand's sharding (its type's explicit axes on the same
  // mesh), as JAX's transpose reshards to x.aval.sharding.
  rules.transpose = [p](absl::Span<const Array> cts, absl::Span<const TransposeArg> args, const ParamMap& params) {
    if (!cts[0].defined()) return Arrays{Array()};
    return Arrays{Bind1(p, {cts[0]}, ReshardParams(NamedSharding(DstOf(params).mesh(), SpecOfType(args[0].aval))))};
  };
  rules.batch = [p](absl::Span<const Array> args, absl::Span<const int64_t> dims, int64_t, const ParamMap& params) {
    // The batch dimension is unsharded: None at its position.
    const NamedSharding& s = DstOf(params);
    std::vector<DimSpec> spec = s.spec().dims();
    spec.resize(static_cast<size_t>(args[0].ndim() - 1));
    spec.insert(spec.begin() + dims[0], DimSpec{});
    return BatchResult{{Bind1(p, {args[0]}, ReshardParams(NamedSharding(s.mesh(), PartitionSpec(spec))))}, {dims[0]}};
  };
  // Lowered on its own (one device) it is the identity; the partitioner consumes it before
  // lowering a sharded program.
  rules.lower = [](LowerContext& ctx) -> absl::Status {
    ctx.SetOutputs({ctx.operand(0)});
    return absl::OkStatus();
  };
}

const Primitive& ReshardPrimitive() {
  static const Primitive p = Primitive::Intern("reshard");
  return p;
}

const NamedSharding* PinnedSharding(Primitive p, const ParamMap& params) {
  const char* name = nullptr;
  if (p == ReshardPrimitive()) {
    name = "dst_sharding";
  } else if (p == ShardingConstraintPrimitive()) {
    name = "sharding";
  } else {
    return nullptr;
  }
  const auto* s = dynamic_cast<const ShardingParam*>(params.GetObject(name).get());
  if (s == nullptr) ThrowOpError<InternalError>(p.name(), name, " param has the wrong type");
  return &s->sharding();
}

}  // namespace spmd

Array reshard(const Array& x, const NamedSharding& sharding) {
  spmd::RegisterSpmdPrimitives();
  return Bind1(spmd::ReshardPrimitive(), {x}, spmd::ReshardParams(sharding));
}

}  // namespace jx

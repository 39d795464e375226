#include "jx/sharding/spmd/sharding_constraint.h"

#include <mutex>

#include "jx/compiler/lower/lower_context.h"
#include "jx/core/errors.h"
#include "jx/core/interpreter.h"
#include "jx/core/registry.h"
#include "jx/core/str_util.h"
#include "jx/lax/registration.h"
#include "jx/sharding/collectives.h"
#include "jx/sharding/sharded_put.h"
#include "jx/sharding/spmd/propagation.h"
#include "jx/sharding/spmd/reshard.h"

namespace jx {

bool ShardingParam::Equals(const ParamObject& other) const {
  const auto* o = dynamic_cast<const ShardingParam*>(&other);
  return o != nullptr && o->sharding_.Equals(sharding_);
}

namespace spmd {

const Primitive& ShardingConstraintPrimitive() {
  static const Primitive p = Primitive::Intern("sharding_constraint");
  return p;
}

namespace {

const NamedSharding& ShardingOf(const ParamMap& params) {
  const auto* p = dynamic_cast<const ShardingParam*>(params.GetObject("sharding").get());
  if (p == nullptr) throw InternalError("[sharding_constraint] sharding param has the wrong type");
  return p->sharding();
}

ParamMap ConstraintParams(NamedSharding s) {
  return ParamMap{{"sharding", std::shared_ptr<const ParamObject>(std::make_shared<ShardingParam>(std::move(s)))}};
}

void RegisterShardingConstraint(Registry& r) {
  const Primitive p = ShardingConstraintPrimitive();
  PrimitiveRules& rules = r.Define(p);
  rules.abstract_eval = [](InAvals in, const ParamMap& params) {
    const ShapedArray& x = *in[0];
    const NamedSharding& s = ShardingOf(params);
    // The spec must fit the operand (names the mesh's axes and the dim that does not divide).
    s.shard_shape(x.shape);
    // On a value typed with explicit axes the constraint could not change its type: JAX's
    // ValueError, pointing to reshard (which does).
    if (!x.spec.empty()) {
      const AbstractMesh& mesh = s.mesh().abstract_mesh();
      for (const std::string& axis : s.spec().axes()) {
        if (mesh.axis_types()[mesh.axis_position(axis)] != AxisType::kExplicit) continue;
        throw ValueError(StrCat("[sharding_constraint] The spec of NamedSharding passed to with_sharding_constraint ",
                                "can only refer to Auto axes of the mesh. Got spec=", s.spec().ToString(), " and mesh=",
                                s.mesh().ToString(), " for an operand of type ", x.str(),
                                ". You probably meant to use jx::reshard"));
      }
    }
    return Avals{x};
  };
  rules.impl = [](absl::Span<const Array> in, const ParamMap& params, absl::Span<const ShapedArray>) {
    return Arrays{device_put(in[0], ShardingOf(params))};
  };
  rules.jvp = [p](absl::Span<const Array> primals, absl::Span<const Array> tangents, const ParamMap& params) {
    Array t = tangents[0].defined() ? Bind1(p, {tangents[0]}, params) : Array();
    return JvpResult{{Bind1(p, {primals[0]}, params)}, {t}};
  };
  rules.transpose = [p](absl::Span<const Array> cts, absl::Span<const TransposeArg>, const ParamMap& params) {
    return Arrays{cts[0].defined() ? Bind1(p, {cts[0]}, params) : Array()};
  };
  rules.batch = [p](absl::Span<const Array> args, absl::Span<const int64_t> dims, int64_t, const ParamMap& params) {
    // The batch dimension is unsharded: insert None at its position.
    const NamedSharding& s = ShardingOf(params);
    std::vector<DimSpec> spec = s.spec().dims();
    const int64_t rank = args[0].ndim();
    spec.resize(static_cast<size_t>(rank - 1));
    spec.insert(spec.begin() + dims[0], DimSpec{});
    return BatchResult{{Bind1(p, {args[0]}, ConstraintParams(NamedSharding(s.mesh(), PartitionSpec(spec))))}, {dims[0]}};
  };
  rules.sharding_rule = [](InAvals in, const ParamMap&, absl::Span<const ShapedArray> out) {
    return ElementwiseShardingRule(in, out);
  };
  // Lowered on its own (one device), the constraint is the identity; the partitioner
  // consumes it before lowering a sharded program.
  rules.lower = [](LowerContext& ctx) -> absl::Status {
    ctx.SetOutputs({ctx.operand(0)});
    return absl::OkStatus();
  };
}

}  // namespace

void RegisterSpmdPrimitives() {
  static std::once_flag once;
  std::call_once(once, [] {
    lax::RegisterAll();
    RegisterShardingConstraint(GlobalRegistry());
    RegisterReshard(GlobalRegistry());
    RegisterCollectives(GlobalRegistry());
    InstallShardedEagerHandler();
  });
}

}  // namespace spmd

namespace lax {

Array with_sharding_constraint(const Array& x, const NamedSharding& sharding) {
  spmd::RegisterSpmdPrimitives();
  return Bind1(spmd::ShardingConstraintPrimitive(), {x}, spmd::ConstraintParams(sharding));
}

}  // namespace lax
}  // namespace jx

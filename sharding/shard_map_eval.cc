// shard_map's eager evaluation: every argument is laid out over the mesh by its in_spec
// (device_put to a NamedSharding, which keeps an argument already laid out that way), the
// body runs on every device in lockstep, equation by equation (each device's ordinary ops
// on its own chip through the eager path, so the chips compute and their clocks advance;
// collectives move the devices' values between them), and each output is assembled from
// the devices' results by its out_spec as a sharded array.
#include <memory>
#include <vector>

#include "jx/core/errors.h"
#include "jx/core/interpreter.h"
#include "jx/core/sharding.h"
#include "jx/core/str_util.h"
#include "jx/devices/device_put.h"
#include "jx/sharding/collective_eval.h"
#include "jx/sharding/named_sharding.h"
#include "jx/sharding/shard_map_internal.h"
#include "jx/sharding/sharded_put.h"

namespace jx::shard_map_internal {
namespace {

using PerDevice = std::vector<Array>;  // one value per device of the mesh

const Primitive kJitPrimitive = Primitive::Intern("jit");
const Primitive kCheckpointPrimitive = Primitive::Intern("checkpoint");

bool ParamHasCollective(const Param& p);

bool JaxprHasCollective(const Jaxpr& j) {
  for (const Eqn& e : j.eqns) {
    if (lax::IsCollective(e.primitive)) return true;
    for (const auto& [name, value] : e.params) {
      if (ParamHasCollective(value)) return true;
    }
  }
  return false;
}

bool ParamHasCollective(const Param& p) {
  if (const auto* obj = std::get_if<std::shared_ptr<const ParamObject>>(&p.value)) {
    const auto* sub = dynamic_cast<const JaxprParam*>(obj->get());
    return sub != nullptr && JaxprHasCollective(*sub->closed().jaxpr);
  }
  if (const auto* list = std::get_if<ParamList>(&p.value)) {
    for (const Param& item : *list) {
      if (ParamHasCollective(item)) return true;
    }
  }
  return false;
}

Array OnDevice(const Array& x, const Device* device) {
  return x.committed_device() == device ? x : device_put(x, device);
}

std::vector<PerDevice> EvalLockstep(const Jaxpr& j, const std::vector<PerDevice>& args,
                                    const std::vector<const Device*>& devices) {
  const size_t num = devices.size();
  if (!j.constvars.empty()) throw InternalError("shard_map: the body's jaxpr has unhoisted consts");
  std::vector<PerDevice> env(j.num_vars());
  for (size_t i = 0; i < j.invars.size(); ++i) env[j.invars[i].index] = args[i];
  auto read = [&](const Atom& a) -> PerDevice {
    if (const Var* v = std::get_if<Var>(&a)) return env[v->index];
    return PerDevice(num, std::get<Literal>(a).value);
  };
  for (const Eqn& e : j.eqns) {
    std::vector<PerDevice> ins;
    for (const Atom& a : e.inputs) ins.push_back(read(a));
    std::vector<PerDevice> outs(e.outputs.size(), PerDevice(num));
    bool nested = false;  // a call whose body communicates
    for (const auto& [name, value] : e.params) nested = nested || ParamHasCollective(value);
    if (lax::IsCollective(e.primitive)) {
      std::vector<Array> result = EvalCollective(e.primitive, ins.empty() ? PerDevice() : ins[0], e.params);
      for (size_t d = 0; d < num; ++d) outs[0][d] = OnDevice(result[d], devices[d]);
    } else if (nested) {
      // Collectives inside a call: its body runs in lockstep too.
      if (e.primitive != kJitPrimitive && e.primitive != kCheckpointPrimitive) {
        ThrowOpError<ValueError>(e.primitive.name(), "inside shard_map contains collectives; shard_map evaluates "
                                 "collectives eagerly only at the top of its body or inside jit/checkpoint calls "
                                 "(jit the shard_map to run it as one program per chip)");
      }
      const ClosedJaxpr& sub = GetJaxpr(e.params, "jaxpr");
      std::vector<PerDevice> sub_args;
      for (const Array& c : sub.consts) sub_args.push_back(PerDevice(num, c));
      sub_args.insert(sub_args.end(), ins.begin(), ins.end());
      ClosedJaxpr hoisted = sub.consts.empty() ? sub : HoistConsts(sub).jaxpr;
      outs = EvalLockstep(*hoisted.jaxpr, sub_args, devices);
    } else {
      for (size_t d = 0; d < num; ++d) {
        Arrays in_d;
        for (const PerDevice& x : ins) in_d.push_back(x[d]);
        Arrays o = Bind(e.primitive, in_d, e.params);
        for (size_t k = 0; k < o.size(); ++k) outs[k][d] = std::move(o[k]);
      }
    }
    for (size_t k = 0; k < e.outputs.size(); ++k) env[e.outputs[k].index] = std::move(outs[k]);
  }
  std::vector<PerDevice> results;
  for (const Atom& a : j.outvars) results.push_back(read(a));
  return results;
}

}  // namespace

Arrays ShardMapImpl(absl::Span<const Array> in, const ParamMap& params, absl::Span<const ShapedArray> out_avals) {
  const ShardMapParams p = ShardMapParams::From(params);
  const std::vector<const Device*>& devices = p.mesh.devices();
  const size_t num = devices.size();

  std::vector<PerDevice> args;
  for (size_t i = 0; i < in.size(); ++i) {
    const Array placed = sharding_internal::DevicePutSharded(in[i], NamedSharding(p.mesh, p.in_specs[i]));
    std::vector<Shard> shards = placed.addressable_shards();
    if (shards.size() != num) throw InternalError("shard_map: an argument's shards do not cover the mesh");
    PerDevice values(num);
    for (size_t d = 0; d < num; ++d) values[d] = OnDevice(shards[d].data, devices[d]);
    args.push_back(std::move(values));
  }

  std::vector<PerDevice> results = EvalLockstep(*p.jaxpr.jaxpr, args, devices);

  Arrays outs;
  for (size_t k = 0; k < results.size(); ++k) {
    std::vector<Array> blocks;
    for (size_t d = 0; d < num; ++d) blocks.push_back(OnDevice(results[k][d], devices[d]));
    outs.push_back(make_array_from_single_device_arrays(out_avals[k].shape, NamedSharding(p.mesh, p.out_specs[k]),
                                                        std::move(blocks)));
  }
  return outs;
}

}  // namespace jx::shard_map_internal

// Eager ops on sharded arrays: the handler core calls (SetShardedEagerHandler) runs the one
// primitive as an SPMD program over the arguments' mesh (cached per primitive, params, avals
// and shardings), giving a sharded result, as JAX runs an op on sharded arrays. A top-level
// jit call with sharded arguments arrives as its `jit` equation: its program is partitioned
// the same way (the arguments' shardings act as in_shardings).
#include <map>
#include <optional>
#include <mutex>

#include "jx/core/abstract_mesh_context.h"
#include "jx/core/apply_primitive.h"
#include "jx/core/errors.h"
#include "jx/core/interpreter.h"
#include "jx/core/jaxpr.h"
#include "jx/core/registry.h"
#include "jx/core/sharding.h"
#include "jx/core/str_util.h"
#include "jx/sharding/shard_map_compiled.h"
#include "jx/sharding/shard_map_internal.h"
#include "jx/sharding/sharded_put.h"
#include "jx/sharding/spmd/sharding_constraint.h"
#include "jx/sharding/spmd/spmd_program.h"
#include "jx/sharding/use_mesh.h"
#include "jx/transforms/staging.h"

namespace jx::spmd {
namespace {

const NamedSharding* NamedShardingOf(const Array& x) {
  const auto& c = static_cast<const ConcreteArray&>(*x.impl());
  if (!c.is_sharded()) return nullptr;
  return dynamic_cast<const NamedSharding*>(c.sharded()->sharding.get());
}

// The program's one equation when it is a shard_map of the program's inputs, in order, giving
// its outputs (jit(shard_map(f))), else null.
const Eqn* SoleShardMap(const Jaxpr& j) {
  if (j.eqns.size() != 1 || j.eqns[0].primitive.name() != "shard_map" || !j.constvars.empty()) return nullptr;
  const Eqn& e = j.eqns[0];
  if (e.inputs.size() != j.invars.size() || e.outputs.size() != j.outvars.size()) return nullptr;
  for (size_t i = 0; i < e.inputs.size(); ++i) {
    const Var* v = std::get_if<Var>(&e.inputs[i]);
    if (v == nullptr || !(*v == j.invars[i])) return nullptr;
  }
  for (size_t i = 0; i < e.outputs.size(); ++i) {
    const Var* v = std::get_if<Var>(&j.outvars[i]);
    if (v == nullptr || !(*v == e.outputs[i])) return nullptr;
  }
  return &e;
}

Arrays RunSharded(Primitive p, absl::Span<const Array> inputs, const ParamMap& params) {
  if (p == ShardingConstraintPrimitive()) {
    const auto* s = dynamic_cast<const ShardingParam*>(params.GetObject("sharding").get());
    return Arrays{device_put(inputs[0], s->sharding())};
  }
  // shard_map places its operands by its in_specs itself.
  if (p.name() == "shard_map") {
    const PrimitiveRules& rules = GlobalRegistry().Get(p);
    std::vector<const ShapedArray*> in_avals;
    for (const Array& x : inputs) in_avals.push_back(&x.aval());
    Avals out_avals = rules.abstract_eval(in_avals, params);
    return rules.impl(inputs, params, std::vector<ShapedArray>(out_avals.begin(), out_avals.end()));
  }
  // A top-level jit call: its traced program, partitioned by its arguments' shardings (the
  // key holds the program's address; the cache keeps the program alive).
  const JaxprParam* jit_program = nullptr;
  if (p.name() == "jit") jit_program = dynamic_cast<const JaxprParam*>(params.GetObject("jaxpr").get());
  std::optional<Mesh> mesh;
  std::vector<MaybeSharding> in;
  std::string key = jit_program != nullptr
                        ? StrCat("jit@", reinterpret_cast<uintptr_t>(jit_program->closed().jaxpr.get()))
                        : StrCat(p.name(), "[", params.ToString(), "]");
  std::vector<ShapedArray> avals;
  for (const Array& x : inputs) {
    const NamedSharding* s = NamedShardingOf(x);
    if (s != nullptr && !mesh) mesh = s->mesh();
    in.push_back(s != nullptr ? MaybeSharding(s->TypeSpec(x.ndim())) : std::nullopt);
    avals.push_back(ShapedArray{x.shape(), x.dtype(), x.weak_type()});
    StrAppend(&key, " ", avals.back().str(), s != nullptr ? s->ToString() : "");
  }
  if (jit_program != nullptr) {
    // A jit of a shard_map: the shard_map places its arguments by its in_specs (shards already
    // laid out that way stay), compiled once for the mesh's chips.
    const Jaxpr& body = *jit_program->closed().jaxpr;
    if (const Eqn* only = SoleShardMap(body)) {
      std::vector<ShapedArray> out_avals;
      for (const Var& v : only->outputs) out_avals.push_back(body.aval(v));
      return shard_map_internal::ShardMapCompiled(inputs, only->params, out_avals);
    }
  }
  if (!mesh && jit_program != nullptr) {
    // Unsharded arguments of a program with a shard_map among other equations: its mesh.
    const Jaxpr& body = *jit_program->closed().jaxpr;
    for (const Eqn& eqn : body.eqns) {
      if (eqn.primitive.name() == "shard_map" && !mesh) mesh = shard_map_internal::ShardMapParams::From(eqn.params).mesh;
    }
  }
  if (!mesh) ThrowOpError<InternalError>(p.name(), "sharded eager handler called without a NamedSharding argument");
  static std::mutex mu;
  static auto* cache = new std::map<std::string, std::shared_ptr<const SpmdProgram>>();
  std::shared_ptr<const SpmdProgram> program;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache->find(key);
    if (it != cache->end()) program = it->second;
  }
  if (program == nullptr) {
    const use_mesh in_context(*mesh);  // explicit types in the program refer to this mesh
    ClosedJaxpr j = jit_program != nullptr
                        ? jit_program->closed()
                        : TraceToJaxpr([&](absl::Span<const Array> xs) { return Bind(p, xs, params); }, avals,
                                       std::string(p.name()));
    program = SpmdProgram::Build(j, *mesh, in, {});
    std::lock_guard<std::mutex> lock(mu);
    cache->emplace(key, program);
  }
  return program->Run(inputs);
}

}  // namespace

void InstallShardedEagerHandler() {
  SetShardedEagerHandler(RunSharded);
}

}  // namespace jx::spmd

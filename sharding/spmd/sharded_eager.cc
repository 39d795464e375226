// Eager ops on sharded arrays: the handler core calls (SetShardedEagerHandler) runs the one
// primitive as an SPMD program over the arguments' mesh (cached per primitive, params, avals,
// shardings and the mesh's devices), giving a sharded result, as JAX runs an op on sharded
// arrays. A top-level jit call with sharded arguments arrives as its `jit` equation: its
// program is partitioned the same way (the arguments' shardings act as in_shardings).
//
// JAX's explicit mode: when the arguments are sharded over Explicit mesh axes only, the op's
// results are sharded as its sharding rule types them (a jit call: as its traced program's
// outputs are typed), and shardings the rule cannot reconcile are the rule's TypeError naming
// the op and the operands' types; nothing is resharded implicitly to make them agree (jx::reshard
// does it explicitly). Arrays sharded over Auto axes keep the compiler's choice: the results'
// shardings are propagated (Explicit axes beside them are still type-checked).
#include <map>
#include <optional>
#include <mutex>

#include "jx/core/abstract_mesh_context.h"
#include "jx/core/apply_primitive.h"
#include "jx/core/caches.h"
#include "jx/core/device.h"
#include "jx/core/errors.h"
#include "jx/core/interpreter.h"
#include "jx/core/jaxpr.h"
#include "jx/core/registry.h"
#include "jx/core/sharding.h"
#include "jx/core/str_util.h"
#include "jx/sharding/shard_map_compiled.h"
#include "jx/sharding/shard_map_internal.h"
#include "jx/sharding/sharded_put.h"
#include "jx/sharding/spmd/mesh_axes.h"
#include "jx/sharding/spmd/reshard.h"
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

// The op's result types from its operands' (explicit-sharding) types: its sharding rule's
// TypeError where their shardings conflict (the mesh in context gives the axis sizes).
Avals OpTypes(Primitive p, absl::Span<const Array> inputs, const ParamMap& params) {
  std::vector<const ShapedArray*> in;
  for (const Array& x : inputs) in.push_back(&x.aval());
  return AbstractEval(p, in, params);
}

// A jit call's result types: its program's, traced on the arguments' types.
Avals ProgramTypes(const ClosedJaxpr& j) {
  Avals out;
  for (const Atom& a : j.jaxpr->outvars) out.push_back(j.jaxpr->aval(a));
  return out;
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
  // with_sharding_constraint and reshard: the operand moved to their sharding (after their
  // type checks: a constraint naming Explicit axes of an explicitly sharded value is an error).
  if (const NamedSharding* pinned = PinnedSharding(p, params)) {
    OpTypes(p, inputs, params);
    return Arrays{device_put(inputs[0], *pinned)};
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
  bool explicit_mode = true;  // every sharded argument is sharded over Explicit axes only
  bool any_sharded = false;
  for (const Array& x : inputs) {
    const NamedSharding* s = NamedShardingOf(x);
    if (s != nullptr && !mesh) mesh = s->mesh();
    if (s != nullptr) {
      // Where its pieces are: every axis, Auto ones too (its type shows the Explicit ones).
      const DimShardings layout = SpecShardings(s->spec(), x.ndim());
      explicit_mode &= layout == s->TypeSpec(x.ndim());
      any_sharded = true;
      in.push_back(layout);
    } else {
      in.push_back(std::nullopt);
    }
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
  // The mesh's devices in order: meshes of one shape on other chips (another pod) or in
  // another order print alike.
  StrAppend(&key, " on");
  for (const Device* d : mesh->devices()) StrAppend(&key, " ", d->id());
  using Programs = std::map<std::string, std::shared_ptr<const SpmdProgram>>;
  static std::mutex mu;
  static auto* cache = [] {
    auto* programs = new Programs();  // never destroyed: programs outlive static teardown
    caches_internal::RegisterCache([programs] {
      Programs dropped;  // freed unlocked
      std::lock_guard<std::mutex> lock(mu);
      dropped.swap(*programs);
    });
    return programs;
  }();
  std::shared_ptr<const SpmdProgram> program;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache->find(key);
    if (it != cache->end()) program = it->second;
  }
  if (program == nullptr) {
    const use_mesh in_context(*mesh);  // explicit types in the program refer to this mesh
    // The results' types: the TypeError of conflicting explicit shardings comes from here (a
    // jit call's from its trace). In explicit mode the results are laid out as typed; with
    // Auto axes in play their layout is propagated.
    const Avals types = jit_program != nullptr ? ProgramTypes(jit_program->closed()) : OpTypes(p, inputs, params);
    std::vector<MaybeSharding> out;
    if (explicit_mode && any_sharded) {
      for (const ShapedArray& t : types) out.push_back(t.spec);
    }
    ClosedJaxpr j = jit_program != nullptr
                        ? jit_program->closed()
                        : TraceToJaxpr([&](absl::Span<const Array> xs) { return Bind(p, xs, params); }, avals,
                                       std::string(p.name()));
    program = SpmdProgram::Build(j, *mesh, in, out);
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

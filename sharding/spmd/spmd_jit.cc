#include "jx/sharding/spmd/spmd_jit.h"

#include <cstdlib>
#include <iostream>

#include "absl/strings/str_join.h"
#include "jx/core/errors.h"
#include "jx/core/sharding.h"
#include "jx/core/str_util.h"
#include "jx/sharding/spmd/sharding_constraint.h"
#include "jx/sharding/use_mesh.h"
#include "jx/transforms/staging.h"

namespace jx::spmd {
namespace {

bool ExplainCacheMisses() {
  const char* v = std::getenv("JX_EXPLAIN_CACHE_MISSES");
  return v != nullptr && v[0] != '\0' && v[0] != '0';
}

}  // namespace

std::optional<NamedSharding> NamedShardingOf(const Array& x) {
  if (!x.is_concrete()) return std::nullopt;
  const auto& c = static_cast<const ConcreteArray&>(*x.impl());
  if (!c.is_sharded()) return std::nullopt;
  if (const auto* s = dynamic_cast<const NamedSharding*>(c.sharded()->sharding.get())) return *s;
  return std::nullopt;
}

std::optional<NamedSharding> AbstractSharding(const ShapeDtypeStruct& s, const std::string& leaf_name) {
  if (s.sharding == nullptr) return std::nullopt;
  if (const auto* named = dynamic_cast<const NamedSharding*>(s.sharding.get())) return *named;
  throw TypeError(StrCat("jit with shardings: ", leaf_name, " is a ShapeDtypeStruct whose sharding ",
                         s.sharding->ToString(), " is not a NamedSharding"));
}

SpmdJitState::SpmdJitState(std::string name, std::vector<std::optional<NamedSharding>> in,
                           std::vector<std::optional<NamedSharding>> out)
    : name_(std::move(name)), in_(std::move(in)), out_(std::move(out)) {
  RegisterSpmdPrimitives();
}

std::shared_ptr<const SpmdProgram> SpmdJitState::ProgramFor(const TraceFn& fn, absl::Span<const ShapedArray> avals,
                                                            absl::Span<const std::optional<NamedSharding>> own,
                                                            const SpmdCall& call, tree::TreeDef* out_def) {
  const std::string what = StrCat("jit(", name_, ")");
  if (in_.size() > 1 && in_.size() != call.num_args) {
    throw ValueError(StrCat(what, ": in_shardings has ", in_.size(), " entries but the function was called with ",
                            call.num_args, " arguments"));
  }
  // Each leaf's sharding: its argument's in_shardings entry (one entry is a prefix for all,
  // and an entry for a pytree argument applies to all of its leaves), else the leaf's own
  // NamedSharding, else left to propagation.
  std::vector<std::optional<NamedSharding>> leaf_shardings;
  std::vector<std::string> parts;
  std::optional<Mesh> mesh;
  for (size_t i = 0; i < avals.size(); ++i) {
    std::optional<NamedSharding> s;
    if (!in_.empty()) s = in_.size() == 1 ? in_[0] : in_[call.arg_of_leaf[i]];
    if (!s) s = own[i];
    if (s && !mesh) mesh = s->mesh();
    if (s && mesh && !(s->mesh() == *mesh)) {
      throw ValueError(StrCat(what, ": ", call.leaf_names[i], "'s sharding ", s->ToString(),
                              " is on another mesh than ", mesh->ToString(),
                              "; every sharding of one call must share its mesh"));
    }
    const ShapedArray& a = avals[i];
    parts.push_back(StrCat(call.leaf_names[i], ": ", ShapedArray{a.shape, a.dtype, a.weak_type}.str(), " sharded ",
                           s ? s->spec().ToString() : "by propagation"));
    leaf_shardings.push_back(std::move(s));
  }
  for (const auto& s : out_) {
    if (s && !mesh) mesh = s->mesh();
  }
  if (!mesh) {
    throw ValueError(StrCat(what, ": jit with shardings needs a mesh: give in_shardings or out_shardings, or call "
                            "it on sharded arrays"));
  }
  const std::string key = StrCat(call.structure, "|", absl::StrJoin(parts, "; "));
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = cache_.find(key); it != cache_.end()) {
    *out_def = it->second.out_def;
    return it->second.program;
  }
  if (ExplainCacheMisses()) {
    std::string why = cache_.empty() ? "first call" : "";
    if (why.empty() && call.structure != last_structure_) why = StrCat("the arguments' structure changed to ", call.structure);
    for (size_t i = 0; why.empty() && i < parts.size(); ++i) {
      if (i >= last_key_parts_.size()) why = "a different number of arguments";
      else if (parts[i] != last_key_parts_[i]) why = StrCat(parts[i], " (was ", last_key_parts_[i].substr(last_key_parts_[i].find(": ") + 2), ")");
    }
    std::cerr << "[jx] " << what << " cache miss: " << why << "\n";
  }
  std::vector<ShapedArray> trace_avals;
  for (const ShapedArray& a : avals) trace_avals.push_back(ShapedArray{a.shape, a.dtype, a.weak_type});
  SpmdOutputs outputs;
  const use_mesh in_context(*mesh);  // explicit types in the program refer to this mesh
  ClosedJaxpr global = TraceToJaxpr([&](absl::Span<const Array> xs) { return fn(xs, &outputs); }, trace_avals, name_);
  std::vector<MaybeSharding> in, out;
  for (size_t i = 0; i < avals.size(); ++i) {
    in.push_back(leaf_shardings[i] ? MaybeSharding(leaf_shardings[i]->TypeSpec(avals[i].ndim())) : std::nullopt);
  }
  const Jaxpr& j = *global.jaxpr;
  if (out_.size() > 1 && out_.size() != outputs.num_groups) {
    throw ValueError(StrCat(what, ": out_shardings has ", out_.size(), " entries but the function returns ",
                            outputs.num_groups, " outputs"));
  }
  for (size_t k = 0; k < j.outvars.size() && !out_.empty(); ++k) {
    const auto& s = out_.size() == 1 ? out_[0] : out_[outputs.group_of_leaf[k]];
    out.push_back(s ? MaybeSharding(s->TypeSpec(j.aval(j.outvars[k]).ndim())) : std::nullopt);
  }
  auto program = SpmdProgram::Build(global, *mesh, in, out, name_);
  cache_.emplace(key, Entry{program, outputs.def});
  last_key_parts_ = std::move(parts);
  last_structure_ = call.structure;
  *out_def = std::move(outputs.def);
  return program;
}

void GroupOutputs(const tree::TreeDef& def, SpmdOutputs* out) {
  out->group_of_leaf.clear();
  if (def.IsLeaf() || def.kind() == tree::NodeKind::kStruct || def.kind() == tree::NodeKind::kDict) {
    // One output (a struct or dict of outputs is one prefix entry, as a JAX dict is)...
    out->group_of_leaf.assign(def.num_leaves(), 0);
    out->num_groups = 1;
  } else {
    // ... and a tuple or list of outputs takes one entry per element.
    const std::vector<tree::TreeDef> children = def.Children();
    for (size_t c = 0; c < children.size(); ++c) out->group_of_leaf.insert(out->group_of_leaf.end(), children[c].num_leaves(), c);
    out->num_groups = children.size();
  }
  out->def = def;
}

}  // namespace jx::spmd

#include "jx/sharding/spmd/spmd_jit.h"

#include <cstdlib>
#include <iostream>

#include "absl/strings/str_join.h"
#include "jx/core/errors.h"
#include "jx/core/sharding.h"
#include "jx/core/str_util.h"
#include "jx/sharding/spmd/sharding_constraint.h"
#include "jx/transforms/staging.h"

namespace jx::spmd {
namespace {

const NamedSharding* NamedShardingOf(const Array& x) {
  if (!x.is_concrete()) return nullptr;
  const auto& c = static_cast<const ConcreteArray&>(*x.impl());
  if (!c.is_sharded()) return nullptr;
  return dynamic_cast<const NamedSharding*>(c.sharded()->sharding.get());
}

bool ExplainCacheMisses() {
  const char* v = std::getenv("JX_EXPLAIN_CACHE_MISSES");
  return v != nullptr && v[0] != '\0' && v[0] != '0';
}

}  // namespace

SpmdJitState::SpmdJitState(std::string name, std::vector<std::optional<NamedSharding>> in,
                           std::vector<std::optional<NamedSharding>> out)
    : name_(std::move(name)), in_(std::move(in)), out_(std::move(out)) {
  RegisterSpmdPrimitives();
}

std::shared_ptr<const SpmdProgram> SpmdJitState::ProgramFor(const std::function<Arrays(absl::Span<const Array>)>& fn,
                                                            absl::Span<const Array> args) {
  const std::string what = StrCat("jit(", name_, ")");
  if (in_.size() > 1 && in_.size() != args.size()) {
    throw ValueError(StrCat(what, ": in_shardings has ", in_.size(), " entries but the function was called with ",
                            args.size(), " arguments"));
  }
  // Each argument's sharding: in_shardings' entry (one entry is a prefix for all), else the
  // argument's own NamedSharding, else left to propagation.
  std::vector<std::optional<NamedSharding>> arg_shardings;
  std::vector<std::string> parts;
  std::optional<Mesh> mesh;
  for (size_t i = 0; i < args.size(); ++i) {
    std::optional<NamedSharding> s;
    if (!in_.empty()) s = in_.size() == 1 ? in_[0] : in_[i];
    if (!s) {
      if (const NamedSharding* own = NamedShardingOf(args[i])) s = *own;
    }
    if (s && !mesh) mesh = s->mesh();
    if (s && mesh && !(s->mesh() == *mesh)) {
      throw ValueError(StrCat(what, ": argument ", i, "'s sharding ", s->ToString(), " is on another mesh than ",
                              mesh->ToString(), "; every sharding of one call must share its mesh"));
    }
    const ShapedArray& a = args[i].aval();
    parts.push_back(StrCat("argument ", i, ": ", ShapedArray{a.shape, a.dtype, a.weak_type}.str(), " sharded ",
                           s ? s->spec().ToString() : "by propagation"));
    arg_shardings.push_back(std::move(s));
  }
  for (const auto& s : out_) {
    if (s && !mesh) mesh = s->mesh();
  }
  if (!mesh) {
    throw ValueError(StrCat(what, ": jit with shardings needs a mesh: give in_shardings or out_shardings, or call "
                            "it on sharded arrays"));
  }
  const std::string key = absl::StrJoin(parts, "; ");
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  if (ExplainCacheMisses()) {
    std::string why = cache_.empty() ? "first call" : "";
    for (size_t i = 0; why.empty() && i < parts.size(); ++i) {
      if (i >= last_key_parts_.size()) why = "a different number of arguments";
      else if (parts[i] != last_key_parts_[i]) why = StrCat(parts[i], " (was ", last_key_parts_[i].substr(last_key_parts_[i].find(": ") + 2), ")");
    }
    std::cerr << "[jx] " << what << " cache miss: " << why << "\n";
  }
  std::vector<ShapedArray> avals;
  for (const Array& x : args) avals.push_back(ShapedArray{x.shape(), x.dtype(), x.weak_type()});
  ClosedJaxpr global = TraceToJaxpr(fn, avals, name_);
  std::vector<MaybeSharding> in, out;
  for (size_t i = 0; i < args.size(); ++i) {
    in.push_back(arg_shardings[i] ? MaybeSharding(arg_shardings[i]->TypeSpec(args[i].ndim())) : std::nullopt);
  }
  const Jaxpr& j = *global.jaxpr;
  if (out_.size() > 1 && out_.size() != j.outvars.size()) {
    throw ValueError(StrCat(what, ": out_shardings has ", out_.size(), " entries but the function returns ",
                            j.outvars.size(), " arrays"));
  }
  for (size_t k = 0; k < j.outvars.size() && !out_.empty(); ++k) {
    const auto& s = out_.size() == 1 ? out_[0] : out_[k];
    out.push_back(s ? MaybeSharding(s->TypeSpec(j.aval(j.outvars[k]).ndim())) : std::nullopt);
  }
  auto program = SpmdProgram::Build(global, *mesh, in, out);
  cache_.emplace(key, program);
  last_key_parts_ = std::move(parts);
  return program;
}

}  // namespace jx::spmd

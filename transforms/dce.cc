#include "jx/transforms/dce.h"

#include <utility>

#include "absl/container/flat_hash_map.h"
#include "jx/core/errors.h"
#include "jx/core/str_util.h"
#include "jx/transforms/jaxpr_util.h"

namespace jx {
namespace {

absl::flat_hash_map<Primitive, DceRule>& Rules() {
  static auto* rules = new absl::flat_hash_map<Primitive, DceRule>();
  return *rules;
}

bool JaxprHasEffect(const Jaxpr& j) {
  for (const Eqn& e : j.eqns) {
    if (HasEffect(e)) return true;
  }
  return false;
}

bool ParamHasEffect(const Param& p) {
  if (const auto* list = std::get_if<ParamList>(&p.value)) {
    for (const Param& q : *list) {
      if (ParamHasEffect(q)) return true;
    }
    return false;
  }
  if (const auto* obj = std::get_if<std::shared_ptr<const ParamObject>>(&p.value)) {
    const auto* sub = dynamic_cast<const JaxprParam*>(obj->get());
    return sub != nullptr && JaxprHasEffect(*sub->closed().jaxpr);
  }
  return false;
}

}  // namespace

bool HasEffect(const Eqn& e) {
  if (e.outputs.empty() || e.params.Has("effect")) return true;
  for (const auto& [name, p] : e.params) {
    if (ParamHasEffect(p)) return true;
  }
  return false;
}

void RegisterDceRule(Primitive p, DceRule rule) { Rules()[p] = std::move(rule); }

DceResult DceJaxpr(const Jaxpr& j, const std::vector<bool>& used_outputs, const std::vector<bool>& instantiate) {
  if (used_outputs.size() != j.outvars.size()) {
    throw InternalError(StrCat("dce_jaxpr: ", used_outputs.size(), " used_outputs flags for ", j.outvars.size(),
                               " outputs"));
  }
  if (instantiate.size() != j.invars.size()) {
    throw InternalError(StrCat("dce_jaxpr: ", instantiate.size(), " instantiate flags for ", j.invars.size(), " inputs"));
  }
  std::vector<bool> live(j.num_vars(), false);
  for (size_t k = 0; k < j.outvars.size(); ++k) {
    if (const Var* v = std::get_if<Var>(&j.outvars[k]); v != nullptr && used_outputs[k]) live[v->index] = true;
  }
  // Per equation, backwards: dropped (nullopt), kept as is, or its rule's rewrite.
  std::vector<std::optional<Eqn>> kept(j.eqns.size());
  const absl::flat_hash_map<Primitive, DceRule>& rules = Rules();
  for (size_t k = j.eqns.size(); k-- > 0;) {
    const Eqn& e = j.eqns[k];
    std::vector<bool> used(e.outputs.size());
    bool any_used = false;
    for (size_t o = 0; o < e.outputs.size(); ++o) any_used |= (used[o] = live[e.outputs[o].index]);
    if (auto rule = rules.find(e.primitive); rule != rules.end()) {
      DceRuleResult r = rule->second(used, e);
      if (r.used_inputs.size() != e.inputs.size()) {
        throw InternalError(StrCat("dce rule of ", e.primitive.name(), ": ", r.used_inputs.size(),
                                   " used_inputs flags for ", e.inputs.size(), " inputs"));
      }
      for (size_t i = 0; i < e.inputs.size(); ++i) {
        if (const Var* v = std::get_if<Var>(&e.inputs[i]); v != nullptr && r.used_inputs[i]) live[v->index] = true;
      }
      kept[k] = std::move(r.eqn);
      continue;
    }
    if (!any_used && !HasEffect(e)) continue;
    kept[k] = e;
    for (const Atom& a : e.inputs) {
      if (const Var* v = std::get_if<Var>(&a)) live[v->index] = true;
    }
  }
  DceResult r;
  r.jaxpr = std::make_shared<Jaxpr>(j);
  Jaxpr& out = *r.jaxpr;
  out.eqns.clear();
  for (std::optional<Eqn>& e : kept) {
    if (e) out.eqns.push_back(std::move(*e));
  }
  out.outvars.clear();
  for (size_t k = 0; k < j.outvars.size(); ++k) {
    if (used_outputs[k]) out.outvars.push_back(j.outvars[k]);
  }
  out.invars.clear();
  for (size_t k = 0; k < j.invars.size(); ++k) {
    const Var& v = j.invars[k];
    r.used_inputs.push_back(live[v.index]);
    if (instantiate[k] || live[v.index]) out.invars.push_back(v);
  }
  return r;
}

DceResult DceJaxpr(const Jaxpr& j, const std::vector<bool>& used_outputs, bool instantiate) {
  return DceJaxpr(j, used_outputs, std::vector<bool>(j.invars.size(), instantiate));
}

DceRuleResult DceClosedCall(const std::vector<bool>& used_outputs, const Eqn& eqn) {
  bool any_used = false;
  for (bool u : used_outputs) any_used |= u;
  if (!any_used && !HasEffect(eqn)) return {std::vector<bool>(eqn.inputs.size(), false), std::nullopt};
  const ClosedJaxpr& body = GetJaxpr(eqn.params, "jaxpr");
  DceResult pruned = DceJaxpr(*body.jaxpr, used_outputs);
  DceRuleResult r{std::move(pruned.used_inputs), std::nullopt};
  Eqn out{eqn.primitive, {}, {}, eqn.params};
  for (size_t i = 0; i < eqn.inputs.size(); ++i) {
    if (r.used_inputs[i]) out.inputs.push_back(eqn.inputs[i]);
  }
  for (size_t o = 0; o < eqn.outputs.size(); ++o) {
    if (used_outputs[o]) out.outputs.push_back(eqn.outputs[o]);
  }
  out.params.Set("jaxpr", JaxprParamOf(ClosedJaxpr{std::move(pruned.jaxpr), body.consts}));
  r.eqn = std::move(out);
  return r;
}

std::shared_ptr<Jaxpr> DceJaxpr(const Jaxpr& j) {
  return DceJaxpr(j, std::vector<bool>(j.outvars.size(), true), /*instantiate=*/true).jaxpr;
}

}  // namespace jx

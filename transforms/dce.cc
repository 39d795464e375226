#include "jx/transforms/dce.h"

#include "jx/core/errors.h"
#include "jx/core/str_util.h"

namespace jx {
namespace {

bool HasEffect(const Eqn& e) { return e.outputs.empty() || e.params.Has("effect"); }

}  // namespace

DceResult DceJaxpr(const Jaxpr& j, const std::vector<bool>& used_outputs, bool instantiate) {
  if (used_outputs.size() != j.outvars.size()) {
    throw InternalError(StrCat("dce_jaxpr: ", used_outputs.size(), " used_outputs flags for ", j.outvars.size(),
                               " outputs"));
  }
  std::vector<bool> live(j.num_vars(), false);
  for (size_t k = 0; k < j.outvars.size(); ++k) {
    if (const Var* v = std::get_if<Var>(&j.outvars[k]); v != nullptr && used_outputs[k]) live[v->index] = true;
  }
  std::vector<bool> keep(j.eqns.size(), false);
  for (size_t k = j.eqns.size(); k-- > 0;) {
    const Eqn& e = j.eqns[k];
    bool needed = HasEffect(e);
    for (const Var& v : e.outputs) needed = needed || live[v.index];
    if (!needed) continue;
    keep[k] = true;
    for (const Atom& a : e.inputs) {
      if (const Var* v = std::get_if<Var>(&a)) live[v->index] = true;
    }
  }
  DceResult r;
  r.jaxpr = std::make_shared<Jaxpr>(j);
  Jaxpr& out = *r.jaxpr;
  out.eqns.clear();
  for (size_t k = 0; k < keep.size(); ++k) {
    if (keep[k]) out.eqns.push_back(j.eqns[k]);
  }
  out.outvars.clear();
  for (size_t k = 0; k < j.outvars.size(); ++k) {
    if (used_outputs[k]) out.outvars.push_back(j.outvars[k]);
  }
  out.invars.clear();
  for (const Var& v : j.invars) {
    r.used_inputs.push_back(live[v.index]);
    if (instantiate || live[v.index]) out.invars.push_back(v);
  }
  return r;
}

std::shared_ptr<Jaxpr> DceJaxpr(const Jaxpr& j) {
  return DceJaxpr(j, std::vector<bool>(j.outvars.size(), true), /*instantiate=*/true).jaxpr;
}

}  // namespace jx

#include "jx/transforms/remat_partial_eval.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <string>

#include "absl/container/flat_hash_set.h"
#include "jx/core/interpreter.h"
#include "jx/core/registry.h"
#include "jx/transforms/dce.h"
#include "jx/transforms/staging.h"

namespace jx {
namespace {

thread_local const SaveablePolicy* g_policy = nullptr;

const Primitive kName = Primitive::Intern("name");
// Marks the residuals a higher-order equation's partial_eval rule passes from its known part
// to its staged part: they are saved whatever the policy says of the known equation.
constexpr const char* kSavedResidual = "jx_remat_residual";

bool IsSavedResidualMark(const Eqn& e) {
  if (!(e.primitive == kName)) return false;
  const Param* p = e.params.Find("name");
  return p != nullptr && std::holds_alternative<std::string>(p->value) && std::get<std::string>(p->value) == kSavedResidual;
}

// j re-traced with its partly known higher-order equations split by their partial_eval
// rules: (consts..., inputs...) -> outputs, the known part of each split staged as its own
// equation whose residuals are marked.
// Sets *retraced; without a rule-bearing equation j is returned as it is.
ClosedJaxpr SplitHigherOrder(const ClosedJaxpr& j, const std::vector<bool>& in_unknown, bool* retraced) {
  const Jaxpr& J = *j.jaxpr;
  bool any = false;
  for (const Eqn& e : J.eqns) {
    const PrimitiveRules* rules = GlobalRegistry().Find(e.primitive);
    any = any || (rules != nullptr && rules->partial_eval);
  }
  *retraced = any;
  if (!any) return j;
  std::vector<ShapedArray> avals = AvalsOf(j.consts);
  const std::vector<ShapedArray> ins = J.in_avals();
  avals.insert(avals.end(), ins.begin(), ins.end());
  const size_t nc = j.consts.size();
  return TraceToJaxpr(
      [&](absl::Span<const Array> a) {
        std::vector<Array> env(J.num_vars());
        std::vector<bool> unknown(J.num_vars(), false);
        for (size_t i = 0; i < nc; ++i) env[J.constvars[i].index] = a[i];
        for (size_t i = 0; i < J.invars.size(); ++i) {
          env[J.invars[i].index] = a[nc + i];
          unknown[J.invars[i].index] = in_unknown[i];
        }
        auto read = [&](const Atom& at) {
          if (const Var* v = std::get_if<Var>(&at)) return env[v->index];
          return std::get<Literal>(at).value;
        };
        for (const Eqn& e : J.eqns) {
          Arrays in;
          std::vector<bool> mask;
          bool some_known = false, some_unknown = false;
          for (const Atom& at : e.inputs) {
            in.push_back(read(at));
            const Var* v = std::get_if<Var>(&at);
            const bool u = v != nullptr && unknown[v->index];
            mask.push_back(u);
            (u ? some_unknown : some_known) = true;
          }
          const PrimitiveRules* rules = GlobalRegistry().Find(e.primitive);
          std::optional<PartialEvalSplit> split;
          if (some_known && some_unknown && rules != nullptr && rules->partial_eval) {
            split = rules->partial_eval(in, mask, e.params);
          }
          Arrays outs;
          std::vector<bool> out_unknown;
          if (split) {
            Arrays staged_in = split->staged_inputs;
            for (size_t i = 0; i < staged_in.size(); ++i) {
              // A staged input that is not one of the equation's unknown inputs is a residual.
              bool passed = false;
              for (size_t k = 0; k < in.size(); ++k) passed = passed || (mask[k] && in[k].impl() == staged_in[i].impl());
              if (!passed) staged_in[i] = Bind(kName, {staged_in[i]}, ParamMap{{"name", std::string(kSavedResidual)}})[0];
            }
            const Arrays staged = Bind(split->staged, staged_in, split->staged_params);
            outs = split->known_outs;
            out_unknown.assign(outs.size(), false);
            for (size_t s = 0, k = 0; s < staged.size(); ++s) {
              if (!split->unknown_from.empty()) {
                k = split->unknown_from[s];
              } else {
                while (outs[k].defined()) ++k;
              }
              outs[k] = staged[s];
              out_unknown[k] = true;
            }
          } else {
            outs = Bind(e.primitive, in, e.params);
            out_unknown.assign(outs.size(), some_unknown);
          }
          for (size_t k = 0; k < e.outputs.size(); ++k) {
            env[e.outputs[k].index] = outs[k];
            unknown[e.outputs[k].index] = out_unknown[k];
          }
        }
        Arrays result;
        for (const Atom& at : J.outvars) result.push_back(read(at));
        return result;
      },
      avals, "remat partial_eval");
}

}  // namespace

ScopedRematPolicy::ScopedRematPolicy(const SaveablePolicy* policy) : previous_(g_policy) { g_policy = policy; }
ScopedRematPolicy::~ScopedRematPolicy() { g_policy = previous_; }
const SaveablePolicy* CurrentRematPolicy() { return g_policy; }

PartialEvalResult PartialEvalJaxprCustom(const ClosedJaxpr& closed, const std::vector<bool>& in_unknown_args,
                                         const std::vector<bool>& force_out_unknown, const SaveablePolicy& saveable) {
  bool retraced = false;
  const ClosedJaxpr split = SplitHigherOrder(closed, in_unknown_args, &retraced);
  // J takes (consts..., inputs...): its own hoisted consts, then (re-traced) the original
  // consts, which the trace took as inputs; all are known.
  const Hoisted hoisted = HoistConsts(split);
  const Jaxpr& J = *hoisted.jaxpr.jaxpr;
  std::vector<Array> known_consts(hoisted.consts.begin(), hoisted.consts.end());
  if (retraced) known_consts.insert(known_consts.end(), closed.consts.begin(), closed.consts.end());
  std::vector<bool> unknown_in(known_consts.size(), false);
  unknown_in.insert(unknown_in.end(), in_unknown_args.begin(), in_unknown_args.end());
  std::vector<bool> known(J.num_vars(), false);
  for (size_t i = 0; i < J.invars.size(); ++i) known[J.invars[i].index] = !unknown_in[i];
  std::vector<bool> eqn_known(J.eqns.size(), false);
  std::vector<int64_t> producer(J.num_vars(), -1);
  for (size_t k = 0; k < J.eqns.size(); ++k) {
    const Eqn& e = J.eqns[k];
    bool all = true;
    for (const Atom& a : e.inputs) {
      if (const Var* v = std::get_if<Var>(&a)) all = all && known[v->index];
    }
    eqn_known[k] = all;
    for (const Var& v : e.outputs) {
      known[v.index] = all;
      producer[v.index] = static_cast<int64_t>(k);
    }
  }
  PartialEvalResult r;
  for (size_t k = 0; k < J.outvars.size(); ++k) {
    const Var* v = std::get_if<Var>(&J.outvars[k]);
    const bool forced = k < force_out_unknown.size() && force_out_unknown[k];
    r.out_unknown.push_back(forced || (v != nullptr && !known[v->index]));
  }
  // The known values the unknown side reads; each is a residual if it is an input or a
  // saveable equation's output, else its equation is recomputed on the unknown side.
  std::vector<bool> needed(J.num_vars(), false), residual(J.num_vars(), false);
  std::vector<bool> recompute(J.eqns.size(), false);
  std::vector<Var> work;
  auto need = [&](const Atom& a) {
    if (const Var* v = std::get_if<Var>(&a); v != nullptr && known[v->index] && !needed[v->index]) {
      needed[v->index] = true;
      work.push_back(*v);
    }
  };
  for (size_t k = 0; k < J.eqns.size(); ++k) {
    if (!eqn_known[k]) {
      for (const Atom& a : J.eqns[k].inputs) need(a);
    }
  }
  for (size_t k = 0; k < J.outvars.size(); ++k) {
    if (r.out_unknown[k]) need(J.outvars[k]);
  }
  std::vector<ShapedArray> in_avals;
  while (!work.empty()) {
    const Var v = work.back();
    work.pop_back();
    const int64_t p = producer[v.index];
    if (p < 0) {
      residual[v.index] = true;  // an input
      continue;
    }
    const Eqn& e = J.eqns[static_cast<size_t>(p)];
    in_avals.clear();
    for (const Atom& a : e.inputs) in_avals.push_back(J.aval(a));
    if (IsSavedResidualMark(e) || saveable(e.primitive, in_avals, e.params)) {
      residual[v.index] = true;
      continue;
    }
    recompute[static_cast<size_t>(p)] = true;
    for (const Atom& a : e.inputs) need(a);
  }
  std::vector<Var> residuals;
  for (uint32_t i = 0; i < J.num_vars(); ++i) {
    if (residual[i]) residuals.push_back(Var{i});
  }
  for (const Var& v : residuals) r.residual_avals.push_back(J.aval(v));
  // Known: the known equations, to the known outputs and the residuals.
  auto known_j = std::make_shared<Jaxpr>(J);
  known_j->eqns.clear();
  known_j->invars.clear();
  for (size_t i = 0; i < J.invars.size(); ++i) {
    if (!unknown_in[i]) known_j->invars.push_back(J.invars[i]);
  }
  for (size_t k = 0; k < J.eqns.size(); ++k) {
    if (eqn_known[k]) known_j->eqns.push_back(J.eqns[k]);
  }
  known_j->outvars.clear();
  for (size_t k = 0; k < J.outvars.size(); ++k) {
    if (!r.out_unknown[k]) known_j->outvars.push_back(J.outvars[k]);
  }
  known_j->outvars.insert(known_j->outvars.end(), residuals.begin(), residuals.end());
  r.known = Hoisted{ClosedJaxpr{DceJaxpr(*known_j), {}}, known_consts};
  // Unknown: (residuals..., unknown inputs...) -> unknown outputs.
  auto unknown_j = std::make_shared<Jaxpr>(J);
  unknown_j->eqns.clear();
  unknown_j->invars = residuals;
  for (size_t i = 0; i < J.invars.size(); ++i) {
    if (unknown_in[i]) unknown_j->invars.push_back(J.invars[i]);
  }
  for (size_t k = 0; k < J.eqns.size(); ++k) {
    if (!eqn_known[k] || recompute[k]) unknown_j->eqns.push_back(J.eqns[k]);
  }
  unknown_j->outvars.clear();
  for (size_t k = 0; k < J.outvars.size(); ++k) {
    if (r.out_unknown[k]) unknown_j->outvars.push_back(J.outvars[k]);
  }
  r.unknown = ClosedJaxpr{DceJaxpr(*unknown_j), {}};
  return r;
}

}  // namespace jx

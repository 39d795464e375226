#include "jx/sharding/spmd/propagation.h"

#include <algorithm>
#include <memory>

#include "absl/strings/str_join.h"
#include "jx/core/errors.h"
#include "jx/core/registry.h"
#include "jx/core/str_util.h"
#include "jx/sharding/spmd/regions.h"
#include "jx/sharding/spmd/sharding_constraint.h"

namespace jx::spmd {
namespace {

const DimShardings kReplicated;

std::string AxesText(const std::vector<std::string>& axes) {
  if (axes.empty()) return "None";
  if (axes.size() == 1) return StrCat("'", axes[0], "'");
  return StrCat("(", absl::StrJoin(axes, ", ", [](std::string* o, const std::string& a) { StrAppend(o, "'", a, "'"); }),
                ")");
}

int64_t AxesSize(const AbstractMesh& mesh, const std::vector<std::string>& axes) {
  int64_t n = 1;
  for (const std::string& a : axes) n *= mesh.axis_size(a);
  return n;
}

class Propagator {
 public:
  Propagator(const Jaxpr& jaxpr, const AbstractMesh& mesh) : jaxpr_(jaxpr), mesh_(mesh) {
    plan_.vars.resize(jaxpr.num_vars());
    fixed_.assign(jaxpr.num_vars(), false);
    plan_.eqn_factor_axes.resize(jaxpr.eqns.size());
    plan_.regions.resize(jaxpr.eqns.size());
    rules_.reserve(jaxpr.eqns.size());
    regions_.resize(jaxpr.eqns.size());
    subs_.resize(jaxpr.eqns.size());
    for (size_t i = 0; i < jaxpr.eqns.size(); ++i) {
      const Eqn& e = jaxpr.eqns[i];
      rules_.push_back(RuleOf(jaxpr, e));
      if (rules_.back()) continue;
      regions_[i] = RegionsOf(e);
      if (!regions_[i]) continue;
      for (const Region& r : regions_[i]->regions) subs_[i].push_back(std::make_unique<Propagator>(*r.body.jaxpr, mesh));
    }
    for (const Var& v : jaxpr_.constvars) fixed_[v.index] = true;
    // with_sharding_constraint's result is what the constraint says.
    for (const Eqn& e : jaxpr_.eqns) {
      if (e.primitive == ShardingConstraintPrimitive()) {
        const Var out = e.outputs[0];
        Fix(out, jaxpr_.aval(out).spec.empty() ? ConstraintSpec(e, jaxpr_.aval(out).ndim()) : jaxpr_.aval(out).spec,
            "with_sharding_constraint");
      }
    }
  }

  void Fix(Var v, const DimShardings& s, std::string_view what) {
    Validate(s, jaxpr_.aval(v), what);
    plan_.vars[v.index] = Normalized(s);
    fixed_[v.index] = true;
  }

  // Gives open value v sharding s (when s divides it); true when v changed.
  bool Offer(Var v, const DimShardings& s) {
    if (fixed_[v.index] || !plan_.vars[v.index].empty()) return false;
    DimShardings n = Normalized(s);
    if (n.empty() || !Divides(n, jaxpr_.aval(v))) return false;
    plan_.vars[v.index] = std::move(n);
    return true;
  }

  // Forward and backward sweeps until nothing changes; true when anything did.
  bool RunToFixedPoint() {
    bool any = false;
    for (size_t k = 0; k < jaxpr_.eqns.size() * 2 + 2; ++k) {
      bool changed = false;
      for (size_t i = 0; i < jaxpr_.eqns.size(); ++i) changed |= Visit(i, /*forward=*/true);
      for (size_t i = jaxpr_.eqns.size(); i-- > 0;) changed |= Visit(i, /*forward=*/false);
      any |= changed;
      if (!changed) break;
    }
    return any;
  }

  ShardingPlan Finish() {
    // Record each equation's final factor shardings (operands first: what the partitioner
    // computes with) and the equations that will need their operands gathered.
    for (size_t i = 0; i < jaxpr_.eqns.size(); ++i) {
      if (rules_[i]) {
        plan_.eqn_factor_axes[i] = FactorAxes(i, /*forward=*/true, nullptr);
      } else if (regions_[i]) {
        for (auto& sub : subs_[i]) {
          plan_.regions[i].push_back(sub->Finish());
          for (std::string& line : plan_.regions[i].back().notes) Note(std::move(line));
          plan_.regions[i].back().notes.clear();
        }
      } else {
        const Eqn& e = jaxpr_.eqns[i];
        for (const Atom& a : e.inputs) {
          if (const Var* v = std::get_if<Var>(&a); v != nullptr && !plan_.vars[v->index].empty()) {
            Note(StrCat(e.primitive.name(), ": no sharding rule; its operands are gathered to replicated"));
            break;
          }
        }
      }
    }
    return std::move(plan_);
  }

 private:
  static DimShardings Normalized(DimShardings s) {
    for (const auto& d : s) {
      if (!d.empty()) return s;
    }
    return {};
  }

  bool Divides(const DimShardings& s, const ShapedArray& aval) const {
    if (static_cast<int64_t>(s.size()) > aval.ndim()) return false;
    for (size_t d = 0; d < s.size(); ++d) {
      if (aval.shape[d] % AxesSize(mesh_, s[d]) != 0) return false;
    }
    return true;
  }

  DimShardings ConstraintSpec(const Eqn& e, int64_t rank) const {
    const auto& obj = e.params.GetObject("sharding");
    const auto* sp = dynamic_cast<const ShardingParam*>(obj.get());
    if (sp == nullptr) throw InternalError("sharding_constraint: sharding param has the wrong type");
    return sp->sharding().TypeSpec(rank);
  }

  void Validate(const DimShardings& s, const ShapedArray& aval, std::string_view what) const {
    if (static_cast<int64_t>(s.size()) > aval.ndim()) {
      throw ValueError(StrCat(what, ": sharding ", ShardingText(s, aval.ndim()), " has more entries than ", aval.str(),
                              " has dimensions"));
    }
    for (size_t d = 0; d < s.size(); ++d) {
      for (const std::string& a : s[d]) mesh_.axis_position(a);  // throws naming the mesh's axes
      const int64_t n = AxesSize(mesh_, s[d]);
      if (aval.shape[d] % n != 0) {
        throw ValueError(StrCat(what, ": sharding ", ShardingText(s, aval.ndim()), " implies that dimension ", d,
                                " of ", aval.str(), " (size ", aval.shape[d], ") is split into ", n,
                                " pieces, which does not divide it"));
      }
    }
  }

  const DimShardings* Of(const Atom& a) const {
    if (const Var* v = std::get_if<Var>(&a)) return &plan_.vars[v->index];
    return &kReplicated;
  }

  std::vector<std::vector<std::string>> FactorAxes(size_t i, bool forward, std::string* conflict) const {
    const Eqn& e = jaxpr_.eqns[i];
    const ShardingRule& rule = *rules_[i];
    std::vector<const DimShardings*> ins, outs;
    for (const Atom& a : e.inputs) ins.push_back(Of(a));
    for (const Var& v : e.outputs) outs.push_back(&plan_.vars[v.index]);
    std::vector<std::vector<std::string>> axes;
    if (forward) {
      axes = FactorShardings(rule, ins, outs, conflict);
    } else {
      ShardingRule swapped = rule;
      std::swap(swapped.operands, swapped.results);
      axes = FactorShardings(swapped, outs, ins, conflict);
    }
    for (int f = 0; f < rule.num_factors(); ++f) {
      if (rule.NeedsReplication(f) || rule.factor_sizes[f] % AxesSize(mesh_, axes[f]) != 0) axes[f].clear();
    }
    ClearInexpressibleFactorAxes(rule, axes, [this](const std::string& a) { return mesh_.axis_size(a); });
    return axes;
  }

  // Carries shardings across the boundaries of equation i's regions (operands into the body
  // inputs they feed, results into the body outputs that become them, a loop's carry round
  // the loop), settles each body, and carries its boundary back out; true when a value of
  // this jaxpr or a body changed.
  bool VisitRegions(size_t i) {
    const Eqn& e = jaxpr_.eqns[i];
    bool changed = false;
    for (size_t r = 0; r < regions_[i]->regions.size(); ++r) {
      const Region& region = regions_[i]->regions[r];
      Propagator& sub = *subs_[i][r];
      const Jaxpr& body = *region.body.jaxpr;
      auto body_out = [&](size_t m) { return std::get_if<Var>(&body.outvars[m]); };
      for (size_t j = 0; j < body.invars.size(); ++j) {
        const int k = region.invar_operand[j];
        if (k < 0) continue;
        const DimShardings& s = *Of(e.inputs[static_cast<size_t>(k)]);
        changed |= sub.Offer(body.invars[j], region.invar_stacked[j] ? SliceSharding(s) : s);
      }
      for (size_t m = 0; m < body.outvars.size(); ++m) {
        const int k = region.outvar_result[m];
        if (k < 0 || body_out(m) == nullptr) continue;
        const DimShardings& s = plan_.vars[e.outputs[static_cast<size_t>(k)].index];
        changed |= sub.Offer(*body_out(m), region.outvar_stacked[m] ? SliceSharding(s) : s);
      }
      for (size_t round = 0; round < body.eqns.size() + 2; ++round) {
        bool c = false;
        for (const auto& [m, j] : region.carried) {
          const Var* out = body_out(static_cast<size_t>(m));
          if (out == nullptr) continue;
          const Var in = body.invars[static_cast<size_t>(j)];
          c |= sub.Offer(in, sub.plan_.vars[out->index]);
          c |= sub.Offer(*out, sub.plan_.vars[in.index]);
        }
        c |= sub.RunToFixedPoint();
        changed |= c;
        if (!c) break;
      }
      for (size_t j = 0; j < body.invars.size(); ++j) {
        const int k = region.invar_operand[j];
        const Var* v = k < 0 ? nullptr : std::get_if<Var>(&e.inputs[static_cast<size_t>(k)]);
        if (v == nullptr) continue;
        const DimShardings& s = sub.plan_.vars[body.invars[j].index];
        changed |= Offer(*v, region.invar_stacked[j] ? StackedSharding(s) : s);
      }
      for (size_t m = 0; m < body.outvars.size(); ++m) {
        const int k = region.outvar_result[m];
        if (k < 0 || body_out(m) == nullptr) continue;
        const DimShardings& s = sub.plan_.vars[body_out(m)->index];
        changed |= Offer(e.outputs[static_cast<size_t>(k)], region.outvar_stacked[m] ? StackedSharding(s) : s);
      }
    }
    return changed;
  }

  // Fills the open values on the far side of equation i; true when one changed.
  bool Visit(size_t i, bool forward) {
    if (regions_[i]) return VisitRegions(i);
    if (!rules_[i]) return false;
    const Eqn& e = jaxpr_.eqns[i];
    const ShardingRule& rule = *rules_[i];
    std::string conflict;
    auto axes = FactorAxes(i, forward, &conflict);
    if (!conflict.empty()) Note(StrCat(e.primitive.name(), ": ", conflict, "; the first operand's choice is kept"));
    bool changed = false;
    auto fill = [&](Var v, const TensorFactors& factors) {
      if (fixed_[v.index] || !plan_.vars[v.index].empty()) return;
      DimShardings s = TensorSharding(factors, axes);
      if (s.empty()) return;
      plan_.vars[v.index] = std::move(s);
      changed = true;
    };
    if (forward) {
      for (size_t k = 0; k < e.outputs.size() && k < rule.results.size(); ++k) fill(e.outputs[k], rule.results[k]);
    } else {
      for (size_t k = 0; k < e.inputs.size() && k < rule.operands.size(); ++k) {
        if (const Var* v = std::get_if<Var>(&e.inputs[k])) fill(*v, rule.operands[k]);
      }
    }
    return changed;
  }

  void Note(std::string line) {
    if (std::find(plan_.notes.begin(), plan_.notes.end(), line) != plan_.notes.end()) return;
    SpmdLog(line);
    plan_.notes.push_back(std::move(line));
  }

  const Jaxpr& jaxpr_;
  const AbstractMesh& mesh_;
  ShardingPlan plan_;
  std::vector<bool> fixed_;
  std::vector<std::optional<ShardingRule>> rules_;
  std::vector<std::optional<Regions>> regions_;
  // Per equation with regions: one propagator per region's body.
  std::vector<std::vector<std::unique_ptr<Propagator>>> subs_;
};

}  // namespace

std::optional<ShardingRule> RuleOf(const Jaxpr& jaxpr, const Eqn& eqn) {
  const PrimitiveRules* rules = GlobalRegistry().Find(eqn.primitive);
  if (rules == nullptr || !rules->sharding_rule) return std::nullopt;
  std::vector<const ShapedArray*> in;
  for (const Atom& a : eqn.inputs) in.push_back(&jaxpr.aval(a));
  std::vector<ShapedArray> out;
  for (const Var& v : eqn.outputs) out.push_back(jaxpr.aval(v));
  return rules->sharding_rule(in, eqn.params, out);
}

ShardingPlan PropagateShardings(const Jaxpr& jaxpr, const AbstractMesh& mesh, absl::Span<const MaybeSharding> in,
                                absl::Span<const MaybeSharding> out) {
  Propagator p(jaxpr, mesh);
  for (size_t i = 0; i < jaxpr.invars.size(); ++i) {
    const ShapedArray& aval = jaxpr.aval(jaxpr.invars[i]);
    if (i < in.size() && in[i]) {
      p.Fix(jaxpr.invars[i], *in[i], StrCat("in_shardings of argument ", i));
    } else if (!aval.spec.empty()) {
      p.Fix(jaxpr.invars[i], aval.spec, StrCat("argument ", i));  // explicit sharding in the type
    }
  }
  for (size_t i = 0; i < out.size() && i < jaxpr.outvars.size(); ++i) {
    const Var* v = std::get_if<Var>(&jaxpr.outvars[i]);
    if (out[i] && v != nullptr) p.Fix(*v, *out[i], StrCat("out_shardings of result ", i));
  }
  p.RunToFixedPoint();
  return p.Finish();
}

std::string ShardingText(const DimShardings& s, int64_t rank) {
  std::vector<std::string> dims;
  for (int64_t d = 0; d < rank; ++d) dims.push_back(AxesText(d < static_cast<int64_t>(s.size()) ? s[d] : std::vector<std::string>{}));
  return StrCat("P(", absl::StrJoin(dims, ", "), ")");
}

}  // namespace jx::spmd

#include "jx/sharding/spmd/propagation.h"

#include <algorithm>

#include "absl/strings/str_join.h"
#include "jx/core/errors.h"
#include "jx/core/registry.h"
#include "jx/core/str_util.h"
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
    rules_.reserve(jaxpr.eqns.size());
    for (const Eqn& e : jaxpr.eqns) rules_.push_back(RuleOf(jaxpr, e));
  }

  void Fix(Var v, const DimShardings& s, std::string_view what) {
    Validate(s, jaxpr_.aval(v), what);
    plan_.vars[v.index] = Normalized(s);
    fixed_[v.index] = true;
  }

  ShardingPlan Run() {
    for (const Var& v : jaxpr_.constvars) fixed_[v.index] = true;
    // with_sharding_constraint's result is what the constraint says.
    for (const Eqn& e : jaxpr_.eqns) {
      if (e.primitive == ShardingConstraintPrimitive()) {
        const Var out = e.outputs[0];
        Fix(out, jaxpr_.aval(out).spec.empty() ? ConstraintSpec(e, jaxpr_.aval(out).ndim()) : jaxpr_.aval(out).spec,
            "with_sharding_constraint");
      }
    }
    for (size_t k = 0; k < jaxpr_.eqns.size() * 2 + 2; ++k) {
      bool changed = false;
      for (size_t i = 0; i < jaxpr_.eqns.size(); ++i) changed |= Visit(i, /*forward=*/true);
      for (size_t i = jaxpr_.eqns.size(); i-- > 0;) changed |= Visit(i, /*forward=*/false);
      if (!changed) break;
    }
    // Record each equation's final factor shardings (operands first: what the partitioner
    // computes with) and the equations that will need their operands gathered.
    for (size_t i = 0; i < jaxpr_.eqns.size(); ++i) {
      if (rules_[i]) {
        plan_.eqn_factor_axes[i] = FactorAxes(i, /*forward=*/true, nullptr);
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

  // Fills the open values on the far side of equation i; true when one changed.
  bool Visit(size_t i, bool forward) {
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
  return p.Run();
}

std::string ShardingText(const DimShardings& s, int64_t rank) {
  std::vector<std::string> dims;
  for (int64_t d = 0; d < rank; ++d) dims.push_back(AxesText(d < static_cast<int64_t>(s.size()) ? s[d] : std::vector<std::string>{}));
  return StrCat("P(", absl::StrJoin(dims, ", "), ")");
}

}  // namespace jx::spmd

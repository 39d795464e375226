#include "jx/sharding/spmd/propagation.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "absl/strings/str_join.h"
#include "jx/core/errors.h"
#include "jx/core/out_sharding.h"
#include "jx/core/registry.h"
#include "jx/core/str_util.h"
#include "jx/sharding/spmd/nested_shard_map.h"
#include "jx/sharding/spmd/partial_reductions.h"
#include "jx/sharding/spmd/regions.h"
#include "jx/sharding/spmd/reshard.h"
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

// An equation with an explicitly sharded operand (its results were typed by the rule).
bool HasTypedOperand(const Jaxpr& j, const Eqn& e) {
  for (const Atom& a : e.inputs) {
    if (!j.aval(a).spec.empty()) return true;
  }
  return false;
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
    shard_map_specs_.resize(jaxpr.eqns.size());
    for (size_t i = 0; i < jaxpr.eqns.size(); ++i) {
      const Eqn& e = jaxpr.eqns[i];
      rules_.push_back(RuleOf(jaxpr, e));
      if (rules_.back()) continue;
      if (IsShardMap(e)) {
        shard_map_specs_[i] = {ShardMapInShardings(jaxpr, e, mesh), ShardMapOutShardings(jaxpr, e, mesh)};
        continue;
      }
      regions_[i] = RegionsOf(e);
      if (!regions_[i]) continue;
      for (const Region& r : regions_[i]->regions) subs_[i].push_back(std::make_unique<Propagator>(*r.body.jaxpr, mesh));
    }
    for (const Var& v : jaxpr_.constvars) fixed_[v.index] = true;
    // with_sharding_constraint's result is what the constraint says; reshard's is its
    // destination (every axis, as its type has the explicit ones).
    for (const Eqn& e : jaxpr_.eqns) {
      if (e.primitive == ShardingConstraintPrimitive()) {
        const Var out = e.outputs[0];
        Fix(out, jaxpr_.aval(out).spec.empty() ? ConstraintSpec(e, jaxpr_.aval(out).ndim()) : jaxpr_.aval(out).spec,
            "with_sharding_constraint");
      } else if (e.primitive == ReshardPrimitive()) {
        const Var out = e.outputs[0];
        Fix(out, ReshardLayout(e.params, jaxpr_.aval(out).ndim()), "reshard");
      } else if (e.outputs.size() == 1 && OutShardingOf(e.params) != nullptr && HasTypedOperand(jaxpr_, e)) {
        // JAX's out_sharding= in explicit mode: the result is what its type says (replicated
        // when it names no axis: a sharded contraction's partial sums all-reduced, not left open).
        const Var out = e.outputs[0];
        Fix(out, jaxpr_.aval(out).spec, "out_sharding");
      }
    }
  }

  void Fix(Var v, const DimShardings& s, std::string_view what) {
    Validate(s, jaxpr_.aval(v), what);
    plan_.vars[v.index] = Normalized(s);
    fixed_[v.index] = true;
  }

  // Gives open value v sharding s, or refines v's sharding to s (Refines), when s divides it;
  // true when v changed.
  bool Offer(Var v, const DimShardings& s) {
    if (fixed_[v.index]) return false;
    DimShardings n = Normalized(s);
    DimShardings& current = plan_.vars[v.index];
    if (n.empty() || !Divides(n, jaxpr_.aval(v)) || (!current.empty() && !Refines(n, current))) return false;
    current = std::move(n);
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
        RecordConflicts(i);
      } else if (regions_[i]) {
        for (auto& sub : subs_[i]) {
          plan_.regions[i].push_back(sub->Finish());
          for (std::string& line : plan_.regions[i].back().notes) Note(std::move(line));
          plan_.regions[i].back().notes.clear();
          // A body's conflicts are the program's, named by the equation that holds the body.
          for (ShardingConflict& c : plan_.regions[i].back().conflicts) {
            c.equation = StrCat("in ", jaxpr_.eqns[i].primitive.name(), " (equation ", i, "): ", c.equation);
            plan_.conflicts.push_back(std::move(c));
          }
          plan_.regions[i].back().conflicts.clear();
        }
      } else if (!shard_map_specs_[i]) {
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
      // A reduction without a combining all-reduce keeps its reduced dims sharded when the
      // partitioner gathers its partial results (partial_reductions.h).
      const bool combined = rule.IsReduction(f) && CombinesPartialReductions(e.primitive);
      if ((rule.NeedsReplication(f) && !combined) || rule.factor_sizes[f] % AxesSize(mesh_, axes[f]) != 0) {
        axes[f].clear();
      }
    }
    ClearInexpressibleFactorAxes(rule, axes, [this](const std::string& a) { return mesh_.axis_size(a); });
    return axes;
  }

  // A shard_map's operands and results are what its in_specs and out_specs say.
  bool VisitShardMap(size_t i) {
    const Eqn& e = jaxpr_.eqns[i];
    const auto& [in, out] = *shard_map_specs_[i];
    bool changed = false;
    for (size_t k = 0; k < e.inputs.size() && k < in.size(); ++k) {
      if (const Var* v = std::get_if<Var>(&e.inputs[k])) changed |= Offer(*v, in[k]);
    }
    for (size_t k = 0; k < e.outputs.size() && k < out.size(); ++k) changed |= Offer(e.outputs[k], out[k]);
    return changed;
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
    if (shard_map_specs_[i]) return VisitShardMap(i);
    if (!rules_[i]) return false;
    const Eqn& e = jaxpr_.eqns[i];
    const ShardingRule& rule = *rules_[i];
    std::string conflict;
    auto axes = FactorAxes(i, forward, &conflict);
    if (!conflict.empty()) Note(StrCat(e.primitive.name(), ": ", conflict, "; the first operand's choice is kept"));
    bool changed = false;
    auto fill = [&](Var v, const TensorFactors& factors) { changed |= Offer(v, TensorSharding(factors, axes)); };
    if (forward) {
      for (size_t k = 0; k < e.outputs.size() && k < rule.results.size(); ++k) fill(e.outputs[k], rule.results[k]);
    } else {
      for (size_t k = 0; k < e.inputs.size() && k < rule.operands.size(); ++k) {
        if (const Var* v = std::get_if<Var>(&e.inputs[k])) fill(*v, rule.operands[k]);
      }
    }
    return changed;
  }

  // Whether s shards a value further than `current` does and agrees with it: each dimension's
  // axes start with the ones `current` gives it (GSPMD's merge of compatible shardings, Shardy's
  // further sharding of open dimensions). Propagation refines a value so: a weight gradient's
  // dot, which its operands leave sharded over the model axis only, gets the FSDP axis from the
  // parameter update that consumes it, and its partial sums over that axis are reduce-scattered
  // into the parameter's sharding instead of all-reduced to full size (as XLA's partitioner
  // does). Shardings only grow, so the sweeps still end.
  static bool Refines(const DimShardings& s, const DimShardings& current) {
    if (s.size() < current.size() || s == current) return false;
    for (size_t d = 0; d < current.size(); ++d) {
      if (current[d].size() > s[d].size() || !std::equal(current[d].begin(), current[d].end(), s[d].begin())) {
        return false;
      }
    }
    return true;
  }

  // The factor a sharded dimension's axes go to: its major factor of size > 1 (as
  // FactorShardings assigns them).
  int TargetFactor(const ShardingRule& rule, const DimFactors& fs) const {
    for (int f : fs) {
      if (rule.factor_sizes[f] > 1) return f;
    }
    return fs[0];
  }

  // Records equation i's conflicts from the final shardings (a value's sharding never changes
  // once set, so every conflict propagation met is still there): a factor sharded over
  // different axes by two tensors, and a mesh axis on two factors.
  void RecordConflicts(size_t i) {
    const Eqn& e = jaxpr_.eqns[i];
    const ShardingRule& rule = *rules_[i];
    std::vector<ConflictSide> sides;
    auto add = [&](std::string tensor, Var v, const TensorFactors& factors) {
      const DimShardings& s = plan_.vars[v.index];
      std::vector<int> dim_factors;
      for (const DimFactors& fs : factors) dim_factors.push_back(fs.empty() ? -1 : TargetFactor(rule, fs));
      for (size_t d = 0; d < factors.size() && d < s.size(); ++d) {
        if (s[d].empty() || factors[d].empty()) continue;
        sides.push_back({tensor, jaxpr_.aval(v), s, static_cast<int64_t>(d), dim_factors[d], dim_factors,
                         static_cast<bool>(fixed_[v.index])});
      }
    };
    for (size_t k = 0; k < e.inputs.size() && k < rule.operands.size(); ++k) {
      if (const Var* v = std::get_if<Var>(&e.inputs[k])) add(StrCat("operand ", k), *v, rule.operands[k]);
    }
    for (size_t k = 0; k < e.outputs.size() && k < rule.results.size(); ++k) {
      add(StrCat("result ", k), e.outputs[k], rule.results[k]);
    }
    if (sides.size() < 2) return;
    const auto& final_axes = plan_.eqn_factor_axes[i];
    auto axes_of = [&](size_t s) -> const std::vector<std::string>& { return sides[s].sharding[sides[s].dim]; };
    auto emit = [&](std::string what, std::vector<ConflictCandidate> candidates, std::vector<size_t> involved) {
      ShardingConflict c;
      c.eqn = i;
      c.equation = EqnText(e);
      c.what = std::move(what);
      // Keep only the involved sides, renumbering the candidates' references.
      std::vector<size_t> renumber(sides.size(), 0);
      for (size_t s : involved) {
        renumber[s] = c.sides.size();
        c.sides.push_back(sides[s]);
      }
      for (ConflictCandidate& cand : candidates) {
        for (size_t& s : cand.sides) s = renumber[s];
        if (!c.chosen && final_axes[cand.factor] == cand.axes) c.chosen = c.candidates.size();
        c.candidates.push_back(std::move(cand));
      }
      if (c.chosen) {
        const ConflictCandidate& won = c.candidates[*c.chosen];
        const ConflictSide& first = c.sides[won.sides[0]];
        c.why = StrCat(first.tensor, "'s ", AxesText(won.axes), " was met first",
                       first.fixed ? " and is given" : "",
                       "; propagation keeps the first choice (it uses no cost model) and the partitioner reshards "
                       "the other tensors");
      } else {
        c.why = "neither: the factor is left unsharded and every side is resharded to replicate it";
      }
      plan_.conflicts.push_back(std::move(c));
    };
    // A factor sharded over different axes.
    for (int f = 0; f < rule.num_factors(); ++f) {
      std::vector<ConflictCandidate> candidates;
      std::vector<size_t> involved;
      for (size_t s = 0; s < sides.size(); ++s) {
        if (sides[s].factor != f) continue;
        involved.push_back(s);
        auto it = std::find_if(candidates.begin(), candidates.end(),
                               [&](const ConflictCandidate& c) { return c.axes == axes_of(s); });
        if (it == candidates.end()) {
          candidates.push_back({f, axes_of(s), {s}});
        } else {
          it->sides.push_back(s);
        }
      }
      if (candidates.size() < 2) continue;
      std::vector<std::string> texts;
      for (const ConflictCandidate& c : candidates) texts.push_back(AxesText(c.axes));
      emit(StrCat("dimension of size ", rule.factor_sizes[f], " sharded as ", absl::StrJoin(texts, " and as ")),
           std::move(candidates), std::move(involved));
    }
    // One mesh axis on two factors: each factor's candidate is its first side's axes, wanted by
    // every side that shards the factor so.
    auto factor_candidate = [&](size_t first) {
      ConflictCandidate c{sides[first].factor, axes_of(first), {}};
      for (size_t s = 0; s < sides.size(); ++s) {
        if (sides[s].factor == c.factor && axes_of(s) == c.axes) c.sides.push_back(s);
      }
      return c;
    };
    std::vector<std::pair<int, int>> reported;
    for (size_t a = 0; a < sides.size(); ++a) {
      for (size_t b = a + 1; b < sides.size(); ++b) {
        const int fa = sides[a].factor, fb = sides[b].factor;
        if (fa == fb) continue;
        const auto& axa = axes_of(a);
        const auto& axb = axes_of(b);
        auto shared = std::find_first_of(axa.begin(), axa.end(), axb.begin(), axb.end());
        if (shared == axa.end()) continue;
        const std::pair<int, int> key(std::min(fa, fb), std::max(fa, fb));
        if (std::find(reported.begin(), reported.end(), key) != reported.end()) continue;
        reported.push_back(key);
        ConflictCandidate ca = factor_candidate(a), cb = factor_candidate(b);
        std::vector<size_t> involved = ca.sides;
        involved.insert(involved.end(), cb.sides.begin(), cb.sides.end());
        std::sort(involved.begin(), involved.end());
        emit(StrCat("mesh axis '", *shared, "' shards dimension ", sides[a].dim, " of ", sides[a].tensor,
                    " and dimension ", sides[b].dim, " of ", sides[b].tensor, ", which are different factors"),
             {std::move(ca), std::move(cb)}, std::move(involved));
      }
    }
  }

  std::string EqnText(const Eqn& e) const {
    std::vector<std::string> ins, outs;
    for (const Atom& a : e.inputs) ins.push_back(jaxpr_.aval(a).str());
    for (const Var& v : e.outputs) outs.push_back(jaxpr_.aval(v).str());
    return StrCat(e.primitive.name(), " ", absl::StrJoin(ins, ", "), " -> ", absl::StrJoin(outs, ", "));
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
  // Per shard_map equation: its operands' and results' shardings (in_specs, out_specs).
  std::vector<std::optional<std::pair<std::vector<DimShardings>, std::vector<DimShardings>>>> shard_map_specs_;
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

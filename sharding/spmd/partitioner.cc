#include "jx/sharding/spmd/partitioner.h"

#include <algorithm>
#include <optional>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "jx/core/errors.h"
#include "jx/core/interpreter.h"
#include "jx/core/str_util.h"
#include "jx/lax/control_flow.h"
#include "jx/lax/dot_general.h"
#include "jx/lax/lax.h"
#include "jx/lax/numpy/numpy.h"
#include "jx/lax/primitives.h"
#include "jx/sharding/collectives.h"
#include "jx/sharding/spmd/collective_matmul.h"
#include "jx/sharding/spmd/regions.h"
#include "jx/sharding/spmd/sharding_constraint.h"

namespace jx::spmd {
namespace {

namespace jnp = jx::numpy;
using Axes = std::vector<std::string>;

int64_t AxesSize(const Mesh& mesh, const Axes& axes) {
  int64_t n = 1;
  for (const std::string& a : axes) n *= mesh.axis_size(a);
  return n;
}

DimShardings Padded(const DimShardings& s, int64_t rank) {
  DimShardings out = s;
  out.resize(static_cast<size_t>(rank));
  return out;
}

bool IsPrefix(const Axes& a, const Axes& b) {
  return a.size() <= b.size() && std::equal(a.begin(), a.end(), b.begin());
}

std::string AxesText(const Axes& axes) {
  if (axes.size() == 1) return StrCat("'", axes[0], "'");
  return StrCat("(", absl::StrJoin(axes, ", ", [](std::string* o, const std::string& a) { StrAppend(o, "'", a, "'"); }),
                ")");
}

std::string Seconds(double s) { return absl::StrFormat("%.3g s", s); }

// A per-device value and the sharding it has.
struct Local {
  Array value;
  DimShardings sharding;
};

class Partitioner {
 public:
  Partitioner(const ClosedJaxpr& closed, const ShardingPlan& plan, const Mesh& mesh, const SpmdCostModel& cost,
              std::vector<std::string>* log, std::vector<DotDecision>* decisions)
      : jaxpr_(*closed.jaxpr), closed_(closed), plan_(plan), mesh_(mesh), cost_(cost), log_(log),
        decisions_(decisions), collective_matmul_(CollectiveMatmulModeFromEnv()) {
    env_.resize(jaxpr_.num_vars());
  }

  Arrays Run(absl::Span<const Array> args) {
    std::vector<Local> locals;
    for (size_t i = 0; i < jaxpr_.invars.size(); ++i) locals.push_back(Local{args[i], plan_.sharding(jaxpr_.invars[i])});
    Arrays outs;
    for (Local& l : RunRegion(locals, {})) outs.push_back(std::move(l.value));
    return outs;
  }

  // Runs the jaxpr on per-device arguments with the shardings they have; each output comes
  // back resharded to want[k] when given (else to its planned sharding).
  std::vector<Local> RunRegion(const std::vector<Local>& args, const std::vector<std::optional<DimShardings>>& want) {
    for (size_t i = 0; i < jaxpr_.constvars.size(); ++i) env_[jaxpr_.constvars[i].index] = Local{closed_.consts[i], {}};
    for (size_t i = 0; i < jaxpr_.invars.size(); ++i) env_[jaxpr_.invars[i].index] = args[i];
    for (size_t i = 0; i < jaxpr_.eqns.size(); ++i) Visit(i);
    std::vector<Local> outs;
    for (size_t k = 0; k < jaxpr_.outvars.size(); ++k) {
      const Atom& a = jaxpr_.outvars[k];
      const Local l = Get(a);
      DimShardings to;
      if (k < want.size() && want[k]) {
        to = *want[k];
      } else if (const Var* v = std::get_if<Var>(&a)) {
        to = plan_.sharding(*v);
      }
      outs.push_back(Local{Reshard(l.value, jaxpr_.aval(a), l.sharding, to, mesh_), to});
    }
    return outs;
  }

 private:
  void Log(std::string line) {
    SpmdLog(line);
    if (log_ != nullptr) log_->push_back(std::move(line));
  }

  Local Get(const Atom& a) const {
    if (const Var* v = std::get_if<Var>(&a)) return env_[v->index];
    return Local{std::get<Literal>(a).value, {}};
  }

  Array Operand(const Eqn& e, size_t k, const DimShardings& want) {
    const Local l = Get(e.inputs[k]);
    return Reshard(l.value, jaxpr_.aval(e.inputs[k]), l.sharding, want, mesh_);
  }

  void Visit(size_t i) {
    const Eqn& e = jaxpr_.eqns[i];
    if (e.primitive == ShardingConstraintPrimitive()) {
      const Var out = e.outputs[0];
      env_[out.index] = Local{Operand(e, 0, plan_.sharding(out)), plan_.sharding(out)};
      return;
    }
    std::optional<ShardingRule> rule = RuleOf(jaxpr_, e);
    if (!rule) {
      if (std::optional<Regions> regions = RegionsOf(e)) return VisitRegions(i, *regions);
      return VisitReplicated(e);
    }
    std::vector<Axes> factors = plan_.eqn_factor_axes[i];
    DotPlan dot;
    if (e.primitive == lax::kDotGeneral) dot = PlanDot(e, *rule, factors);
    // Operands resharded to what the factors ask (a collective matmul's looped operands stay
    // sharded: the loop moves them).
    Arrays ins;
    for (size_t k = 0; k < e.inputs.size(); ++k) {
      if (dot.gather && dot.gather->looped[k]) {
        ins.push_back(Get(e.inputs[k]).value);
      } else {
        ins.push_back(k < rule->operands.size() ? Operand(e, k, TensorSharding(rule->operands[k], factors))
                                                : Operand(e, k, {}));
      }
    }
    std::vector<DimShardings> out_shardings;
    for (size_t k = 0; k < e.outputs.size(); ++k) out_shardings.push_back(TensorSharding(rule->results[k], factors));
    const ParamMap params = LocalParams(e, out_shardings);
    auto local_dot = [&](const Array& lhs, const Array& rhs) { return Bind(e.primitive, {lhs, rhs}, params)[0]; };
    // Partial results over sharded reduction factors.
    Axes partial;
    for (int f = 0; f < rule->num_factors(); ++f) {
      if (rule->IsReduction(f)) partial.insert(partial.end(), factors[f].begin(), factors[f].end());
    }
    Arrays outs;
    if (dot.gather) {
      const ShapedArray& out = jaxpr_.aval(e.outputs[0]);
      outs = {AllGatherMatmul(*dot.gather, ins, local_dot, LocalShape(out.shape, out_shardings[0], mesh_), out.dtype)};
    } else if (dot.scatter) {
      // The loop leaves each device its block of the sum over the scattered axis.
      outs = {ReduceScatterMatmul(*dot.scatter, ins, local_dot)};
      out_shardings[0] = Padded(out_shardings[0], jaxpr_.aval(e.outputs[0]).ndim());
      out_shardings[0][dot.scatter->result_dim].push_back(dot.scatter->axis);
      partial.erase(std::remove(partial.begin(), partial.end(), dot.scatter->axis), partial.end());
    } else {
      outs = Bind(e.primitive, ins, params);
    }
    for (size_t k = 0; k < e.outputs.size(); ++k) {
      const Var out = e.outputs[k];
      Local l{outs[k], out_shardings[k]};
      if (!partial.empty()) l = Combine(e, l, partial, rule->combiner, plan_.sharding(out), jaxpr_.aval(out).ndim());
      env_[out.index] = std::move(l);
    }
  }

  // A region's body partitioned as its plan says, on per-device arguments with the given
  // shardings; outputs resharded to want (per output, when given).
  std::vector<Local> RunBody(const Region& region, const ShardingPlan& plan, const std::vector<Local>& args,
                             const std::vector<std::optional<DimShardings>>& want) const {
    Partitioner body(region.body, plan, mesh_, cost_, log_, decisions_);
    return body.RunRegion(args, want);
  }

  static Arrays Values(const std::vector<Local>& ls) {
    Arrays out;
    for (const Local& l : ls) out.push_back(l.value);
    return out;
  }

  // Control flow and inner calls (regions.h): the loop or branch primitive is bound again on
  // per-device values with each body partitioned by its own plan. Operands enter resharded
  // to the body's planned input shardings (a scan's xs with the scanned dim whole), a loop's
  // carry keeps the body input's sharding on every iteration, and a call is inlined.
  void VisitRegions(size_t i, const Regions& regions) {
    const Eqn& e = jaxpr_.eqns[i];
    const std::vector<ShardingPlan>& plans = plan_.regions[i];
    // Operand k resharded to what body input j of region r is planned to be.
    auto enter = [&](const Region& r, const ShardingPlan& plan, size_t j) {
      const size_t k = static_cast<size_t>(r.invar_operand[j]);
      const DimShardings& in = plan.sharding(r.body.jaxpr->invars[j]);
      const DimShardings s = r.invar_stacked[j] ? StackedSharding(in) : in;
      return Local{Operand(e, k, s), s};
    };
    auto planned_out = [](const Region& r, const ShardingPlan& plan, size_t m) -> DimShardings {
      const Var* v = std::get_if<Var>(&r.body.jaxpr->outvars[m]);
      return v == nullptr ? DimShardings{} : plan.sharding(*v);
    };
    switch (regions.kind) {
      case Regions::Kind::kCall: {
        std::vector<Local> args;
        for (const Atom& a : e.inputs) args.push_back(Get(a));
        std::vector<Local> outs = RunBody(regions.regions[0], plans[0], args, {});
        for (size_t k = 0; k < e.outputs.size(); ++k) env_[e.outputs[k].index] = outs[k];
        return;
      }
      case Regions::Kind::kScan: {
        const Region& r = regions.regions[0];
        const ShardingPlan& plan = plans[0];
        const size_t nc = static_cast<size_t>(e.params.GetInt("num_consts"));
        const size_t ncarry = static_cast<size_t>(e.params.GetInt("num_carry"));
        const size_t nx = e.inputs.size() - nc - ncarry;
        std::vector<Local> consts, init, xs;
        for (size_t j = 0; j < nc; ++j) consts.push_back(enter(r, plan, j));
        for (size_t j = nc; j < nc + ncarry; ++j) init.push_back(enter(r, plan, j));
        for (size_t j = nc + ncarry; j < e.inputs.size(); ++j) xs.push_back(enter(r, plan, j));
        std::vector<std::optional<DimShardings>> want(r.body.jaxpr->outvars.size());
        for (size_t k = 0; k < ncarry; ++k) want[k] = init[k].sharding;
        auto body = [&](absl::Span<const Array> leaves) {
          std::vector<Local> args = consts;
          for (size_t k = 0; k < ncarry; ++k) args.push_back(Local{leaves[k], init[k].sharding});
          for (size_t k = 0; k < nx; ++k) args.push_back(Local{leaves[ncarry + k], SliceSharding(xs[k].sharding)});
          return Values(RunBody(r, plan, args, want));
        };
        Arrays outs = lax::scan_flat(body, Values(init), Values(xs), e.params.GetInt("length"),
                                     e.params.GetBool("reverse"), e.params.GetInt("unroll"));
        for (size_t k = 0; k < e.outputs.size(); ++k) {
          const DimShardings s = k < ncarry ? init[k].sharding : StackedSharding(planned_out(r, plan, k));
          env_[e.outputs[k].index] = Local{outs[k], s};
        }
        return;
      }
      case Regions::Kind::kWhile: {
        const Region &cr = regions.regions[0], &br = regions.regions[1];
        const size_t cc = static_cast<size_t>(e.params.GetInt("cond_nconsts"));
        const size_t bc = static_cast<size_t>(e.params.GetInt("body_nconsts"));
        std::vector<Local> cond_consts, body_consts, init;
        for (size_t j = 0; j < cc; ++j) cond_consts.push_back(enter(cr, plans[0], j));
        for (size_t j = 0; j < bc; ++j) body_consts.push_back(enter(br, plans[1], j));
        for (size_t j = bc; j < br.body.jaxpr->invars.size(); ++j) init.push_back(enter(br, plans[1], j));
        std::vector<std::optional<DimShardings>> want;
        for (const Local& l : init) want.push_back(l.sharding);
        auto with_carry = [&](std::vector<Local> args, absl::Span<const Array> carry) {
          for (size_t k = 0; k < carry.size(); ++k) args.push_back(Local{carry[k], init[k].sharding});
          return args;
        };
        auto cond_fn = [&](absl::Span<const Array> carry) {
          return Values(RunBody(cr, plans[0], with_carry(cond_consts, carry),
                                std::vector<std::optional<DimShardings>>{DimShardings{}}));
        };
        auto body_fn = [&](absl::Span<const Array> carry) {
          return Values(RunBody(br, plans[1], with_carry(body_consts, carry), want));
        };
        Arrays outs = lax::while_loop_flat(cond_fn, body_fn, Values(init));
        for (size_t k = 0; k < e.outputs.size(); ++k) env_[e.outputs[k].index] = Local{outs[k], init[k].sharding};
        return;
      }
      case Regions::Kind::kCond: {
        // Every branch takes the operands as the first branch's plan has them and returns its
        // results as the equation's plan has them.
        const Array index = Operand(e, 0, {});
        std::vector<Local> operands;
        for (size_t j = 0; j < regions.regions[0].body.jaxpr->invars.size(); ++j) {
          operands.push_back(enter(regions.regions[0], plans[0], j));
        }
        std::vector<std::optional<DimShardings>> want;
        for (const Var& v : e.outputs) want.push_back(plan_.sharding(v));
        std::vector<ArraysFn> branches;
        for (size_t b = 0; b < regions.regions.size(); ++b) {
          branches.push_back([&, b](absl::Span<const Array> leaves) {
            std::vector<Local> args;
            for (size_t k = 0; k < leaves.size(); ++k) args.push_back(Local{leaves[k], operands[k].sharding});
            return Values(RunBody(regions.regions[b], plans[b], args, want));
          });
        }
        Arrays outs = lax::cond_flat(index, branches, Values(operands));
        for (size_t k = 0; k < e.outputs.size(); ++k) env_[e.outputs[k].index] = Local{outs[k], *want[k]};
        return;
      }
    }
  }

  // An equation without a sharding rule runs on whole (replicated) operands.
  void VisitReplicated(const Eqn& e) {
    Arrays ins;
    bool gathered = false;
    for (size_t k = 0; k < e.inputs.size(); ++k) {
      gathered |= !Get(e.inputs[k]).sharding.empty();
      ins.push_back(Operand(e, k, {}));
    }
    if (gathered) Log(StrCat(e.primitive.name(), ": no sharding rule; operands all-gathered to replicated"));
    Arrays outs = Bind(e.primitive, ins, e.params);
    for (size_t k = 0; k < e.outputs.size(); ++k) env_[e.outputs[k].index] = Local{outs[k], {}};
  }

  // The params of e for local shapes: the ops whose params spell their result's shape.
  ParamMap LocalParams(const Eqn& e, const std::vector<DimShardings>& out_shardings) const {
    ParamMap p = e.params;
    if (e.primitive == lax::kReshape) {
      p.Set("new_sizes", LocalShape(jaxpr_.aval(e.outputs[0]).shape, out_shardings[0], mesh_));
    } else if (e.primitive == lax::kBroadcastInDim) {
      p.Set("shape", LocalShape(jaxpr_.aval(e.outputs[0]).shape, out_shardings[0], mesh_));
    }
    return p;
  }

  // Partial sums over `axes` combined: reduce-scatter onto a dim the result is wanted sharded
  // on (the next axes that dim wants), all-reduce for the rest.
  Local Combine(const Eqn& e, Local l, const Axes& axes, ShardingRule::Combiner combiner, const DimShardings& want,
                int64_t rank) {
    if (combiner == ShardingRule::Combiner::kMax) return Local{lax::pmax(l.value, AxisNames(axes)), l.sharding};
    if (combiner == ShardingRule::Combiner::kMin) return Local{lax::pmin(l.value, AxisNames(axes)), l.sharding};
    DimShardings cur = Padded(l.sharding, rank);
    const DimShardings target = Padded(want, rank);
    Axes rest;
    for (const std::string& a : axes) {
      bool scattered = false;
      for (int64_t d = 0; d < rank && !scattered; ++d) {
        if (IsPrefix(cur[d], target[d]) && cur[d].size() < target[d].size() && target[d][cur[d].size()] == a) {
          l.value = lax::psum_scatter(l.value, AxisNames(Axes{a}), d, /*tiled=*/true);
          cur[d].push_back(a);
          scattered = true;
          Log(StrCat(e.primitive.name(), ": partial sums over '", a, "' reduce-scattered onto dim ", d));
        }
      }
      if (!scattered) rest.push_back(a);
    }
    if (!rest.empty()) {
      l.value = lax::psum(l.value, AxisNames(rest));
      Log(StrCat(e.primitive.name(), ": partial sums over ", AxesText(rest), " all-reduced"));
    }
    l.sharding = cur;
    for (const auto& d : l.sharding) {
      if (!d.empty()) return l;
    }
    l.sharding.clear();
    return l;
  }

  // How Visit computes a dot_general beyond its factors: a collective matmul's loop, if any.
  struct DotPlan {
    std::optional<GatherLoop> gather;
    std::optional<ScatterLoop> scatter;
  };

  // One way to compute a dot: the factors' axes it computes with, its loop and its cost.
  struct Strategy {
    std::string label;  // "all-gather first", "multiply then all-reduce", "collective matmul"
    DotCandidate candidate;
    std::vector<Axes> factors;
    DotPlan plan;
    std::optional<CollectiveMatmulCost> loop_cost;  // set for a collective matmul
  };

  double LocalDotSeconds(const ShardingRule& rule, const std::vector<Axes>& factors) const {
    double flops = 2;
    for (int g = 0; g < rule.num_factors(); ++g) {
      flops *= static_cast<double>(rule.factor_sizes[g]) / static_cast<double>(AxesSize(mesh_, factors[g]));
    }
    return cost_.DotSeconds(flops);
  }

  // Seconds of resharding the operands to what `factors` asks (but the `skip`ped ones).
  double OperandReshardSeconds(const Eqn& e, const ShardingRule& rule, const std::vector<Axes>& factors,
                               const std::vector<bool>& skip = {}) const {
    double s = 0;
    for (size_t k = 0; k < e.inputs.size() && k < rule.operands.size(); ++k) {
      if (k < skip.size() && skip[k]) continue;
      s += ReshardSeconds(jaxpr_.aval(e.inputs[k]), Get(e.inputs[k]).sharding, TensorSharding(rule.operands[k], factors),
                          mesh_, cost_);
    }
    return s;
  }

  // The operands ("lhs", "rhs", "lhs+rhs") that need communication to reach what `factors` asks.
  std::string MovedOperands(const Eqn& e, const ShardingRule& rule, const std::vector<Axes>& factors) const {
    std::vector<std::string> names;
    for (size_t k = 0; k < e.inputs.size() && k < rule.operands.size(); ++k) {
      const int64_t rank = jaxpr_.aval(e.inputs[k]).ndim();
      for (const ReshardStep& step :
           ReshardSteps(rank, Get(e.inputs[k]).sharding, TensorSharding(rule.operands[k], factors))) {
        if (step.kind == ReshardStep::kSlice) continue;
        names.push_back(k == 0 ? "lhs" : "rhs");
        break;
      }
    }
    return names.empty() ? "nothing" : absl::StrJoin(names, "+");
  }

  // The dimension of a tensor whose only factor is f (-1: the tensor lacks f); nullopt when f
  // shares a dimension with other factors (no loop then).
  static std::optional<int64_t> FactorDim(const TensorFactors& t, int f) {
    for (size_t d = 0; d < t.size(); ++d) {
      if (std::find(t[d].begin(), t[d].end(), f) == t[d].end()) continue;
      if (t[d].size() != 1) return std::nullopt;
      return static_cast<int64_t>(d);
    }
    return -1;
  }

  // Gathering contracting factor f frees its axes; a factor that a tensor of the dot holds
  // sharded on one of them right after its own axes (an operand as it is, the result as
  // wanted) takes it, so gathering one operand does not replicate another: the scaling book's
  // A[B_X, D_Y] x W[D, F_Y] -> Out[B_X, F_Y] gathers A over Y and keeps F on Y.
  std::vector<Axes> GatherFirstFactors(const Eqn& e, const ShardingRule& rule, const std::vector<Axes>& factors,
                                       int f) const {
    std::vector<Axes> out = factors;
    out[f].clear();
    std::vector<std::pair<const TensorFactors*, DimShardings>> tensors;
    for (size_t k = 0; k < e.inputs.size() && k < rule.operands.size(); ++k) {
      tensors.emplace_back(&rule.operands[k], Padded(Get(e.inputs[k]).sharding, jaxpr_.aval(e.inputs[k]).ndim()));
    }
    tensors.emplace_back(&rule.results[0], Padded(plan_.sharding(e.outputs[0]), jaxpr_.aval(e.outputs[0]).ndim()));
    for (const std::string& a : factors[f]) {
      bool placed = false;
      for (const auto& [tf, sh] : tensors) {
        for (size_t d = 0; d < tf->size() && !placed; ++d) {
          if ((*tf)[d].size() != 1) continue;
          const int g = (*tf)[d][0];
          if (g == f || rule.IsReduction(g) || rule.NeedsReplication(g)) continue;
          if (sh[d].size() != out[g].size() + 1 || !IsPrefix(out[g], sh[d]) || sh[d].back() != a) continue;
          if (rule.factor_sizes[g] % (AxesSize(mesh_, out[g]) * mesh_.axis_size(a)) != 0) continue;
          out[g].push_back(a);
          placed = true;
        }
        if (placed) break;
      }
    }
    return out;
  }

  // The all-gather loop for `factors`: every operand that needs communication to reach what
  // the factors ask gathers exactly one more axis (the same for all) off the dim of one
  // factor, so it can travel round that axis' ring instead.
  std::optional<Strategy> GatherLoopStrategy(const Eqn& e, const ShardingRule& rule,
                                             const std::vector<Axes>& factors) const {
    if (e.inputs.size() != 2 || rule.operands.size() != 2 || rule.results.size() != 1) return std::nullopt;
    int f = -1;
    std::string axis;
    GatherLoop loop;
    loop.looped.assign(2, false);
    std::vector<int64_t> local_bytes(2, 0);
    for (size_t k = 0; k < 2; ++k) {
      const ShapedArray& aval = jaxpr_.aval(e.inputs[k]);
      const DimShardings cur = Padded(Get(e.inputs[k]).sharding, aval.ndim());
      const DimShardings want = Padded(TensorSharding(rule.operands[k], factors), aval.ndim());
      if (cur == want) continue;
      int64_t dim = -1;
      for (int64_t d = 0; d < aval.ndim(); ++d) {
        if (cur[d] == want[d]) continue;
        if (dim >= 0) return std::nullopt;
        dim = d;
      }
      if (cur[dim].size() != want[dim].size() + 1 || !IsPrefix(want[dim], cur[dim])) return std::nullopt;
      if (rule.operands[k][dim].size() != 1) return std::nullopt;
      const int fk = rule.operands[k][dim][0];
      if (f >= 0 && (fk != f || cur[dim].back() != axis)) return std::nullopt;
      f = fk;
      axis = cur[dim].back();
      loop.looped[k] = true;
      local_bytes[k] = NumElements(LocalShape(aval.shape, cur, mesh_)) * ItemSize(aval.dtype);
    }
    if (f < 0 || mesh_.axis_size(axis) < 2) return std::nullopt;
    loop.axis = axis;
    loop.steps = mesh_.axis_size(axis);
    for (size_t k = 0; k < 2; ++k) {
      const std::optional<int64_t> d = FactorDim(rule.operands[k], f);
      if (!d) return std::nullopt;
      loop.dims.push_back(*d);
    }
    const std::optional<int64_t> r = FactorDim(rule.results[0], f);
    if (!r) return std::nullopt;
    loop.result_dim = *r;
    CollectiveMatmulCost c;
    c.steps = loop.steps;
    c.compute_seconds = LocalDotSeconds(rule, factors);
    std::vector<std::string> names;
    for (size_t k = 0; k < 2; ++k) {
      if (!loop.looped[k]) continue;
      names.push_back(k == 0 ? "lhs" : "rhs");
      c.one_shot_seconds +=
          cost_.CollectiveSeconds(ici::CollectiveKind::kAllGather, {axis}, local_bytes[k] * loop.steps);
      c.loop_permute_seconds +=
          static_cast<double>(loop.steps - 1) * cost_.RingShiftSeconds(axis, -1, local_bytes[k]);
    }
    const double rest = OperandReshardSeconds(e, rule, factors, loop.looped);
    std::string name =
        StrCat("collective matmul: ", loop.steps, " steps of ", absl::StrJoin(names, "+"), " ppermuted over '", axis,
               loop.result_dim < 0 ? "', partial products summed" : "', result blocks written in place");
    DotPlan plan;
    plan.gather = std::move(loop);
    return LoopStrategy(std::move(name), factors, std::move(plan), c, rest);
  }

  // The reduce-scatter loop for `factors`: the partial products over a single axis would be
  // reduce-scattered onto a result dimension (Combine's choice), so the partial result can
  // travel round that axis' ring instead, one block added per step.
  std::optional<Strategy> ScatterLoopStrategy(const Eqn& e, const ShardingRule& rule,
                                              const std::vector<Axes>& factors) const {
    if (e.inputs.size() != 2 || rule.results.size() != 1 || rule.combiner != ShardingRule::Combiner::kSum) {
      return std::nullopt;
    }
    Axes partial;
    for (int f = 0; f < rule.num_factors(); ++f) {
      if (rule.IsReduction(f)) partial.insert(partial.end(), factors[f].begin(), factors[f].end());
    }
    if (partial.size() != 1 || mesh_.axis_size(partial[0]) < 2) return std::nullopt;
    const std::string& axis = partial[0];
    const ShapedArray& out = jaxpr_.aval(e.outputs[0]);
    const DimShardings cur = Padded(TensorSharding(rule.results[0], factors), out.ndim());
    const DimShardings target = Padded(plan_.sharding(e.outputs[0]), out.ndim());
    ScatterLoop loop;
    loop.axis = axis;
    loop.steps = mesh_.axis_size(axis);
    loop.result_dim = -1;
    for (int64_t d = 0; d < out.ndim() && loop.result_dim < 0; ++d) {
      if (IsPrefix(cur[d], target[d]) && cur[d].size() < target[d].size() && target[d][cur[d].size()] == axis) {
        loop.result_dim = d;
      }
    }
    if (loop.result_dim < 0 || rule.results[0][loop.result_dim].size() != 1) return std::nullopt;
    const int g = rule.results[0][loop.result_dim][0];
    for (size_t k = 0; k < 2; ++k) {
      const std::optional<int64_t> d = FactorDim(rule.operands[k], g);
      if (!d) return std::nullopt;
      loop.dims.push_back(*d);
    }
    const Shape local = LocalShape(out.shape, cur, mesh_);
    if (local[loop.result_dim] % loop.steps != 0) return std::nullopt;
    const int64_t bytes = NumElements(local) * ItemSize(out.dtype);
    CollectiveMatmulCost c;
    c.steps = loop.steps;
    c.compute_seconds = LocalDotSeconds(rule, factors);
    c.one_shot_seconds = cost_.CollectiveSeconds(ici::CollectiveKind::kReduceScatter, {axis}, bytes);
    c.loop_permute_seconds =
        static_cast<double>(loop.steps - 1) * cost_.RingShiftSeconds(axis, 1, bytes / loop.steps);
    const double rest = OperandReshardSeconds(e, rule, factors);
    std::string name = StrCat("collective matmul: ", loop.steps, " steps of partial results ppermuted over '", axis,
                              "' (reduce-scatter onto dim ", loop.result_dim, ")");
    DotPlan plan;
    plan.scatter = std::move(loop);
    return LoopStrategy(std::move(name), factors, std::move(plan), c, rest);
  }

  // A collective matmul candidate: `rest` is the other operands' reshards, paid before it.
  static Strategy LoopStrategy(std::string name, std::vector<Axes> factors, DotPlan plan,
                               const CollectiveMatmulCost& c, double rest) {
    Strategy s;
    s.label = "collective matmul";
    s.candidate.strategy = std::move(name);
    s.candidate.compute_seconds = c.compute_seconds;
    s.candidate.communication_seconds = rest + c.loop_permute_seconds;
    s.candidate.predicted_seconds = rest + c.loop_seconds();
    s.factors = std::move(factors);
    s.plan = std::move(plan);
    s.loop_cost = c;
    return s;
  }

  Strategy PlainStrategy(std::string label, std::string name, const Eqn& e, const ShardingRule& rule,
                         std::vector<Axes> factors, double after_seconds) const {
    Strategy s;
    s.label = std::move(label);
    s.candidate.strategy = std::move(name);
    s.candidate.compute_seconds = LocalDotSeconds(rule, factors);
    s.candidate.communication_seconds = OperandReshardSeconds(e, rule, factors) + after_seconds;
    s.candidate.predicted_seconds = s.candidate.compute_seconds + s.candidate.communication_seconds;
    s.factors = std::move(factors);
    return s;
  }

  // The cheapest option; JX_COLLECTIVE_MATMUL=on takes the cheapest collective matmul there
  // is, =off never takes one. Ties keep the earlier (plain) option, as XLA's condition does.
  size_t Choose(const std::vector<Strategy>& options) const {
    auto allowed = [&](const Strategy& s) {
      if (collective_matmul_ == CollectiveMatmulMode::kOff) return !s.loop_cost;
      if (collective_matmul_ == CollectiveMatmulMode::kOn) {
        const bool any = std::any_of(options.begin(), options.end(), [](const Strategy& o) { return o.loop_cost; });
        return !any || s.loop_cost.has_value();
      }
      return true;
    };
    size_t best = options.size();
    for (size_t i = 0; i < options.size(); ++i) {
      if (!allowed(options[i])) continue;
      if (best == options.size() || options[i].candidate.predicted_seconds < options[best].candidate.predicted_seconds) {
        best = i;
      }
    }
    return best;
  }

  // Chooses among `options`, records the decision (and logs it) and returns the plan.
  DotPlan Decide(const Eqn& e, const std::string& what, std::vector<Strategy> options, std::vector<Axes>& factors) {
    const size_t chosen = Choose(options);
    DotDecision d;
    d.equation = StrCat("dot_general ", jaxpr_.aval(e.inputs[0]).str(), " x ", jaxpr_.aval(e.inputs[1]).str(), " ", what);
    for (const Strategy& s : options) d.candidates.push_back(s.candidate);
    d.chosen = chosen;
    std::vector<std::string> others;
    for (size_t i = 0; i < options.size(); ++i) {
      if (i != chosen) others.push_back(StrCat(options[i].candidate.strategy, " ", Seconds(options[i].candidate.predicted_seconds)));
    }
    const bool forced = collective_matmul_ != CollectiveMatmulMode::kAuto;
    d.why = StrCat(options[chosen].candidate.strategy, ": ", Seconds(options[chosen].candidate.predicted_seconds),
                   forced ? " vs " : " < ", absl::StrJoin(others, ", "));
    for (const Strategy& s : options) {
      if (s.loop_cost) StrAppend(&d.why, "; XLA's condition for the collective matmul: ", s.loop_cost->ToString());
    }
    if (forced) {
      StrAppend(&d.why, "; forced by JX_COLLECTIVE_MATMUL=",
                collective_matmul_ == CollectiveMatmulMode::kOn ? "on" : "off");
    }
    std::vector<std::string> costs;
    for (const DotCandidate& c : d.candidates) {
      costs.push_back(StrCat(c.strategy, ": dot ", Seconds(c.compute_seconds), " + communication ",
                             Seconds(c.communication_seconds), " -> ", Seconds(c.predicted_seconds)));
    }
    Log(StrCat(d.equation, " on ", cost_.Describe(), ": ", options[chosen].label, " (", d.why, ") [",
               absl::StrJoin(costs, "; "), "]"));
    if (decisions_ != nullptr) decisions_->push_back(std::move(d));
    factors = options[chosen].factors;
    return options[chosen].plan;
  }

  // For each sharded contracting factor of a dot, compares all-gathering the operands that
  // hold it sharded (then a bigger local dot) against multiplying the shards and reducing the
  // partial products (all-reduce, or reduce-scatter when the result is wanted sharded on that
  // axis), and with one sharded contraction both against their collective matmuls. A dot
  // whose contraction is not sharded but whose operand is gathered (a non-contracting or
  // batch dimension) compares the gather with its collective matmul. Updates `factors`.
  DotPlan PlanDot(const Eqn& e, const ShardingRule& rule, std::vector<Axes>& factors) {
    const ShapedArray& out_aval = jaxpr_.aval(e.outputs[0]);
    const DimShardings want = Padded(plan_.sharding(e.outputs[0]), out_aval.ndim());
    int sharded_reductions = 0;
    for (int f = 0; f < rule.num_factors(); ++f) sharded_reductions += rule.IsReduction(f) && !factors[f].empty();
    DotPlan plan;
    for (int f = 0; f < rule.num_factors(); ++f) {
      if (!rule.IsReduction(f) || factors[f].empty()) continue;
      const Axes axes = factors[f];
      std::vector<Strategy> options;
      const std::vector<Axes> gathered = GatherFirstFactors(e, rule, factors, f);
      options.push_back(PlainStrategy("all-gather first", StrCat("all-gather ", MovedOperands(e, rule, gathered), " over ", AxesText(axes),
                                             " first"),
                                      e, rule, gathered, 0));
      // Multiply then reduce: the partial product (local result bytes) reduced over the axes.
      const Shape partial_local = LocalShape(out_aval.shape, TensorSharding(rule.results[0], factors), mesh_);
      const int64_t partial_bytes = NumElements(partial_local) * ItemSize(out_aval.dtype);
      bool scatter = false;
      for (const auto& d : want) scatter |= std::find(d.begin(), d.end(), axes[0]) != d.end();
      const auto kind = scatter ? ici::CollectiveKind::kReduceScatter : ici::CollectiveKind::kAllReduce;
      const std::string reduce = StrCat("multiply then ", scatter ? "reduce-scatter" : "all-reduce");
      options.push_back(PlainStrategy(reduce, StrCat(reduce, " over ", AxesText(axes)),
                                      e, rule, factors, cost_.CollectiveSeconds(kind, axes, partial_bytes)));
      if (sharded_reductions == 1) {
        if (auto s = GatherLoopStrategy(e, rule, gathered)) options.push_back(std::move(*s));
        if (auto s = ScatterLoopStrategy(e, rule, factors)) options.push_back(std::move(*s));
      }
      plan = Decide(e, StrCat("contracting over ", AxesText(axes), " (", AxesSize(mesh_, axes), " shards)"),
                    std::move(options), factors);
    }
    if (sharded_reductions == 0) {
      if (std::optional<Strategy> loop = GatherLoopStrategy(e, rule, factors)) {
        const std::string moved = MovedOperands(e, rule, factors);
        const std::string axis = loop->plan.gather->axis;
        std::vector<Strategy> options;
        options.push_back(PlainStrategy("all-gather then dot", StrCat("all-gather ", moved, " over '", axis, "' then dot"),
                                        e, rule, factors, 0));
        options.push_back(std::move(*loop));
        plan = Decide(e, StrCat("gathering ", moved, " over '", axis, "'"), std::move(options), factors);
      }
    }
    return plan;
  }

  const Jaxpr& jaxpr_;
  const ClosedJaxpr& closed_;
  const ShardingPlan& plan_;
  const Mesh& mesh_;
  const SpmdCostModel& cost_;
  std::vector<std::string>* log_;
  std::vector<DotDecision>* decisions_;
  CollectiveMatmulMode collective_matmul_;
  std::vector<Local> env_;
};

}  // namespace

Shape LocalShape(const Shape& global, const DimShardings& s, const Mesh& mesh) {
  Shape local = global;
  for (size_t d = 0; d < s.size() && d < local.size(); ++d) local[d] /= AxesSize(mesh, s[d]);
  return local;
}

std::vector<ReshardStep> ReshardSteps(int64_t rank, const DimShardings& from_in, const DimShardings& to_in) {
  DimShardings cur = Padded(from_in, rank);
  const DimShardings to = Padded(to_in, rank);
  std::vector<ReshardStep> steps;
  if (cur == to) return steps;
  // An axis moving whole from one dim to another where both ends allow it: one all_to_all.
  for (int64_t src = 0; src < rank; ++src) {
    for (int64_t dst = 0; dst < rank; ++dst) {
      if (src == dst || cur[src].empty() || IsPrefix(cur[src], to[src])) continue;
      const std::string& a = cur[src].back();
      if (!IsPrefix(cur[dst], to[dst]) || cur[dst].size() >= to[dst].size() || to[dst][cur[dst].size()] != a) continue;
      steps.push_back({ReshardStep::kAllToAll, dst, src, Axes{a}});
      cur[src].pop_back();
      cur[dst].push_back(a);
    }
  }
  // Drop the axes `to` does not keep (all_gather), keeping the common major prefix.
  for (int64_t d = 0; d < rank; ++d) {
    if (IsPrefix(cur[d], to[d])) continue;
    size_t p = 0;
    while (p < cur[d].size() && p < to[d].size() && cur[d][p] == to[d][p]) ++p;
    steps.push_back({ReshardStep::kAllGather, d, -1, Axes(cur[d].begin() + static_cast<std::ptrdiff_t>(p), cur[d].end())});
    cur[d].resize(p);
  }
  // Add the axes `to` wants: each device keeps its block (no communication).
  for (int64_t d = 0; d < rank; ++d) {
    if (cur[d].size() == to[d].size()) continue;
    steps.push_back({ReshardStep::kSlice, d, -1, Axes(to[d].begin() + static_cast<std::ptrdiff_t>(cur[d].size()), to[d].end())});
    cur[d] = to[d];
  }
  return steps;
}

Array Reshard(const Array& x, const ShapedArray& global, const DimShardings& from, const DimShardings& to,
              const Mesh& mesh) {
  const int64_t rank = global.ndim();
  Array v = x;
  for (const ReshardStep& step : ReshardSteps(rank, from, to)) {
    switch (step.kind) {
      case ReshardStep::kAllToAll:
        v = lax::all_to_all(v, AxisNames(step.axes), /*split_axis=*/step.dim, /*concat_axis=*/step.source_dim,
                            /*tiled=*/true);
        break;
      case ReshardStep::kAllGather:
        v = lax::all_gather(v, AxisNames(step.axes), step.dim, /*tiled=*/true);
        break;
      case ReshardStep::kSlice: {
        const int64_t block = v.shape()[step.dim] / AxesSize(mesh, step.axes);
        std::vector<Array> starts;
        for (int64_t k = 0; k < rank; ++k) {
          starts.push_back(k == step.dim ? lax::axis_index(AxisNames(step.axes)) * block : jnp::zeros({}, int32));
        }
        Shape sizes = v.shape();
        sizes[step.dim] = block;
        v = lax::dynamic_slice(v, starts, sizes);
        break;
      }
    }
  }
  return v;
}

double ReshardSeconds(const ShapedArray& global, const DimShardings& from, const DimShardings& to, const Mesh& mesh,
                      const SpmdCostModel& cost) {
  double elems = static_cast<double>(NumElements(LocalShape(global.shape, from, mesh)));
  const double item = static_cast<double>(ItemSize(global.dtype));
  double seconds = 0;
  for (const ReshardStep& step : ReshardSteps(global.ndim(), from, to)) {
    const auto n = static_cast<double>(AxesSize(mesh, step.axes));
    switch (step.kind) {
      case ReshardStep::kAllToAll:  // V: the group's whole data
        seconds += cost.CollectiveSeconds(ici::CollectiveKind::kAllToAll, step.axes,
                                          static_cast<int64_t>(elems * item * n));
        break;
      case ReshardStep::kAllGather:  // V: the gathered result
        elems *= n;
        seconds += cost.CollectiveSeconds(ici::CollectiveKind::kAllGather, step.axes, static_cast<int64_t>(elems * item));
        break;
      case ReshardStep::kSlice:
        elems /= n;
        break;
    }
  }
  return seconds;
}

Arrays PartitionedEval(const ClosedJaxpr& jaxpr, const ShardingPlan& plan, const Mesh& mesh,
                       const SpmdCostModel& cost, absl::Span<const Array> args, std::vector<std::string>* log,
                       std::vector<DotDecision>* decisions) {
  return Partitioner(jaxpr, plan, mesh, cost, log, decisions).Run(args);
}

}  // namespace jx::spmd

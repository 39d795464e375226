#include "jx/sharding/spmd/partitioner.h"

#include <algorithm>
#include <optional>

#include "absl/strings/str_join.h"
#include "jx/core/errors.h"
#include "jx/core/interpreter.h"
#include "jx/core/str_util.h"
#include "jx/lax/control_flow.h"
#include "jx/lax/dot_general.h"
#include "jx/lax/lax.h"
#include "jx/lax/numpy/numpy.h"
#include "jx/lax/precision.h"
#include "jx/lax/primitives.h"
#include "jx/sharding/collectives.h"
#include "jx/sharding/spmd/dot_strategy.h"
#include "jx/sharding/spmd/mesh_axes.h"
#include "jx/sharding/spmd/nested_shard_map.h"
#include "jx/sharding/spmd/partial_reductions.h"
#include "jx/sharding/spmd/regions.h"
#include "jx/sharding/spmd/reshard.h"
#include "jx/sharding/spmd/sharding_constraint.h"
#include "jx/transforms/optimization_barrier.h"

namespace jx::spmd {
namespace {

namespace jnp = jx::numpy;

// A per-device value and the sharding it has.
struct Local {
  Array value;
  DimShardings sharding;
};

// The higher of a dot_general's operand precisions (DEFAULT when it states none).
lax::Precision HigherPrecision(const ParamMap& params) {
  const std::optional<lax::PrecisionPair> p = lax::internal::GetPrecision(params);
  return p ? std::max((*p)[0], (*p)[1]) : lax::Precision::kDefault;
}

// The backward pass's copy of a checkpoint's forward part (checkpoint's transpose binds it
// with differentiated and prevent_cse).
bool IsRematerialization(const Eqn& e) {
  static const Primitive kCheckpoint = Primitive::Intern("checkpoint");
  return e.primitive == kCheckpoint && e.params.GetBool("differentiated") && e.params.GetBool("prevent_cse");
}

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
    if (PinnedSharding(e.primitive, e.params) != nullptr) {  // with_sharding_constraint, reshard
      const Var out = e.outputs[0];
      env_[out.index] = Local{Operand(e, 0, plan_.sharding(out)), plan_.sharding(out)};
      return;
    }
    std::optional<ShardingRule> rule = RuleOf(jaxpr_, e);
    if (!rule) {
      if (std::optional<Regions> regions = RegionsOf(e)) return VisitRegions(i, *regions);
      if (IsShardMap(e)) return VisitShardMap(e);
      return VisitReplicated(e);
    }
    std::vector<Axes> factors = plan_.eqn_factor_axes[i];
    DotPlan dot;
    if (e.primitive == lax::kDotGeneral) {
      DotInstance instance{{jaxpr_.aval(e.inputs[0]), jaxpr_.aval(e.inputs[1])},
                           {Get(e.inputs[0]).sharding, Get(e.inputs[1]).sharding},
                           jaxpr_.aval(e.outputs[0]),
                           plan_.sharding(e.outputs[0]),
                           HigherPrecision(e.params)};
      dot = PlanDot(instance, *rule, factors, mesh_, cost_, collective_matmul_, decisions_, log_);
      factors = dot.factors;
    }
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
    const ParamMap params = LocalParams(e, out_shardings, ins.empty() ? Array() : ins[0]);
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
      if (!partial.empty() && rule->combiner == ShardingRule::Combiner::kNone) {
        l.value = CombinePartialReduction(e, ins[0], l.value, partial);
        Log(StrCat(e.primitive.name(), ": partial results over ", AxesText(partial), " all-gathered and reduced"));
      } else if (!partial.empty()) {
        l = Combine(e, l, partial, rule->combiner, plan_.sharding(out), jaxpr_.aval(out).ndim());
      }
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
        if (IsRematerialization(e)) {
          // Inlined, a rematerialization keeps the opt-barrier its lowering would put on its
          // operands (transforms/optimization_barrier.h).
          const Arrays fenced = OptimizationBarrier(Values(args));
          for (size_t k = 0; k < args.size(); ++k) args[k].value = fenced[k];
        }
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

  // A shard_map over the program's mesh: its body inlined on the blocks its in_specs give.
  void VisitShardMap(const Eqn& e) {
    const std::vector<DimShardings> in = ShardMapInShardings(jaxpr_, e, mesh_.abstract_mesh());
    const std::vector<DimShardings> out = ShardMapOutShardings(jaxpr_, e, mesh_.abstract_mesh());
    Arrays ins;
    for (size_t k = 0; k < e.inputs.size(); ++k) ins.push_back(Operand(e, k, in[k]));
    Arrays outs = InlineShardMap(e, ins);
    for (size_t k = 0; k < e.outputs.size(); ++k) env_[e.outputs[k].index] = Local{outs[k], out[k]};
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
  ParamMap LocalParams(const Eqn& e, const std::vector<DimShardings>& out_shardings, const Array& local_operand) const {
    ParamMap p = e.params;
    if (e.primitive == lax::kReshape) {
      p.Set("new_sizes", LocalShape(jaxpr_.aval(e.outputs[0]).shape, out_shardings[0], mesh_));
    } else if (e.primitive == lax::kBroadcastInDim) {
      p.Set("shape", LocalShape(jaxpr_.aval(e.outputs[0]).shape, out_shardings[0], mesh_));
    } else if (e.primitive == lax::kSlice) {
      // Only dims taken whole may be sharded (SliceRule): their limit is the local size.
      const Shape& global = jaxpr_.aval(e.outputs[0]).shape;
      const Shape local = LocalShape(global, out_shardings[0], mesh_);
      std::vector<int64_t> limits = e.params.GetInts("limit_indices");
      for (size_t d = 0; d < limits.size(); ++d) {
        if (local[d] != global[d]) limits[d] = local[d];
      }
      p.Set("limit_indices", limits);
    } else if (e.primitive == lax::kDynamicSlice || e.primitive == lax::kGather) {
      // Only operand dims taken whole may be sharded (their rules): their slice is the local dim.
      const Shape& global = jaxpr_.aval(e.inputs[0]).shape;
      std::vector<int64_t> sizes = e.params.GetInts("slice_sizes");
      for (size_t d = 0; d < sizes.size(); ++d) {
        if (sizes[d] == global[d]) sizes[d] = local_operand.shape()[d];
      }
      p.Set("slice_sizes", sizes);
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
    Axes drop(cur[d].begin() + static_cast<std::ptrdiff_t>(p), cur[d].end());
    steps.push_back({ReshardStep::kAllGather, d, -1, std::move(drop)});
    cur[d].resize(p);
  }
  // Add the axes `to` wants: each device keeps its block (no communication).
  for (int64_t d = 0; d < rank; ++d) {
    if (cur[d].size() == to[d].size()) continue;
    Axes extra(to[d].begin() + static_cast<std::ptrdiff_t>(cur[d].size()), to[d].end());
    steps.push_back({ReshardStep::kSlice, d, -1, std::move(extra)});
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
        seconds +=
            cost.CollectiveSeconds(ici::CollectiveKind::kAllGather, step.axes, static_cast<int64_t>(elems * item));
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

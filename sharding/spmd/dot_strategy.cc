#include "jx/sharding/spmd/dot_strategy.h"

#include <algorithm>
#include <array>
#include <optional>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "jx/core/str_util.h"
#include "jx/sharding/spmd/mesh_axes.h"

namespace jx::spmd {
namespace {

std::string Seconds(double s) { return absl::StrFormat("%.3g s", s); }

// One way to compute a dot: the factors' axes it computes with, its loop and its cost.
struct Strategy {
  std::string label;  // "all-gather first", "multiply then all-reduce", "collective matmul"
  DotCandidate candidate;
  std::vector<Axes> factors;
  DotPlan plan;
  std::optional<CollectiveMatmulCost> loop_cost;  // set for a collective matmul
};

class DotPlanner {
 public:
  DotPlanner(const DotInstance& dot, const ShardingRule& rule, const Mesh& mesh, const SpmdCostModel& cost,
             CollectiveMatmulMode mode, std::vector<DotDecision>* decisions, std::vector<std::string>* log)
      : dot_(dot), rule_(rule), mesh_(mesh), cost_(cost), mode_(mode), decisions_(decisions), log_(log) {}

  // See PlanDot (dot_strategy.h).
  DotPlan Run(std::vector<Axes> factors) {
    const ShapedArray& out_aval = dot_.result;
    const DimShardings want = Padded(dot_.result_sharding, out_aval.ndim());
    int sharded_reductions = 0;
    for (int f = 0; f < rule_.num_factors(); ++f) sharded_reductions += rule_.IsReduction(f) && !factors[f].empty();
    DotPlan plan;
    for (int f = 0; f < rule_.num_factors(); ++f) {
      if (!rule_.IsReduction(f) || factors[f].empty()) continue;
      const Axes axes = factors[f];
      std::vector<Strategy> options;
      const std::vector<Axes> gathered = GatherFirstFactors(factors, f);
      options.push_back(PlainStrategy(
          "all-gather first", StrCat("all-gather ", MovedOperands(gathered), " over ", AxesText(axes), " first"),
          gathered, 0));
      // Multiply then reduce: the partial product (local result bytes) reduced over the axes.
      const Shape partial_local = LocalShape(out_aval.shape, TensorSharding(rule_.results[0], factors), mesh_);
      const int64_t partial_bytes = NumElements(partial_local) * ItemSize(out_aval.dtype);
      bool scatter = false;
      for (const auto& d : want) scatter |= std::find(d.begin(), d.end(), axes[0]) != d.end();
      const auto kind = scatter ? ici::CollectiveKind::kReduceScatter : ici::CollectiveKind::kAllReduce;
      const std::string reduce = StrCat("multiply then ", scatter ? "reduce-scatter" : "all-reduce");
      const double reduce_s = cost_.CollectiveSeconds(kind, axes, partial_bytes);
      options.push_back(PlainStrategy(reduce, StrCat(reduce, " over ", AxesText(axes)), factors, reduce_s));
      if (sharded_reductions == 1) {
        for (Strategy& s : GatherLoopStrategies(gathered)) options.push_back(std::move(s));
        std::vector<Strategy> scatter_loops = ScatterLoopStrategies(factors);
        for (Strategy& s : scatter_loops) options.push_back(std::move(s));
        if (scatter_loops.empty()) {
          // Multiply then reduce, with an operand gathered on another factor first: that
          // gather becomes the loop, the reduction follows it.
          const std::string then = StrCat(scatter ? "reduce-scatter" : "all-reduce", " over ", AxesText(axes));
          for (Strategy& s : GatherLoopStrategies(factors, then, reduce_s)) options.push_back(std::move(s));
        }
      }
      plan = Decide(StrCat("contracting over ", AxesText(axes), " (", AxesSize(mesh_, axes), " shards)"),
                    std::move(options), factors);
    }
    if (sharded_reductions == 0) {
      std::vector<Strategy> loops = GatherLoopStrategies(factors);
      if (!loops.empty()) {
        const std::string moved = MovedOperands(factors);
        const std::string axis = loops[0].plan.gather->axis;
        std::vector<Strategy> options;
        std::string name = StrCat("all-gather ", moved, " over '", axis, "' then dot");
        options.push_back(PlainStrategy("all-gather then dot", std::move(name), factors, 0));
        for (Strategy& s : loops) options.push_back(std::move(s));
        plan = Decide(StrCat("gathering ", moved, " over '", axis, "'"), std::move(options), factors);
      }
    }
    plan.factors = std::move(factors);
    return plan;
  }

 private:
  DotTypes Types() const {
    return DotTypes{dot_.operands[0].dtype, dot_.operands[1].dtype, dot_.result.dtype, dot_.precision};
  }

  // The local dot's FLOPs when the factors compute with `factors`' axes.
  double LocalDotFlops(const std::vector<Axes>& factors) const {
    double flops = 2;
    for (int g = 0; g < rule_.num_factors(); ++g) {
      flops *= static_cast<double>(rule_.factor_sizes[g]) / static_cast<double>(AxesSize(mesh_, factors[g]));
    }
    return flops;
  }

  // The local dot at the chip's peak rate for its types (XLA's Tc).
  double LocalDotSeconds(const std::vector<Axes>& factors) const {
    return cost_.DotSeconds(LocalDotFlops(factors), Types());
  }

  // Bytes of operand k (or of the result, k = -1) on one device under `factors`.
  double LocalBytes(int k, const std::vector<Axes>& factors) const {
    const ShapedArray& aval = k < 0 ? dot_.result : dot_.operands[static_cast<size_t>(k)];
    const TensorFactors& t = k < 0 ? rule_.results[0] : rule_.operands[static_cast<size_t>(k)];
    return static_cast<double>(NumElements(LocalShape(aval.shape, TensorSharding(t, factors), mesh_)) *
                               ItemSize(aval.dtype));
  }

  // The local dot as the kernel the cost model charges.
  double LocalDotKernelSeconds(const std::vector<Axes>& factors) const {
    return cost_.KernelSeconds(LocalBytes(0, factors) + LocalBytes(1, factors), LocalBytes(-1, factors),
                               LocalDotFlops(factors), Types());
  }

  // The gather loop's steps as the cost model charges the kernels AllGatherMatmul emits: per
  // partial dot, the blocks sliced from the operands held whole and the dot of a 1/N share of
  // the local dot's work (the next partial products add into it: the sum is one more operand
  // of the dot's fusion; result blocks are written in place after it), per step its index
  // arithmetic (three kernels a trip inside the rolled loop: the position, the counter and the
  // loop's condition), and the ring shifts of the looped operands (both ways round: one
  // ppermute each way, one after the other, as the scheduler keeps one in flight).
  void GatherLoopSteps(const GatherLoop& loop, const std::vector<Axes>& factors,
                       const std::vector<int64_t>& local_bytes, CollectiveMatmulCost& c) const {
    const double n = static_cast<double>(loop.steps);
    double dot_operands = 0, slices = 0;
    for (size_t k = 0; k < 2; ++k) {
      if (loop.looped[k]) {
        dot_operands += static_cast<double>(local_bytes[k]);
      } else if (loop.dims[k] >= 0) {
        const double block = LocalBytes(static_cast<int>(k), factors) / n;
        dot_operands += block;
        slices += cost_.KernelSeconds(block, block);
      } else {
        dot_operands += LocalBytes(static_cast<int>(k), factors);
      }
    }
    const double result_bytes = LocalBytes(-1, factors);
    const bool summed = loop.result_dim < 0;
    const double partial_bytes = summed ? result_bytes : result_bytes / n;
    const double flops = LocalDotFlops(factors) / n;
    const double first_dot = cost_.KernelSeconds(dot_operands, partial_bytes, flops, Types());
    const double next_dot =
        summed ? cost_.KernelSeconds(dot_operands + partial_bytes, partial_bytes, flops, Types()) : first_dot;
    const double update = summed ? 0 : cost_.KernelSeconds(partial_bytes, partial_bytes);
    const double index = cost_.KernelSeconds(0);
    const std::vector<bool> rolled = RolledSteps(loop);
    const int64_t rounds = ShiftRounds(loop);
    for (int64_t s = 0; s <= rounds; ++s) {
      const bool backward_dot = s > 0 && loop.bidirectional && 2 * s < loop.steps;
      const double dots = backward_dot ? 2 : 1;
      // The first step also reads the mesh position and sets the result (or the loop) up.
      const double before = dots * slices + (rolled[static_cast<size_t>(s)] ? 3 : 1) * index + (s == 0 ? 2 * index : 0);
      // The forward blocks' dot, then the backward blocks' (each waits for its own shifts).
      const std::array<double, 2> after = {(s == 0 ? first_dot : next_dot) + update,
                                           backward_dot ? next_dot + update : 0};
      std::array<double, 2> shift = {0, 0};
      for (size_t k = 0; k < 2 && s < rounds; ++k) {
        if (!loop.looped[k]) continue;
        shift[0] += cost_.RingShiftSeconds(loop.axis, {-1}, local_bytes[k]);
        if (loop.bidirectional && 2 * (s + 1) < loop.steps) {
          shift[1] += cost_.RingShiftSeconds(loop.axis, {1}, local_bytes[k]);
        }
      }
      c.before_seconds.push_back(before);
      c.after_seconds.push_back(after);
      c.shift_seconds.push_back(shift);
    }
    c.chained_shifts = true;
  }

  // The reduce-scatter loop's steps as the cost model charges ReduceScatterMatmul's kernels:
  // per direction, the operands' blocks sliced and multiplied (1/pieces of the local dot's
  // work; they wait for nothing), and from the second step on the addition of the partial sum
  // a ring shift brought (one ppermute per direction); both ways round, the halves are
  // concatenated at the end. `bytes`: the local result the loop scatters.
  void ScatterLoopSteps(const ScatterLoop& loop, const std::vector<Axes>& factors, double bytes,
                        CollectiveMatmulCost& c) const {
    const double directions = loop.bidirectional ? 2 : 1;
    const double pieces = directions * static_cast<double>(loop.steps);
    const double piece_bytes = bytes / pieces;
    double dot_operands = 0, slices = 0;
    for (size_t k = 0; k < 2; ++k) {
      const double whole = LocalBytes(static_cast<int>(k), factors);
      if (loop.dims[k] < 0) {
        dot_operands += whole;
      } else {
        dot_operands += whole / pieces;
        slices += cost_.KernelSeconds(whole / pieces, whole / pieces);
      }
    }
    const double dot = slices + cost_.KernelSeconds(dot_operands, piece_bytes, LocalDotFlops(factors) / pieces, Types());
    // The addition reads the sum the shift brought from HBM, and the step's partial product
    // from VMEM where the dot left it (a kernel of its own: it waits for the shift, the dot
    // does not).
    const double add = cost_.KernelSeconds(
        (cost_.KeepsResultInVmem(dot_operands, piece_bytes) ? 1 : 2) * piece_bytes, piece_bytes);
    const std::array<double, 2> shift = {
        cost_.RingShiftSeconds(loop.axis, {1}, static_cast<int64_t>(piece_bytes)),
        loop.bidirectional ? cost_.RingShiftSeconds(loop.axis, {-1}, static_cast<int64_t>(piece_bytes)) : 0};
    const double index = cost_.KernelSeconds(0);
    const std::vector<bool> rolled = RolledSteps(loop);
    for (int64_t s = 0; s < loop.steps; ++s) {
      c.before_seconds.push_back(directions * dot + (rolled[static_cast<size_t>(s)] ? 3 : 1) * index +
                                 (s == 0 ? 2 * index : 0));
      // One addition per direction (after the step's last shift: scheduled_seconds).
      std::array<double, 2> after = {s > 0 ? add : 0, s > 0 && loop.bidirectional ? add : 0};
      if (loop.bidirectional && s + 1 == loop.steps) after[1] += cost_.KernelSeconds(2 * piece_bytes, 2 * piece_bytes);
      c.after_seconds.push_back(after);
      c.shift_seconds.push_back(s > 0 ? shift : std::array<double, 2>{0, 0});
    }
    c.chained_shifts = false;
  }

  // Seconds of resharding the operands to what `factors` asks (but the `skip`ped ones).
  double OperandReshardSeconds(const std::vector<Axes>& factors, const std::vector<bool>& skip = {}) const {
    double s = 0;
    for (size_t k = 0; k < dot_.operands.size() && k < rule_.operands.size(); ++k) {
      if (k < skip.size() && skip[k]) continue;
      s += ReshardSeconds(dot_.operands[k], dot_.operand_shardings[k], TensorSharding(rule_.operands[k], factors),
                          mesh_, cost_);
    }
    return s;
  }

  // The operands ("lhs", "rhs", "lhs+rhs") that need communication to reach what `factors` asks.
  std::string MovedOperands(const std::vector<Axes>& factors) const {
    std::vector<std::string> names;
    for (size_t k = 0; k < dot_.operands.size() && k < rule_.operands.size(); ++k) {
      const int64_t rank = dot_.operands[k].ndim();
      for (const ReshardStep& step :
           ReshardSteps(rank, dot_.operand_shardings[k], TensorSharding(rule_.operands[k], factors))) {
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
  std::vector<Axes> GatherFirstFactors(const std::vector<Axes>& factors, int f) const {
    std::vector<Axes> out = factors;
    out[f].clear();
    std::vector<std::pair<const TensorFactors*, DimShardings>> tensors;
    for (size_t k = 0; k < dot_.operands.size() && k < rule_.operands.size(); ++k) {
      tensors.emplace_back(&rule_.operands[k], Padded(dot_.operand_shardings[k], dot_.operands[k].ndim()));
    }
    tensors.emplace_back(&rule_.results[0], Padded(dot_.result_sharding, dot_.result.ndim()));
    for (const std::string& a : factors[f]) {
      bool placed = false;
      for (const auto& [tf, sh] : tensors) {
        for (size_t d = 0; d < tf->size() && !placed; ++d) {
          if ((*tf)[d].size() != 1) continue;
          const int g = (*tf)[d][0];
          if (g == f || rule_.IsReduction(g) || rule_.NeedsReplication(g)) continue;
          if (sh[d].size() != out[g].size() + 1 || !IsPrefix(out[g], sh[d]) || sh[d].back() != a) continue;
          if (rule_.factor_sizes[g] % (AxesSize(mesh_, out[g]) * mesh_.axis_size(a)) != 0) continue;
          out[g].push_back(a);
          placed = true;
        }
        if (placed) break;
      }
    }
    return out;
  }

  // The all-gather loops for `factors` (one way round, and both ways on axes of 3 or more):
  // every operand that needs communication to reach what the factors ask gathers exactly one
  // more axis (the same for all) off the dim of one factor, so it can travel round that
  // axis' ring instead. `then` (with its seconds) names what still follows the loop: the
  // reduction of a sharded contraction's partial products.
  std::vector<Strategy> GatherLoopStrategies(const std::vector<Axes>& factors, std::string_view then = {},
                                             double then_seconds = 0) const {
    if (dot_.operands.size() != 2 || rule_.operands.size() != 2 || rule_.results.size() != 1) return {};
    int f = -1;
    std::string axis;
    GatherLoop loop;
    loop.looped.assign(2, false);
    std::vector<int64_t> local_bytes(2, 0);
    for (size_t k = 0; k < 2; ++k) {
      const ShapedArray& aval = dot_.operands[k];
      const DimShardings cur = Padded(dot_.operand_shardings[k], aval.ndim());
      const DimShardings want = Padded(TensorSharding(rule_.operands[k], factors), aval.ndim());
      if (cur == want) continue;
      int64_t dim = -1;
      for (int64_t d = 0; d < aval.ndim(); ++d) {
        if (cur[d] == want[d]) continue;
        if (dim >= 0) return {};
        dim = d;
      }
      if (cur[dim].size() != want[dim].size() + 1 || !IsPrefix(want[dim], cur[dim])) return {};
      if (rule_.operands[k][dim].size() != 1) return {};
      const int fk = rule_.operands[k][dim][0];
      if (f >= 0 && (fk != f || cur[dim].back() != axis)) return {};
      f = fk;
      axis = cur[dim].back();
      loop.looped[k] = true;
      local_bytes[k] = NumElements(LocalShape(aval.shape, cur, mesh_)) * ItemSize(aval.dtype);
    }
    if (f < 0 || mesh_.axis_size(axis) < 2) return {};
    loop.axis = axis;
    loop.steps = mesh_.axis_size(axis);
    for (size_t k = 0; k < 2; ++k) {
      const std::optional<int64_t> d = FactorDim(rule_.operands[k], f);
      if (!d) return {};
      loop.dims.push_back(*d);
    }
    const std::optional<int64_t> r = FactorDim(rule_.results[0], f);
    if (!r) return {};
    loop.result_dim = *r;
    std::vector<std::string> names;
    for (size_t k = 0; k < 2; ++k) {
      if (loop.looped[k]) names.push_back(k == 0 ? "lhs" : "rhs");
    }
    const double rest = OperandReshardSeconds(factors, loop.looped) + then_seconds;
    std::vector<Strategy> out;
    for (bool both_ways : {false, true}) {
      if (both_ways && loop.steps < 3) break;  // two chips: one shift either way
      loop.bidirectional = both_ways;
      const int64_t rounds = ShiftRounds(loop);
      CollectiveMatmulCost c;
      c.steps = rounds + 1;
      c.block = rule_.factor_sizes[f] / (AxesSize(mesh_, factors[f]) * loop.steps);
      c.compute_seconds = LocalDotSeconds(factors);
      GatherLoopSteps(loop, factors, local_bytes, c);
      for (size_t k = 0; k < 2; ++k) {
        if (!loop.looped[k]) continue;
        c.one_shot_seconds +=
            cost_.CollectiveSeconds(ici::CollectiveKind::kAllGather, {axis}, local_bytes[k] * loop.steps);
        for (int64_t s = 1; s <= rounds; ++s) {
          const bool backward = both_ways && 2 * s < loop.steps;
          c.loop_permute_seconds += cost_.RingShiftSeconds(
              axis, backward ? std::vector<int64_t>{-1, 1} : std::vector<int64_t>{-1}, local_bytes[k]);
        }
      }
      std::string name = StrCat(
          "collective matmul: ", both_ways ? StrCat(rounds, " rounds of ") : StrCat(loop.steps, " steps of "),
          absl::StrJoin(names, "+"), " ppermuted over '", axis, both_ways ? "' both ways" : "'",
          loop.result_dim < 0 ? ", partial products summed" : ", result blocks written in place",
          then.empty() ? "" : ", then ", then);
      DotPlan plan;
      plan.gather = loop;
      out.push_back(LoopStrategy(std::move(name), factors, std::move(plan), c, rest));
    }
    return out;
  }

  // The reduce-scatter loops for `factors` (one way round, and both ways on axes of 3 or more
  // with an even local contraction): the partial products over a single axis would be
  // reduce-scattered onto a result dimension (the partitioner's Combine), so the partial
  // result can travel round that axis' ring instead, one block added per step.
  std::vector<Strategy> ScatterLoopStrategies(const std::vector<Axes>& factors) const {
    if (dot_.operands.size() != 2 || rule_.results.size() != 1 || rule_.combiner != ShardingRule::Combiner::kSum) {
      return {};
    }
    Axes partial;
    for (int f = 0; f < rule_.num_factors(); ++f) {
      if (rule_.IsReduction(f)) partial.insert(partial.end(), factors[f].begin(), factors[f].end());
    }
    if (partial.size() != 1 || mesh_.axis_size(partial[0]) < 2) return {};
    const std::string& axis = partial[0];
    const ShapedArray& out = dot_.result;
    const DimShardings cur = Padded(TensorSharding(rule_.results[0], factors), out.ndim());
    const DimShardings target = Padded(dot_.result_sharding, out.ndim());
    ScatterLoop loop;
    loop.axis = axis;
    loop.steps = mesh_.axis_size(axis);
    loop.result_dim = -1;
    for (int64_t d = 0; d < out.ndim() && loop.result_dim < 0; ++d) {
      if (IsPrefix(cur[d], target[d]) && cur[d].size() < target[d].size() && target[d][cur[d].size()] == axis) {
        loop.result_dim = d;
      }
    }
    if (loop.result_dim < 0 || rule_.results[0][loop.result_dim].size() != 1) return {};
    const int g = rule_.results[0][loop.result_dim][0];
    for (size_t k = 0; k < 2; ++k) {
      const std::optional<int64_t> d = FactorDim(rule_.operands[k], g);
      if (!d) return {};
      loop.dims.push_back(*d);
    }
    const Shape local = LocalShape(out.shape, cur, mesh_);
    if (local[loop.result_dim] % loop.steps != 0) return {};
    const int64_t bytes = NumElements(local) * ItemSize(out.dtype);
    const double rest = OperandReshardSeconds(factors);
    std::vector<Strategy> out_strategies;
    for (bool both_ways : {false, true}) {
      // Both ways round halves each block: its size must divide by 2.
      if (both_ways && (loop.steps < 3 || local[loop.result_dim] % (2 * loop.steps) != 0)) break;
      ScatterLoop l = loop;
      l.bidirectional = both_ways;
      CollectiveMatmulCost c;
      c.steps = l.steps;
      const int64_t pieces = both_ways ? 2 * l.steps : l.steps;
      c.block = local[l.result_dim] / pieces;
      c.compute_seconds = LocalDotSeconds(factors);
      c.one_shot_seconds = cost_.CollectiveSeconds(ici::CollectiveKind::kReduceScatter, {axis}, bytes);
      const double shift = both_ways ? cost_.RingShiftSeconds(axis, {1, -1}, bytes / l.steps / 2)
                                     : cost_.RingShiftSeconds(axis, {1}, bytes / l.steps);
      c.loop_permute_seconds = static_cast<double>(l.steps - 1) * shift;
      ScatterLoopSteps(l, factors, static_cast<double>(bytes), c);
      std::string name = StrCat("collective matmul: ", l.steps, " steps of partial results ppermuted over '", axis,
                                both_ways ? "' both ways" : "'", " (reduce-scatter onto dim ", l.result_dim, ")");
      DotPlan plan;
      plan.scatter = std::move(l);
      out_strategies.push_back(LoopStrategy(std::move(name), factors, std::move(plan), c, rest));
    }
    return out_strategies;
  }

  // A collective matmul candidate: `rest` is the communication it does not overlap (the
  // other operands' reshards, a reduction after).
  static Strategy LoopStrategy(std::string name, std::vector<Axes> factors, DotPlan plan,
                               const CollectiveMatmulCost& c, double rest) {
    Strategy s;
    s.label = "collective matmul";
    s.candidate.strategy = std::move(name);
    s.candidate.compute_seconds = c.total_kernel_seconds();
    s.candidate.communication_seconds = rest + c.total_shift_seconds();
    s.candidate.predicted_seconds = rest + c.scheduled_seconds();
    s.factors = std::move(factors);
    s.plan = std::move(plan);
    s.loop_cost = c;
    return s;
  }

  Strategy PlainStrategy(std::string label, std::string name, std::vector<Axes> factors, double after_seconds) const {
    Strategy s;
    s.label = std::move(label);
    s.candidate.strategy = std::move(name);
    s.candidate.compute_seconds = LocalDotKernelSeconds(factors);
    s.candidate.communication_seconds = OperandReshardSeconds(factors) + after_seconds;
    s.candidate.predicted_seconds = s.candidate.compute_seconds + s.candidate.communication_seconds;
    s.factors = std::move(factors);
    return s;
  }

  // The cheapest option; JX_COLLECTIVE_MATMUL=on takes the cheapest collective matmul there
  // is, =off never takes one. Ties keep the earlier (plain) option, as XLA's condition does.
  // By default a loop of slivers (blocks narrower than kMinAutoCollectiveMatmulBlock) is listed
  // but not taken: the formula's Tc/N per step does not hold for them.
  size_t Choose(const std::vector<Strategy>& options) const {
    auto allowed = [&](const Strategy& s) {
      if (mode_ == CollectiveMatmulMode::kOff) return !s.loop_cost;
      if (mode_ == CollectiveMatmulMode::kAuto && s.loop_cost) {
        return s.loop_cost->block >= kMinAutoCollectiveMatmulBlock;
      }
      if (mode_ == CollectiveMatmulMode::kOn) {
        const bool any =
            std::any_of(options.begin(), options.end(), [](const Strategy& o) { return o.loop_cost.has_value(); });
        return !any || s.loop_cost.has_value();
      }
      return true;
    };
    size_t best = options.size();
    for (size_t i = 0; i < options.size(); ++i) {
      if (!allowed(options[i])) continue;
      const double t = options[i].candidate.predicted_seconds;
      if (best == options.size() || t < options[best].candidate.predicted_seconds) best = i;
    }
    return best;
  }

  // Chooses among `options`, records the decision (and logs it) and returns the plan.
  DotPlan Decide(const std::string& what, std::vector<Strategy> options, std::vector<Axes>& factors) {
    const size_t chosen = Choose(options);
    DotDecision d;
    d.equation = StrCat("dot_general ", dot_.operands[0].str(), " x ", dot_.operands[1].str(), " ", what);
    for (const Strategy& s : options) d.candidates.push_back(s.candidate);
    d.chosen = chosen;
    std::vector<std::string> others;
    for (size_t i = 0; i < options.size(); ++i) {
      if (i == chosen) continue;
      others.push_back(StrCat(options[i].candidate.strategy, " ", Seconds(options[i].candidate.predicted_seconds)));
    }
    const bool forced = mode_ != CollectiveMatmulMode::kAuto;
    d.why = StrCat(options[chosen].candidate.strategy, ": ", Seconds(options[chosen].candidate.predicted_seconds),
                   forced ? " vs " : " < ", absl::StrJoin(others, ", "));
    // XLA's condition for the collective matmul taken, or else the cheapest one.
    const Strategy* loop = options[chosen].loop_cost ? &options[chosen] : nullptr;
    for (const Strategy& s : options) {
      if (options[chosen].loop_cost || !s.loop_cost) continue;
      if (loop == nullptr || s.candidate.predicted_seconds < loop->candidate.predicted_seconds) loop = &s;
    }
    if (loop != nullptr) {
      StrAppend(&d.why, "; XLA's condition for ", loop == &options[chosen] ? "it" : "the cheapest collective matmul",
                ": ", loop->loop_cost->ToString());
    }
    if (mode_ == CollectiveMatmulMode::kAuto && loop != nullptr && loop != &options[chosen] &&
        loop->loop_cost->block < kMinAutoCollectiveMatmulBlock) {
      StrAppend(&d.why, "; a collective matmul whose steps multiply blocks of ", loop->loop_cost->block,
                " (under the MXU's ", kMinAutoCollectiveMatmulBlock,
                ") is not taken: its partial dots would not run at the rate Tc/N assumes; JX_COLLECTIVE_MATMUL=on "
                "forces it");
    }
    if (forced) {
      StrAppend(&d.why, "; forced by JX_COLLECTIVE_MATMUL=",
                mode_ == CollectiveMatmulMode::kOn ? "on" : "off");
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

  void Log(std::string line) {
    SpmdLog(line);
    if (log_ != nullptr) log_->push_back(std::move(line));
  }

  const DotInstance& dot_;
  const ShardingRule& rule_;
  const Mesh& mesh_;
  const SpmdCostModel& cost_;
  CollectiveMatmulMode mode_;
  std::vector<DotDecision>* decisions_;
  std::vector<std::string>* log_;
};

}  // namespace

DotPlan PlanDot(const DotInstance& dot, const ShardingRule& rule, std::vector<std::vector<std::string>> factors,
                const Mesh& mesh, const SpmdCostModel& cost, CollectiveMatmulMode mode,
                std::vector<DotDecision>* decisions, std::vector<std::string>* log) {
  return DotPlanner(dot, rule, mesh, cost, mode, decisions, log).Run(std::move(factors));
}

}  // namespace jx::spmd

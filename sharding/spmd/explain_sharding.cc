#include "jx/sharding/spmd/explain_sharding.h"

#include <algorithm>
#include <memory>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "jx/core/str_util.h"

namespace jx {
namespace {

using Axes = std::vector<std::string>;

std::string AxesLabel(const Axes& axes) {
  if (axes.empty()) return "None";
  std::string joined = absl::StrJoin(axes, ", ", [](std::string* o, const std::string& a) { StrAppend(o, "'", a, "'"); });
  return axes.size() == 1 ? joined : StrCat("(", joined, ")");
}

std::string Seconds(double s) { return absl::StrFormat("%.3g s", s); }

int64_t AxesSize(const Mesh& mesh, const Axes& axes) {
  int64_t n = 1;
  for (const std::string& a : axes) n *= mesh.axis_size(a);
  return n;
}

bool IsPrefix(const Axes& a, const Axes& b) {
  return a.size() <= b.size() && std::equal(a.begin(), a.end(), b.begin());
}

// The sharding side s of a conflict would have under candidate c: c's axes leave every other
// dimension, and every dimension holding c's factor takes them.
DimShardings TargetOf(const spmd::ConflictSide& s, const spmd::ConflictCandidate& c) {
  DimShardings t = s.sharding;
  t.resize(static_cast<size_t>(s.aval.ndim()));
  for (Axes& d : t) {
    d.erase(std::remove_if(d.begin(), d.end(),
                           [&](const std::string& a) { return std::find(c.axes.begin(), c.axes.end(), a) != c.axes.end(); }),
            d.end());
  }
  for (size_t d = 0; d < t.size() && d < s.dim_factors.size(); ++d) {
    if (s.dim_factors[d] == c.factor) t[d] = c.axes;
  }
  return t;
}

ConflictExplanation Explain(const spmd::ShardingConflict& conflict, const Mesh& mesh, const spmd::SpmdCostModel& cost) {
  ConflictExplanation out;
  out.equation = conflict.equation;
  out.what = conflict.what;
  out.chosen = conflict.chosen;
  for (const spmd::ConflictCandidate& c : conflict.candidates) {
    ConflictChoice choice;
    const spmd::ConflictSide& first = conflict.sides[c.sides[0]];
    choice.sharding = StrCat(AxesLabel(c.axes), " on dimension ", first.dim, " of ", first.tensor);
    for (size_t s : c.sides) {
      const spmd::ConflictSide& side = conflict.sides[s];
      choice.wanted_by.push_back(StrCat(side.tensor, " ", spmd::ShardingText(side.sharding, side.aval.ndim()),
                                        side.fixed ? " (given)" : ""));
    }
    // Each tensor of the equation reshards once, however many of its dimensions disagree.
    std::vector<std::string> priced;
    for (const spmd::ConflictSide& side : conflict.sides) {
      if (std::find(priced.begin(), priced.end(), side.tensor) != priced.end()) continue;
      priced.push_back(side.tensor);
      const DimShardings to = TargetOf(side, c);
      spmd::ReshardCost r = spmd::EstimateReshard(side.aval, side.sharding, to, mesh, cost);
      if (r.steps.empty()) continue;
      choice.predicted_seconds += r.seconds;
      choice.reshards.push_back(StrCat(side.tensor, " to ", spmd::ShardingText(to, side.aval.ndim()), ": ",
                                       absl::StrJoin(r.steps, ", then "), " (", Seconds(r.seconds), ")"));
    }
    out.candidates.push_back(std::move(choice));
  }
  for (size_t k = 1; k < out.candidates.size(); ++k) {
    if (out.candidates[k].predicted_seconds < out.candidates[out.cheapest].predicted_seconds) out.cheapest = k;
  }
  out.why = conflict.why;
  if (out.chosen && *out.chosen != out.cheapest &&
      out.candidates[out.cheapest].predicted_seconds < out.candidates[*out.chosen].predicted_seconds) {
    StrAppend(&out.why, "; the cost model prefers ", out.candidates[out.cheapest].sharding, " (",
              Seconds(out.candidates[out.cheapest].predicted_seconds), " < ",
              Seconds(out.candidates[*out.chosen].predicted_seconds), "): pin it with in_shardings or "
              "with_sharding_constraint");
  }
  return out;
}

}  // namespace

namespace spmd {

ReshardCost EstimateReshard(const ShapedArray& aval, const DimShardings& from, const DimShardings& to_in,
                            const Mesh& mesh, const SpmdCostModel& cost) {
  const size_t rank = static_cast<size_t>(aval.ndim());
  DimShardings cur = from, to = to_in;
  cur.resize(rank);
  to.resize(rank);
  ReshardCost out;
  const int64_t item = ItemSize(aval.dtype);
  auto local_bytes = [&] { return NumElements(LocalShape(aval.shape, cur, mesh)) * item; };
  auto local_text = [&] { return ShapedArray{LocalShape(aval.shape, cur, mesh), aval.dtype}.str(); };
  // The steps of Reshard: an axis moving whole between dimensions is one all-to-all...
  for (size_t src = 0; src < rank; ++src) {
    for (size_t dst = 0; dst < rank; ++dst) {
      if (src == dst || cur[src].empty() || IsPrefix(cur[src], to[src])) continue;
      const std::string a = cur[src].back();
      if (!IsPrefix(cur[dst], to[dst]) || cur[dst].size() >= to[dst].size() || to[dst][cur[dst].size()] != a) continue;
      const int64_t n = mesh.axis_size(a);
      const double s = cost.CollectiveSeconds(ici::CollectiveKind::kAllToAll, {a}, local_bytes() * n);
      out.steps.push_back(StrCat("all-to-all ", local_text(), " over ", AxesLabel({a}), " (", n, " shards)"));
      out.seconds += s;
      cur[src].pop_back();
      cur[dst].push_back(a);
    }
  }
  // ... an axis `to` drops is an all-gather (the group's full array: local bytes x shards) ...
  for (size_t d = 0; d < rank; ++d) {
    if (IsPrefix(cur[d], to[d])) continue;
    size_t p = 0;
    while (p < cur[d].size() && p < to[d].size() && cur[d][p] == to[d][p]) ++p;
    const Axes drop(cur[d].begin() + static_cast<std::ptrdiff_t>(p), cur[d].end());
    const int64_t n = AxesSize(mesh, drop);
    out.steps.push_back(StrCat("all-gather ", local_text(), " over ", AxesLabel(drop), " (", n, " shards)"));
    out.seconds += cost.CollectiveSeconds(ici::CollectiveKind::kAllGather, drop, local_bytes() * n);
    cur[d].resize(p);
  }
  // ... and an axis it adds is a local slice (free).
  return out;
}

}  // namespace spmd

ShardingExplanation ShardingExplanation::Of(const spmd::SpmdProgram& program) {
  ShardingExplanation out;
  const Mesh& mesh = program.mesh();
  std::unique_ptr<spmd::SpmdCostModel> cost = spmd::MakeCostModel(mesh);
  std::vector<std::string> ins, outs;
  for (const NamedSharding& s : program.in_shardings()) ins.push_back(s.spec().ToString());
  for (const NamedSharding& s : program.out_shardings()) outs.push_back(s.spec().ToString());
  out.header_ = StrCat("sharding explanation on ", mesh.ToString(), ", costed on ", cost->Describe(),
                       "\n  in_shardings:  (", absl::StrJoin(ins, ", "), ")\n  out_shardings: (",
                       absl::StrJoin(outs, ", "), ")\n");
  for (const spmd::ShardingConflict& c : program.conflicts()) out.conflicts_.push_back(Explain(c, mesh, *cost));
  out.dots_ = program.dot_decisions();
  return out;
}

std::string ShardingExplanation::ToString() const {
  std::string s = header_;
  StrAppend(&s, "propagation conflicts: ", conflicts_.size(), "\n");
  for (size_t i = 0; i < conflicts_.size(); ++i) {
    const ConflictExplanation& c = conflicts_[i];
    StrAppend(&s, "  [", i, "] ", c.equation, "\n      ", c.what, "\n");
    for (size_t k = 0; k < c.candidates.size(); ++k) {
      const ConflictChoice& choice = c.candidates[k];
      StrAppend(&s, "    ", c.chosen == k ? "* " : "  ", choice.sharding, ": ", Seconds(choice.predicted_seconds),
                k == c.cheapest ? " (cheapest)" : "", "\n        wanted by ", absl::StrJoin(choice.wanted_by, "; "),
                "\n");
      for (const std::string& r : choice.reshards) StrAppend(&s, "        reshard ", r, "\n");
    }
    if (!c.chosen) StrAppend(&s, "    * neither\n");
    StrAppend(&s, "      why: ", c.why, "\n");
  }
  StrAppend(&s, "dot_general strategies: ", dots_.size(), "\n");
  for (size_t i = 0; i < dots_.size(); ++i) {
    const spmd::DotDecision& d = dots_[i];
    StrAppend(&s, "  [", i, "] ", d.equation, "\n");
    for (size_t k = 0; k < d.candidates.size(); ++k) {
      const spmd::DotCandidate& c = d.candidates[k];
      StrAppend(&s, "    ", d.chosen == k ? "* " : "  ", c.strategy, ": compute ", Seconds(c.compute_seconds),
                " + communication ", Seconds(c.communication_seconds), " -> ", Seconds(c.predicted_seconds), "\n");
    }
    StrAppend(&s, "      why: ", d.why, "\n");
  }
  return s;
}

}  // namespace jx

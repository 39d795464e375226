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

// The collectives Reshard issues to move a tensor of type `aval` from `from` to `to` (slices
// are local and free), as text: "all-gather f32[2,16] over 'x' (4 shards)".
std::vector<std::string> ReshardText(const ShapedArray& aval, const DimShardings& from, const DimShardings& to,
                                     const Mesh& mesh) {
  std::vector<std::string> out;
  Shape local = spmd::LocalShape(aval.shape, from, mesh);
  for (const spmd::ReshardStep& step : spmd::ReshardSteps(aval.ndim(), from, to)) {
    int64_t n = 1;
    for (const std::string& a : step.axes) n *= mesh.axis_size(a);
    const std::string shards = StrCat(" over ", AxesLabel(step.axes), " (", n, " shards)");
    switch (step.kind) {
      case spmd::ReshardStep::kAllToAll:
        out.push_back(StrCat("all-to-all ", ShapedArray{local, aval.dtype}.str(), shards));
        local[step.source_dim] *= n;
        local[step.dim] /= n;
        break;
      case spmd::ReshardStep::kAllGather:
        out.push_back(StrCat("all-gather ", ShapedArray{local, aval.dtype}.str(), shards));
        local[step.dim] *= n;
        break;
      case spmd::ReshardStep::kSlice:
        local[step.dim] /= n;
        break;
    }
  }
  return out;
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
      const std::vector<std::string> steps = ReshardText(side.aval, side.sharding, to, mesh);
      if (steps.empty()) continue;
      const double seconds = spmd::ReshardSeconds(side.aval, side.sharding, to, mesh, cost);
      choice.predicted_seconds += seconds;
      choice.reshards.push_back(StrCat(side.tensor, " to ", spmd::ShardingText(to, side.aval.ndim()), ": ",
                                       absl::StrJoin(steps, ", then "), " (", Seconds(seconds), ")"));
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
      StrAppend(&s, "    ", d.chosen == k ? "* " : "  ", c.strategy, ": predicted ", Seconds(c.predicted_seconds),
                " (compute ", Seconds(c.compute_seconds), ", communication ", Seconds(c.communication_seconds), ")\n");
    }
    StrAppend(&s, "      why: ", d.why, "\n");
  }
  return s;
}

}  // namespace jx

#include "jx/sharding/spmd/sharding_search.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "jx/core/errors.h"
#include "jx/core/str_util.h"
#include "jx/devices/tpu/tpu_chip.h"
#include "jx/sharding/spmd/spmd_program.h"

namespace jx {
namespace {

using Axes = std::vector<std::string>;

std::string AxesLabel(const Axes& axes) {
  std::string joined = absl::StrJoin(axes, ", ", [](std::string* o, const std::string& a) { StrAppend(o, "'", a, "'"); });
  return axes.size() == 1 ? joined : StrCat("(", joined, ")");
}

std::string Seconds(double s) { return absl::StrFormat("%.3g s", s); }

std::string BytesText(int64_t n) {
  const double b = static_cast<double>(n);
  if (b >= 1 << 30) return absl::StrFormat("%.2f GiB", b / (1 << 30));
  if (b >= 1 << 20) return absl::StrFormat("%.2f MiB", b / (1 << 20));
  if (b >= 1 << 10) return absl::StrFormat("%.1f KiB", b / (1 << 10));
  return StrCat(n, " B");
}

// The last name of a key path: ".layers[1].w_up" -> "w_up", "['w1']" -> "w1", "[0]" -> "[0]".
std::string LastName(const std::string& path) {
  if (!path.empty() && path.back() == ']') {
    const size_t open = path.rfind('[');
    std::string inner = path.substr(open + 1, path.size() - open - 2);
    if (inner.size() >= 2 && (inner.front() == '\'' || inner.front() == '"')) return inner.substr(1, inner.size() - 2);
    return path.substr(open);
  }
  const size_t dot = path.rfind('.');
  return dot == std::string::npos ? path : path.substr(dot + 1);
}

// Which dimension a Megatron split takes (1: column-parallel, 0: row-parallel), by the leaf's
// last name, or alternating in the order unknown names first appear (`seen`).
int MegatronDim(const std::string& name, std::map<std::string, int>& seen) {
  static const char* const kRow[] = {"wo", "w_out", "out", "out_proj", "o_proj", "w2", "down", "w_down", "down_proj", "embed"};
  static const char* const kColumn[] = {"wq",   "wk",   "wv",   "wqkv",   "q",      "k",       "v",      "w1",     "w3",
                                        "wi",   "w_in", "up",   "gate",   "w_up",   "w_gate",  "unembed", "lm_head"};
  for (const char* n : kRow) {
    if (name == n) return 0;
  }
  for (const char* n : kColumn) {
    if (name == n) return 1;
  }
  auto it = seen.find(name);
  if (it != seen.end()) return it->second;
  const int dim = seen.size() % 2 == 0 ? 1 : 0;
  seen.emplace(name, dim);
  return dim;
}

struct Recipe {
  std::string name;
  Axes batch, sequence, fsdp, tp;
};

std::string RecipeAxes(const Recipe& r) {
  std::vector<std::string> parts;
  if (!r.batch.empty()) parts.push_back(StrCat("batch over ", AxesLabel(r.batch)));
  if (!r.sequence.empty()) parts.push_back(StrCat("sequence over ", AxesLabel(r.sequence)));
  if (!r.fsdp.empty()) parts.push_back(StrCat("params over ", AxesLabel(r.fsdp)));
  if (!r.tp.empty()) parts.push_back(StrCat("Megatron over ", AxesLabel(r.tp)));
  return absl::StrJoin(parts, ", ");
}

int64_t AxesSize(const Mesh& mesh, const Axes& axes) {
  int64_t n = 1;
  for (const std::string& a : axes) n *= mesh.axis_size(a);
  return n;
}

DimShardings LeafSharding(const Recipe& r, const spmd::SearchLeaf& leaf, const Mesh& mesh,
                          std::map<std::string, int>& megatron_seen) {
  const Shape& shape = leaf.aval.shape;
  DimShardings s(shape.size());
  auto put = [&](size_t d, const Axes& axes) {
    if (!axes.empty() && d < shape.size() && s[d].empty() && shape[d] % AxesSize(mesh, axes) == 0) s[d] = axes;
  };
  if (leaf.batch) {
    put(0, r.batch);
    put(1, r.sequence);
  } else if (shape.size() >= 2) {
    if (!r.tp.empty()) put(static_cast<size_t>(MegatronDim(LastName(leaf.key_path), megatron_seen)), r.tp);
    if (!r.fsdp.empty()) {
      // The largest dimension still free that the axes divide (the first of equals).
      std::optional<size_t> pick;
      for (size_t d = 0; d < shape.size(); ++d) {
        if (!s[d].empty() || shape[d] % AxesSize(mesh, r.fsdp) != 0) continue;
        if (!pick || shape[d] > shape[*pick]) pick = d;
      }
      if (pick) put(*pick, r.fsdp);
    }
  }
  for (const Axes& d : s) {
    if (!d.empty()) return s;
  }
  return {};
}

std::vector<Recipe> Recipes(const Mesh& mesh) {
  const Axes all = mesh.axis_names();
  std::vector<Recipe> out = {{"dp", all, {}, {}, {}},
                             {"fsdp", all, {}, all, {}},
                             {"tp", {}, {}, {}, all},
                             {"sp", {}, all, {}, {}}};
  if (all.size() >= 2) {
    const Axes data(all.begin(), all.end() - 1), model{all.back()};
    out.push_back({"dp x tp", data, {}, {}, model});
    out.push_back({"fsdp x tp", data, {}, data, model});
  }
  return out;
}

int64_t ChipHbm(const Mesh& mesh) {
  const auto* chip = dynamic_cast<const tpu::TpuChip*>(mesh.devices().front());
  if (chip == nullptr) {
    throw ValueError(StrCat("search_sharding: the mesh ", mesh.ToString(), " is not of simulated TPU chips (",
                            mesh.devices().front()->platform(), "); strategies are costed on a pod"));
  }
  return chip->hbm()->capacity();
}

StrategyResult Plan(const spmd::Strategy& strategy, const ClosedJaxpr& global, const Mesh& mesh,
                    absl::Span<const spmd::SearchLeaf> leaves, int64_t budget) {
  StrategyResult r;
  r.name = strategy.name;
  r.axes = strategy.axes;
  std::vector<spmd::MaybeSharding> in;
  for (size_t i = 0; i < leaves.size(); ++i) {
    in.emplace_back(strategy.leaf_shardings[i]);
    r.leaf_shardings.emplace_back(mesh, spmd::SpecOf(strategy.leaf_shardings[i], leaves[i].aval.ndim()));
  }
  try {
    auto program = spmd::SpmdProgram::Build(global, mesh, in, {}, StrCat("search_sharding ", strategy.name));
    r.plan = program->Plan();
    r.step_seconds = r.plan.step.wall_seconds;
    for (const tpu::ChipStepReport& chip : r.plan.step.chips) r.compute_seconds = std::max(r.compute_seconds, chip.compute_seconds);
    r.communication_seconds = r.plan.step.communication_seconds();
    r.exposed_seconds = r.plan.step.exposed_communication_seconds();
    r.hbm_peak_bytes = r.plan.hbm_peak_bytes;
    r.fits = r.hbm_peak_bytes <= budget;
  } catch (const Error& e) {
    // A strategy the program cannot take: the table says why.
    r.error = e.what();
  }
  return r;
}

}  // namespace

namespace spmd {

std::vector<bool> BatchArgs(absl::Span<const int> batch_argnums, size_t num_args) {
  std::vector<bool> out(num_args, false);
  if (batch_argnums.empty()) {
    out.back() = true;
    return out;
  }
  for (int a : batch_argnums) {
    if (a < 0 || static_cast<size_t>(a) >= num_args) {
      throw ValueError(StrCat("search_sharding: batch_argnums names argument ", a, " but the step was given ", num_args,
                              " arguments"));
    }
    out[static_cast<size_t>(a)] = true;
  }
  return out;
}

std::vector<Strategy> StandardStrategies(const Mesh& mesh, absl::Span<const SearchLeaf> leaves) {
  std::vector<Strategy> out;
  for (const Recipe& r : Recipes(mesh)) {
    Strategy s{r.name, RecipeAxes(r), {}};
    std::map<std::string, int> megatron_seen;
    for (const SearchLeaf& leaf : leaves) s.leaf_shardings.push_back(LeafSharding(r, leaf, mesh, megatron_seen));
    out.push_back(std::move(s));
  }
  return out;
}

ShardingSearch SearchShardings(const ClosedJaxpr& global, const Mesh& mesh, absl::Span<const SearchLeaf> leaves,
                               const SearchOptions& options) {
  const int64_t capacity = ChipHbm(mesh);
  const int64_t budget = options.hbm_bytes.value_or(capacity);
  std::vector<Strategy> strategies = StandardStrategies(mesh, leaves);
  for (const std::string& name : options.strategies) {
    if (std::none_of(strategies.begin(), strategies.end(), [&](const Strategy& s) { return s.name == name; })) {
      std::vector<std::string> names;
      for (const Strategy& s : strategies) names.push_back(StrCat("'", s.name, "'"));
      throw ValueError(StrCat("search_sharding: no strategy '", name, "' on ", mesh.ToString(), "; the strategies are ",
                              absl::StrJoin(names, ", ")));
    }
  }
  std::vector<std::string> names;
  for (const SearchLeaf& leaf : leaves) names.push_back(leaf.name);
  std::vector<StrategyResult> results;
  for (const Strategy& s : strategies) {
    if (!options.strategies.empty() &&
        std::find(options.strategies.begin(), options.strategies.end(), s.name) == options.strategies.end()) {
      continue;
    }
    results.push_back(Plan(s, global, mesh, leaves, budget));
  }
  return ShardingSearch(std::move(names), std::move(results), budget, mesh.ToString());
}

}  // namespace spmd

ShardingSearch::ShardingSearch(std::vector<std::string> leaf_names, std::vector<StrategyResult> results,
                               int64_t hbm_bytes, std::string mesh)
    : leaf_names_(std::move(leaf_names)), results_(std::move(results)), hbm_bytes_(hbm_bytes), mesh_(std::move(mesh)) {
  for (size_t k = 0; k < results_.size(); ++k) {
    if (results_[k].fits && (!best_ || results_[k].step_seconds < results_[*best_].step_seconds)) best_ = k;
  }
}

std::string ShardingSearch::ToString() const {
  std::string s = StrCat("sharding search on ", mesh_, ", HBM budget ", BytesText(hbm_bytes_), " per chip\n");
  StrAppend(&s, absl::StrFormat("  %-10s %-11s %-11s %-11s %-11s %-11s %-5s %s\n", "strategy", "step time", "compute",
                                "comm", "exposed", "HBM peak", "fits", "shards"));
  for (size_t k = 0; k < results_.size(); ++k) {
    const StrategyResult& r = results_[k];
    const std::string mark = best_ == k ? "* " : "  ";
    if (!r.error.empty()) {
      StrAppend(&s, mark, absl::StrFormat("%-10s not planned: %s\n", r.name, r.error));
      continue;
    }
    StrAppend(&s, mark,
              absl::StrFormat("%-10s %-11s %-11s %-11s %-11s %-11s %-5s %s\n", r.name, Seconds(r.step_seconds),
                              Seconds(r.compute_seconds), Seconds(r.communication_seconds), Seconds(r.exposed_seconds),
                              BytesText(r.hbm_peak_bytes), r.fits ? "yes" : "no", r.axes));
  }
  if (!best_) {
    StrAppend(&s, "no strategy fits in ", BytesText(hbm_bytes_), " per chip\n");
    return s;
  }
  const StrategyResult& best = results_[*best_];
  StrAppend(&s, "best: ", best.name, " (", best.axes, ")\n");
  for (size_t i = 0; i < leaf_names_.size(); ++i) {
    StrAppend(&s, "  ", leaf_names_[i], ": ", best.leaf_shardings[i].spec().ToString(), "\n");
  }
  return s;
}

}  // namespace jx

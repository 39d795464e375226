// search_sharding: an opt-in search over the standard sharding strategies of a training step
// on a mesh of TPU chips. Each candidate assigns a sharding to every leaf of the parameters
// and of the batch (the rule below), is partitioned, compiled for the mesh's chips and costed
// (predicted step time with its collectives, per-chip HBM peak), and the result is a table and
// the fastest candidate that fits in HBM. JAX's propagation picks shardings without a cost
// model; this compares whole strategies by one.
//
//   auto search = jx::search_sharding(train_step, mesh).lower(params, batch);
//   std::cout << search.ToString();          // strategy, step time, HBM peak, fits
//   const jx::StrategyResult& best = search.results()[*search.best()];
//   best.leaf_shardings[i];                  // the NamedSharding of leaf i (leaf_names[i])
//
// The last argument of the step is the batch (SearchOptions::batch_argnums names others, as
// for step(params, tokens, targets)); the others (parameters, optimizer state) are parameters. With the mesh's axes A (all of them) and, on a mesh of two or more axes, the
// data axes D (all but the last) and the model axis M (the last), the strategies are:
//   dp          batch over A; parameters replicated
//   fsdp        batch over A; parameters' largest dimension over A
//   tp          batch replicated; Megatron splits over A
//   sp          batch's sequence (dimension 1) over A; parameters replicated
//   dp x tp     batch over D; Megatron splits over M
//   fsdp x tp   batch over D; parameters' largest dimension left by Megatron over D; Megatron
//               splits over M
// Megatron splits apply to parameters of rank >= 2: a column-parallel weight splits dimension
// 1 (its output features or heads), a row-parallel one dimension 0. The leaf's last key-path
// name decides: wo, w_out, out, out_proj, o_proj, w2, down, w_down, down_proj and embed are
// row-parallel; wq, wk, wv, wqkv, q, k, v, w1, w3, wi, w_in, up, gate, w_up, w_gate,
// unembed and lm_head are column-parallel; other names alternate column, row, column, ... in
// the order each name first appears (w1/w2 pairs of an MLP, and an optimizer state's copy of
// a weight shares its name and so its split). Rank 0 and 1 parameters stay replicated. The
// batch's dimension 0 is its batch, dimension 1 its sequence. A dimension the axes do not
// divide stays unsharded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/types/span.h"
#include "jx/core/jaxpr.h"
#include "jx/sharding/mesh.h"
#include "jx/sharding/named_sharding.h"
#include "jx/transforms/api.h"
#include "jx/transforms/staging.h"

namespace jx {

struct SearchOptions {
  // Per-chip HBM budget in bytes (default: the chips' HBM capacity): a candidate fits when its
  // peak is within it (leave headroom, or plan for a smaller chip).
  std::optional<int64_t> hbm_bytes;
  // The strategies to try by name ("dp", "fsdp x tp", ...); empty: every one that applies.
  std::vector<std::string> strategies;
  // The arguments that are the batch (empty: the last one).
  std::vector<int> batch_argnums;
};

// One candidate strategy, planned.
struct StrategyResult {
  std::string name;                          // "fsdp x tp"
  std::string axes;                          // "batch/fsdp over 'data', tp over 'model'"
  std::vector<NamedSharding> leaf_shardings;  // per leaf of the step's arguments
  double step_seconds = 0;                   // predicted, collectives included
  double compute_seconds = 0;
  double communication_seconds = 0;
  int64_t hbm_peak_bytes = 0;                // per chip: arguments, outputs and temporaries
  bool fits = false;
  std::string error;                         // why it could not be planned (then fits is false)
};

class ShardingSearch {
 public:
  ShardingSearch(std::vector<std::string> leaf_names, std::vector<StrategyResult> results, int64_t hbm_bytes,
                 std::string mesh);
  const std::vector<std::string>& leaf_names() const { return leaf_names_; }
  const std::vector<StrategyResult>& results() const { return results_; }
  // The fastest candidate that fits (nullopt: none fits).
  std::optional<size_t> best() const { return best_; }
  // The table (strategy, predicted step time, compute, communication, HBM peak, fits), the
  // best marked '*', then the best's sharding of every leaf.
  std::string ToString() const;

 private:
  std::vector<std::string> leaf_names_;
  std::vector<StrategyResult> results_;
  int64_t hbm_bytes_ = 0;
  std::string mesh_;
  std::optional<size_t> best_;
};

namespace spmd {

// A leaf of the step's arguments: its name for the table, its key path (the rule reads its
// last name) and global type, and whether it belongs to the batch.
struct SearchLeaf {
  std::string name;      // "argument 0 ['w1']"
  std::string key_path;  // "['w1']"
  ShapedArray aval;
  bool batch = false;
};

// One strategy's sharding of every leaf (the rule in the header comment).
struct Strategy {
  std::string name;
  std::string axes;
  std::vector<DimShardings> leaf_shardings;
};

// The standard strategies for `mesh` applied to `leaves`.
std::vector<Strategy> StandardStrategies(const Mesh& mesh, absl::Span<const SearchLeaf> leaves);

// Plans every strategy (options.strategies filters them) for the step `global` (its invars
// are the leaves, in order) on `mesh`, a mesh of TPU chips.
ShardingSearch SearchShardings(const ClosedJaxpr& global, const Mesh& mesh, absl::Span<const SearchLeaf> leaves,
                               const SearchOptions& options);

// Which of num_args arguments are the batch: batch_argnums, or the last when it is empty.
// Throws ValueError on an argnum out of range.
std::vector<bool> BatchArgs(absl::Span<const int> batch_argnums, size_t num_args);

template <typename F>
class ShardingSearcher {
 public:
  ShardingSearcher(F f, Mesh mesh, SearchOptions options)
      : f_(std::move(f)), mesh_(std::move(mesh)), options_(std::move(options)) {}

  // Traces the step on the arguments' types (their own shardings are ignored) and plans every
  // strategy; the last argument is the batch.
  template <typename... Args>
  ShardingSearch lower(const Args&... args) const {
    static_assert(sizeof...(Args) >= 1, "search_sharding needs the step's arguments, the batch last");
    const std::vector<api_internal::FlatArg> flat = api_internal::FlattenArgs(args...);
    const std::vector<bool> is_batch = BatchArgs(options_.batch_argnums, flat.size());
    std::vector<SearchLeaf> leaves;
    std::vector<ShapedArray> avals;
    std::vector<int> all;
    for (size_t a = 0; a < flat.size(); ++a) {
      all.push_back(static_cast<int>(a));
      for (size_t j = 0; j < flat[a].leaves.size(); ++j) {
        const Array& x = flat[a].leaves[j];
        const std::string path = flat[a].def.KeyPath(j);
        leaves.push_back({path.empty() ? StrCat("argument ", a) : StrCat("argument ", a, " ", path), path,
                          ShapedArray{x.shape(), x.dtype(), x.weak_type()}, is_batch[a]});
        avals.push_back(leaves.back().aval);
      }
    }
    F f = f_;
    tree::TreeDef out_def;
    ClosedJaxpr global = TraceToJaxpr(
        [&](absl::Span<const Array> l) {
          return api_internal::CallFlat<F, Args...>(f, api_internal::Substitute(flat, all, l), &out_def);
        },
        avals, "search_sharding", api_internal::ArgLabels(flat));
    return SearchShardings(global, mesh_, leaves, options_);
  }

 private:
  F f_;
  Mesh mesh_;
  SearchOptions options_;
};

}  // namespace spmd

template <typename F>
spmd::ShardingSearcher<F> search_sharding(F f, Mesh mesh, SearchOptions options = {}) {
  return spmd::ShardingSearcher<F>(std::move(f), std::move(mesh), std::move(options));
}

}  // namespace jx

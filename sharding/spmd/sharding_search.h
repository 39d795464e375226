// search_sharding: an opt-in search over the standard sharding strategies of a training step
// on a mesh of TPU chips. Each candidate assigns a sharding to every leaf of the parameters
// and of the batch (the rule below), is partitioned, lowered for the mesh's chips and costed
// by a dry run (SpmdProgram::Plan: predicted step time with its collectives and their overlap,
// per-chip HBM peak; nothing runs, nothing is allocated), and the result is a table and
// the fastest candidate that fits in HBM. JAX's propagation picks shardings without a cost
// model; this compares whole strategies by one.
//
//   auto search = jx::search_sharding(train_step, mesh).lower(params, batch);
//   // or abstractly, nothing allocated: eval_shape gives a struct's ShapeDtypeTree
//   auto abstract = jx::search_sharding(train_step, mesh)
//                       .lower(jx::eval_shape(init_params)(key), jx::ShapeDtypeStruct{{4096, 1024}});
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
#include <tuple>
#include <type_traits>
#include <string>
#include <utility>
#include <vector>

#include "absl/types/span.h"
#include "jx/core/jaxpr.h"
#include "jx/sharding/mesh.h"
#include "jx/sharding/named_sharding.h"
#include "jx/core/pytree.h"
#include "jx/devices/tpu/pod_plan.h"
#include "jx/sharding/spmd/spmd_jit.h"
#include "jx/transforms/eval_shape.h"
#include "jx/transforms/jit.h"
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
  double step_seconds = 0;                   // predicted wall time of one step
  double compute_seconds = 0;                // the busiest chip's compute
  double communication_seconds = 0;          // collectives on the ICI, all of them
  double exposed_seconds = 0;                // of those, what compute did not hide
  int64_t hbm_peak_bytes = 0;                // per chip: arguments, outputs and temporaries
  bool fits = false;                         // hbm_peak_bytes within the budget
  std::string error;                         // why it could not be planned (then fits is false)
  tpu::PodPlan plan;                         // the whole dry run (collectives, links, MFU)
};

class ShardingSearch {
 public:
  ShardingSearch(std::vector<std::string> leaf_names, std::vector<StrategyResult> results, int64_t hbm_bytes,
                 std::string mesh);
  const std::vector<std::string>& leaf_names() const { return leaf_names_; }
  const std::vector<StrategyResult>& results() const { return results_; }
  // The fastest candidate that fits (nullopt: none fits).
  std::optional<size_t> best() const { return best_; }
  // The table (strategy, predicted step time, compute, communication and its exposed part,
  // HBM peak, fits), the best marked '*', then the best's sharding of every leaf.
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

namespace search_internal {

// The type f takes where the caller gave an A at position I: an Array for a ShapeDtypeStruct,
// f's parameter type for a ShapeDtypeTree, else A.
template <typename F, size_t I, typename A>
auto ParamTag() {
  if constexpr (std::is_same_v<A, ShapeDtypeStruct>) {
    return std::type_identity<Array>{};
  } else if constexpr (std::is_same_v<A, ShapeDtypeTree>) {
    // The step's parameter type there (a typed lambda or function object: CallableArgs).
    return std::type_identity<std::tuple_element_t<I, typename CallableArgs<F>::type>>{};
  } else {
    return std::type_identity<A>{};
  }
}
template <typename F, size_t I, typename A>
using ParamT = typename decltype(ParamTag<F, I, A>())::type;

// One argument's leaves (name, key path, type) and tree structure.
struct ArgLeaves {
  std::vector<std::string> paths;
  std::vector<ShapedArray> avals;
  tree::TreeDef def;
};
template <typename A>
ArgLeaves LeavesOf(const A& arg) {
  ArgLeaves out;
  auto add = [&](const tree::TreeDef& def, size_t j, ShapedArray aval) {
    out.paths.push_back(def.KeyPath(j));
    out.avals.push_back(std::move(aval));
  };
  if constexpr (std::is_same_v<A, ShapeDtypeStruct>) {
    out.def = tree::flatten(Array(0.f)).second;
    add(out.def, 0, ShapedArray{arg.shape, arg.dtype, arg.weak_type});
  } else if constexpr (std::is_same_v<A, ShapeDtypeTree>) {
    out.def = arg.def;
    for (size_t j = 0; j < arg.leaves.size(); ++j) {
      add(out.def, j, ShapedArray{arg.leaves[j].shape, arg.leaves[j].dtype, arg.leaves[j].weak_type});
    }
  } else {
    static_assert(tree::IsPytree<A>, "search_sharding takes pytrees of Arrays, ShapeDtypeStructs or ShapeDtypeTrees");
    auto [leaves, def] = tree::flatten(arg);
    out.def = std::move(def);
    for (size_t j = 0; j < leaves.size(); ++j) {
      add(out.def, j, ShapedArray{leaves[j].shape(), leaves[j].dtype(), leaves[j].weak_type()});
    }
  }
  return out;
}

}  // namespace search_internal

template <typename F>
class ShardingSearcher {
 public:
  ShardingSearcher(F f, Mesh mesh, SearchOptions options)
      : f_(std::move(f)), mesh_(std::move(mesh)), options_(std::move(options)) {}

  // Traces the step on the arguments' types and plans every strategy. Arguments are pytrees
  // of Arrays or abstract ones (nothing allocated): a ShapeDtypeStruct for an Array, a
  // ShapeDtypeTree (eval_shape.h) for a struct; their own shardings are ignored.
  template <typename... Args>
  ShardingSearch lower(const Args&... args) const {
    static_assert(sizeof...(Args) >= 1, "search_sharding needs the step's arguments");
    return Lower(std::index_sequence_for<Args...>{}, args...);
  }

 private:
  template <size_t... I, typename... Args>
  ShardingSearch Lower(std::index_sequence<I...>, const Args&... args) const {
    const std::vector<search_internal::ArgLeaves> per_arg = {search_internal::LeavesOf(args)...};
    const std::vector<bool> is_batch = BatchArgs(options_.batch_argnums, per_arg.size());
    std::vector<SearchLeaf> leaves;
    std::vector<ShapedArray> avals;
    std::vector<std::string> labels;
    for (size_t a = 0; a < per_arg.size(); ++a) {
      for (size_t j = 0; j < per_arg[a].avals.size(); ++j) {
        const std::string& path = per_arg[a].paths[j];
        leaves.push_back({path.empty() ? StrCat("argument ", a) : StrCat("argument ", a, " ", path), path,
                          per_arg[a].avals[j], is_batch[a]});
        avals.push_back(per_arg[a].avals[j]);
        labels.push_back(leaves.back().name);
      }
    }
    ClosedJaxpr global = TraceToJaxpr(
        [&](absl::Span<const Array> xs) {
          size_t next = 0;
          auto rebuild = [&]<typename T>(std::type_identity<T>, const search_internal::ArgLeaves& arg) {
            std::vector<Array> l(xs.begin() + static_cast<ptrdiff_t>(next),
                                 xs.begin() + static_cast<ptrdiff_t>(next + arg.avals.size()));
            next += arg.avals.size();
            return tree::unflatten<T>(arg.def, l);
          };
          // Braced initialization evaluates left to right (leaf order).
          std::tuple<search_internal::ParamT<F, I, Args>...> rebuilt{
              rebuild(std::type_identity<search_internal::ParamT<F, I, Args>>{}, per_arg[I])...};
          auto [outs, def] = tree::flatten(std::apply(f_, rebuilt));
          return Arrays(outs.begin(), outs.end());
        },
        avals, "search_sharding", labels);
    return SearchShardings(global, mesh_, leaves, options_);
  }

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

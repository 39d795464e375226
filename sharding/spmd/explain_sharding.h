// explain_sharding: why a jit with shardings partitions the way it does. For each propagation
// conflict (an equation whose tensors want one value sharded differently) it lists the
// candidate shardings, which one propagation kept and why, and what each would cost in
// resharding collectives on the mesh; for each dot_general with a sharded contraction, the
// partitioner's candidate strategies with their predicted seconds and the winner. JAX's
// propagators keep the first choice they meet and use no cost model; this prices them.
//
//   auto step = jx::jit(f, jx::in_shardings{rows, cols});
//   jx::ShardingExplanation why = jx::explain_sharding(step).lower(a, b);
//   std::cout << why.ToString();
//   why.conflicts()[0].candidates[why.conflicts()[0].cheapest].predicted_seconds;
//
// explain_sharding(f, in_shardings{...}, out_shardings{...}) is the same for a plain f.
// lower() takes what the jit's lower() takes; the program is the jit's (cached) program.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "jx/sharding/spmd/partitioner.h"
#include "jx/sharding/spmd/propagation.h"
#include "jx/sharding/spmd/spmd_cost.h"
#include "jx/sharding/spmd/spmd_jit.h"
#include "jx/sharding/spmd/spmd_program.h"

namespace jx {

// One way to settle a propagation conflict and its price: the resharding of every tensor of
// the equation that asked for something else.
struct ConflictChoice {
  std::string sharding;            // "'x' on dimension of size 16" (the factor's axes)
  std::vector<std::string> wanted_by;  // "operand 0 P('x', None) (given)"
  double predicted_seconds = 0;
  std::vector<std::string> reshards;   // "operand 1: all-gather f32[8,4] over 'y' (2 shards)"
};

struct ConflictExplanation {
  std::string equation;            // "add f32[8,16], f32[8,16] -> f32[8,16]"
  std::string what;                // "dimension of size 16 sharded as 'x' and as 'y'"
  std::vector<ConflictChoice> candidates;
  std::optional<size_t> chosen;    // what propagation kept (none: the factor ends unsharded)
  size_t cheapest = 0;             // the candidate with the least predicted seconds
  std::string why;
};

class ShardingExplanation {
 public:
  // The explanation of a partitioned program (its conflicts priced on its mesh).
  static ShardingExplanation Of(const spmd::SpmdProgram& program);

  const std::vector<ConflictExplanation>& conflicts() const { return conflicts_; }
  const std::vector<spmd::DotDecision>& dots() const { return dots_; }
  // The mesh and its cost model, the shardings, every conflict and every dot with their
  // candidates (the chosen one marked '*') and predicted seconds.
  std::string ToString() const;

 private:
  std::string header_;
  std::vector<ConflictExplanation> conflicts_;
  std::vector<spmd::DotDecision> dots_;
};

namespace spmd {

// explain_sharding(step): lower() partitions like step.lower() and explains the program.
template <typename F>
class ShardingExplainer {
 public:
  explicit ShardingExplainer(SpmdJitted<F> step) : step_(std::move(step)) {}
  template <typename... Args>
  ShardingExplanation lower(const Args&... args) const {
    return ShardingExplanation::Of(step_.lower(args...).program());
  }

 private:
  SpmdJitted<F> step_;
};

}  // namespace spmd

template <typename F>
spmd::ShardingExplainer<F> explain_sharding(spmd::SpmdJitted<F> step) {
  return spmd::ShardingExplainer<F>(std::move(step));
}
template <typename F>
spmd::ShardingExplainer<F> explain_sharding(F f, in_shardings in, out_shardings out = out_shardings{}) {
  return spmd::ShardingExplainer<F>(jit(std::move(f), std::move(in), std::move(out)));
}

}  // namespace jx

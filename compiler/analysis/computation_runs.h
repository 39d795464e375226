// How many times each computation of a module runs per run of the entry: the entry once; a
// while's body `trip count` times and its condition `trip count + 1` times per run of the
// while (ConstantWhileTripCount; a loop without a constant trip count counts once, and the
// computations under it are marked inexact); a call's callee once; each branch of a
// conditional once (an upper bound: one branch runs). Fused computations and reducers
// (to_apply) are not control flow and are not listed. Nested loops multiply.
//
//   ComputationRuns runs = CountComputationRuns(module);
//   runs.RunsOf(body);           // 8 for a body inside a loop of 4 inside a loop of 2
//   runs.IsExact(body);          // false under a loop whose trip count was not found
#pragma once

#include <cstdint>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "jx/compiler/hlo/hlo_module.h"

namespace jx::hlo {

struct ComputationRuns {
  absl::flat_hash_map<const HloComputation*, int64_t> runs;
  // Computations reached through a loop without a constant trip count.
  absl::flat_hash_set<const HloComputation*> inexact;
  // 0 for computations not reached through control flow.
  int64_t RunsOf(const HloComputation* c) const {
    auto it = runs.find(c);
    return it == runs.end() ? 0 : it->second;
  }
  bool IsExact(const HloComputation* c) const { return !inexact.contains(c); }
};

ComputationRuns CountComputationRuns(const HloModule& module);

}  // namespace jx::hlo

// Shared pieces of the passes that rewrite while loops (WhileLoopAllReduceCodeMotion,
// WhileLoopOuterProductToDot): who reads a loop's state, which loops a pass may rewrite alone,
// and splats of zeros for new state.
//
//   const auto reads = TupleReads(*loop->while_body(), loop->shape().tuple_shapes_size());
//   if (reads && (*reads)[2].size() == 1) ...          // state element 2 is read once
//   for (HloInstruction* loop : LoopsWithOwnComputations(*module, *computation)) ...
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "jx/compiler/hlo/hlo_builder.h"
#include "jx/compiler/hlo/hlo_computation.h"
#include "jx/compiler/hlo/hlo_module.h"

namespace jx::hlo {

// The get-tuple-elements of a computation's tuple parameter, by index (`size` elements);
// nullopt when the parameter is read any other way (then an element may be read unseen).
std::optional<std::vector<std::vector<HloInstruction*>>> TupleReads(const HloComputation& c, int64_t size);

// How many instructions of the module call each computation.
absl::flat_hash_map<const HloComputation*, int64_t> CallerCounts(const HloModule& module);

// The while loops of `computation` whose body and condition no other instruction calls (a
// body shared by several loops is left alone: rewriting it for one would change the others).
std::vector<HloInstruction*> LoopsWithOwnComputations(
    const HloComputation& computation, const absl::flat_hash_map<const HloComputation*, int64_t>& callers);

// A splat of zeros of `shape` (an array shape) added through b.
absl::StatusOr<HloInstruction*> Zeros(HloBuilder& b, const Shape& shape);

}  // namespace jx::hlo

// Shared pieces of the passes that rewrite while loops (WhileLoopAllReduceCodeMotion,
// WhileLoopOuterProductToDot, WhileLoopUnreadInitElimination): who reads a loop's state, which
// loops a pass may rewrite alone, the trip counter, and splats of zeros for new state.
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

// Whether the module may hold a while loop, from its list of computations alone: a loop's
// body and condition are neither the entry nor fusion computations (the verifier checks that
// nothing calls the entry and that a fusion computation's only caller is its fusion), so a
// module without another computation has no loop. A while pass returns early on the others
// without reading every instruction (a traced program of 100k equations has one computation
// until fusion).
bool MayHoldWhileLoops(const HloModule& module);

// How many instructions of the module call each computation.
absl::flat_hash_map<const HloComputation*, int64_t> CallerCounts(const HloModule& module);

// The while loops of `computation` whose body and condition no other instruction calls (a
// body shared by several loops is left alone: rewriting it for one would change the others).
std::vector<HloInstruction*> LoopsWithOwnComputations(
    const HloComputation& computation, const absl::flat_hash_map<const HloComputation*, int64_t>& callers);

// The loop's trip counter: state element `index` starts at `start`, the body adds 1 to it and
// the condition is counter < limit (limit a constant), so trip t sees start + t, t in
// [0, trips). nullopt for loops of another form.
struct Counter {
  int64_t index = 0;
  int64_t start = 0;
  int64_t trips = 0;
};
std::optional<Counter> UnitStepCounter(const HloInstruction& loop);

// Whether `index` (in the loop's body) takes each value of [0, trips) once over the trips: the
// trip index, or its reverse trips - 1 - t (how a reverse scan, or the transpose of a scan,
// reads and writes its rows).
bool TakesEachRowOnce(const HloInstruction* index, const HloInstruction& loop, const Counter& c);

// The value of an integer scalar constant (nullopt for anything else).
std::optional<int64_t> IntegerConstant(const HloInstruction* v);

// A splat of zeros of `shape` (an array shape) added through b.
absl::StatusOr<HloInstruction*> Zeros(HloBuilder& b, const Shape& shape);

}  // namespace jx::hlo

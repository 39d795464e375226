// Internal to the CPU backend: a scalar computation (a reduce's reducer, a scatter's update
// computation) applied to whole vectors, so the elementwise kernels run it over many elements
// at once: GenericReduceExpander emits it per halving round, the scatter-apply kernel per
// round of distinct destinations.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "jx/compiler/hlo/hlo_builder.h"
#include "jx/compiler/hlo/hlo_computation.h"

namespace jx::cpu::internal {

// Whether the computation is elementwise code over scalar parameters (constants and a root
// tuple allowed) that ApplyToVectors can emit for vectors.
bool IsVectorizable(const hlo::HloComputation& computation);

// computation(a..., x...) on vectors of `length` elements (one per parameter: parameter p
// reads a[p] for p < a.size(), else x[p - a.size()]), emitted into b; a scalar constant is
// broadcast. Returns the root's values (the tuple's elements, or the root).
absl::StatusOr<std::vector<hlo::HloInstruction*>> ApplyToVectors(hlo::HloBuilder& b,
                                                                 const hlo::HloComputation& computation,
                                                                 const std::vector<hlo::HloInstruction*>& a,
                                                                 const std::vector<hlo::HloInstruction*>& x,
                                                                 int64_t length);

}  // namespace jx::cpu::internal

// Reductions whose partial results no single all-reduce combines (reduce_prod, reduce_and,
// reduce_or, argmax, argmin; their sharding rules have Combiner::kNone). With the reduced
// dimension sharded, each device reduces its own block; the partial results are all-gathered
// over the reduced dimension's mesh axes (one value per device, not the operand) and reduced
// again. argmax/argmin gather each block's extreme value with its global index and pick the
// first block holding the overall extreme, so ties and NaNs resolve to the lowest index as on
// one device. Internal to the SPMD partitioner (propagation keeps such dims sharded).
#pragma once

#include <string>
#include <vector>

#include "jx/core/array.h"
#include "jx/core/jaxpr.h"

namespace jx::spmd {

// Whether p's sharded reduced dimensions are combined here (else they are gathered first).
bool CombinesPartialReductions(Primitive p);

// The equation's result from `partial`, the result of e's primitive on this device's operand
// block `operand`, where the reduced dimensions are sharded over `axes` (major first).
Array CombinePartialReduction(const Eqn& e, const Array& operand, const Array& partial,
                              const std::vector<std::string>& axes);

}  // namespace jx::spmd

// optimization_barrier: JAX's lax.optimization_barrier on a flat list of arrays. The values
// come back unchanged, bound as one `optimization_barrier` equation (HLO's opt-barrier over a
// tuple of them) that no compiler pass moves computations across or CSEs through: everything
// computed from the results waits for all the operands.
//
// A rematerialization (the backward pass's copy of a checkpoint's forward part) passes its
// operands, the cotangents among them, through one once it is inlined, as JAX's remat lowering
// does: the recomputation is neither merged with the forward pass (which would keep its values
// live after all) nor scheduled before the backward pass reaches it.
//
//   Arrays fenced = jx::OptimizationBarrier({x, ct});  // fenced[0] == x, fenced[1] == ct
#pragma once

#include "absl/types/span.h"
#include "jx/core/array.h"
#include "jx/core/primitive.h"

namespace jx {

Arrays OptimizationBarrier(absl::Span<const Array> values);

// The primitive (its rules are registered with checkpoint's, RegisterCheckpoint).
Primitive OptimizationBarrierPrimitive();

}  // namespace jx

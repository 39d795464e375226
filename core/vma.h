// Varying manual axes (ShapedArray::vma) in abstract evaluation. AbstractEval applies JAX's
// standard rule to every primitive: the outputs vary over the union of the operands' axes
// (shard_map inserts pvary so operands agree). Primitives whose abstract evaluation sets
// the outputs' axes itself (the collectives: psum makes its result invariant) opt out.
#pragma once

#include "jx/core/primitive.h"

namespace jx {

// Marks p's abstract evaluation as setting its outputs' vma itself. Thread-safe.
void MarkComputesVma(Primitive p);
bool ComputesVma(Primitive p);

}  // namespace jx

// Varying manual axes (ShapedArray::vma) in abstract evaluation. AbstractEval applies JAX's
// standard rule to every primitive: the outputs vary over the union of the operands' axes
// (shard_map inserts pvary so operands agree). Primitives whose abstract evaluation sets
// the outputs' axes itself (the collectives: psum makes its result invariant) opt out.
#pragma once

#include <vector>

#include "absl/types/span.h"
#include "jx/core/array.h"
#include "jx/core/primitive.h"

namespace jx {

// Marks p's abstract evaluation as setting its outputs' vma itself. Thread-safe.
void MarkComputesVma(Primitive p);
bool ComputesVma(Primitive p);

// While a shard_map body is traced with check_vma, Bind passes the operands of every
// primitive with two or more through this hook first (JAX's standard_insert_pvary, applied
// at every bind so transformations' rules get it too): it returns true and fills `joined`
// with the operands made to vary over the same axes (pvary bound where needed), or false to
// keep them. Thread-local; returns the previous hook (nullptr: none).
using OperandVmaHook = bool (*)(Primitive p, absl::Span<const Array> inputs, Arrays* joined);
OperandVmaHook SetOperandVmaHook(OperandVmaHook hook);

// The operands of an op about to be broadcast together (jnp's shape promotion) made to vary
// over the same manual axes through the hook, in place (untouched, at no cost, without one:
// eager dispatch). Joining before the broadcast pvaries a bias, not its activation-sized
// broadcast, so reverse mode psums the bias's cotangent rather than an activation-sized one.
void JoinOperandVma(Primitive p, std::vector<Array>* operands);

}  // namespace jx

// The few array operations the transformations themselves need: adding cotangents
// (add_any, JAX's add_jaxvals), zeros, and moving or materializing a batch dimension.
// lax registers every rule of these primitives; they are bound like any other.
#pragma once

#include <cstdint>

#include "jx/core/array.h"
#include "jx/core/primitive.h"

namespace jx {

// Sum of two cotangents of the same aval (linear in both; JAX's add_any).
inline const Primitive kAddAny = Primitive::Intern("add_any");

Array AddAny(const Array& a, const Array& b);
// An array of zeros: concrete, or under a trace for 64 KiB and more a staged broadcast of a
// scalar zero (nothing of the full size is allocated while tracing).
Array Zeros(const ShapedArray& aval);
// x with axis `from` moved to position `to` (a transpose; no-op when equal).
Array MoveAxis(const Array& x, int64_t from, int64_t to);
// x broadcast to have a new axis of size n at position `axis`.
Array BroadcastAxis(const Array& x, int64_t n, int64_t axis);
// x summed over its leading axis (the cotangent of a value broadcast along a new axis 0).
Array SumLeadingAxis(const Array& x);

}  // namespace jx

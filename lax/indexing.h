// NumPy/JAX indexing of arrays: what x[...], x.index(...) and x.at(...) lower to (JAX's
// _rewriting_take and _scatter_update, jax/_src/numpy/indexing.py).
//
// Reading: an index of integers (static or traced 0-d arrays), slices and newaxis becomes
// lax::slice (+ rev for negative steps) and dynamic_slice, then a reshape; an index with
// integer arrays (or a boolean mask, turned into integer arrays on the host) becomes one
// gather, with NumPy's placement of the broadcast index dims (where the advanced indices
// stand when they are adjacent, else first). Out-of-bounds integers clamp (JAX's retrieval
// semantics) unless the mode is "fill".
//
// Updating: a basic index (integers, unit-step slices) becomes dynamic_slice + the combining
// op + dynamic_update_slice; integer arrays (with integers, unit-step slices, newaxis) become
// one scatter into x (the gather's dimension numbers, as JAX's); an index with a strided slice
// scatters into x flattened, at the flat positions the same index selects from an iota. The
// CPU backend runs both in place when x is dead after the update or donated. Out-of-bounds
// updates are dropped by default (JAX's rule). A 0-d boolean index is NumPy's new axis of
// size 1 (true) or 0 (false).
#pragma once

#include <optional>
#include <string_view>

#include "absl/types/span.h"
#include "jx/core/array.h"
#include "jx/core/errors.h"
#include "jx/lax/slicing_ops.h"

namespace jx::lax {

// JAX's jax.errors.NonConcreteBooleanIndexError: a boolean mask index whose values are not
// known at trace time (its result shape would depend on them). Use jnp::where instead.
class NonConcreteBooleanIndexError : public IndexError {
 public:
  using IndexError::IndexError;
};

// How an index update combines the new values with the old ones.
enum class UpdateOp { kSet, kAdd, kMultiply, kMin, kMax };

namespace internal {

// x[indices] with the given out-of-bounds mode (kPromiseInBounds and kClip clamp; kFillOrDrop
// fills out-of-bounds integer indices with fill_value, JAX's default fill when absent).
Array GetItem(const Array& x, absl::Span<const Index> indices,
              GatherScatterMode mode = GatherScatterMode::kPromiseInBounds,
              std::optional<double> fill_value = std::nullopt);

// x.at[indices].<op>(values): values are cast to x's dtype and broadcast to x[indices]'s shape.
// kFillOrDrop drops out-of-bounds updates; kClip and kPromiseInBounds clamp the indices.
Array UpdateItem(const Array& x, absl::Span<const Index> indices, const Array& values, UpdateOp op,
                 GatherScatterMode mode = GatherScatterMode::kFillOrDrop);

// The GatherScatterMode of JAX's mode strings: "" (the default for reads: promise_in_bounds,
// clamping; for updates: drop), "clip", "drop", "fill", "promise_in_bounds". Throws ValueError
// naming op for any other.
GatherScatterMode ParseIndexMode(std::string_view mode, bool for_update, std::string_view op);

}  // namespace internal
}  // namespace jx::lax

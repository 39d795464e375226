// Gather and scatter numerics (XLA's semantics, with JAX's batching dims), written once for
// eager lax::gather / scatter / scatter_add and the CPU backend's gather and scatter kernels.
//
//   Gather: every batch position (an index vector) reads one slice of slice_sizes starting
//     at the vector's start position; offset dims of the output walk the slice, the other
//     output dims walk the batch positions. A start whose slice would leave the operand is
//     clamped into it (XLA, JAX's CLIP and PROMISE_IN_BOUNDS), or with `fill_value` the slice
//     is filled with it instead (JAX's FILL_OR_DROP).
//   Scatter: every update window is combined into `out` (which holds the operand's values)
//     at its start position, windows in row-major order of the update positions, so later
//     duplicates win (overwrite) or combine in that order. A window that would leave the
//     operand is dropped (XLA, JAX's FILL_OR_DROP and PROMISE_IN_BOUNDS), or with `clamp`
//     its start is clamped into the operand (JAX's CLIP).
//
// Arrays are dense and row-major. The index vector is the last dim of the indices, or one
// implicit component per index (XLA's index_vector_dim == rank of indices). Index values of
// any integer type are read as int64 (uint64 beyond int64's range saturates).
// Fast paths: taking rows (one index per row, the slice a contiguous run: a memcpy per row)
// and combining rows; results never depend on the thread count.
//
// Usage (take rows 3 and 0 of a f32[4, 8]):
//   GatherDims dn{.offset_dims = {1}, .collapsed_slice_dims = {0}, .start_index_map = {0}};
//   const int32_t idx[] = {3, 0};
//   Gather(4, x, {4, 8}, {DType::kInt32, idx, {2, 1}}, dn, {1, 8}, nullptr, out, {2, 8});
#pragma once

#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "jx/core/dtype.h"

namespace jx::lax::kernels {

struct GatherDims {
  std::vector<int64_t> offset_dims, collapsed_slice_dims, start_index_map;
  std::vector<int64_t> operand_batching_dims{}, start_indices_batching_dims{};
  // True when each index is a scalar (no index vector dim in the indices' shape).
  bool implicit_index_vector = false;
};

struct ScatterDims {
  std::vector<int64_t> update_window_dims, inserted_window_dims, scatter_dims_to_operand_dims;
  std::vector<int64_t> operand_batching_dims{}, scatter_indices_batching_dims{};
  bool implicit_index_vector = false;
};

// An integer index array.
struct IndexArray {
  DType dtype;
  const void* data;
  absl::Span<const int64_t> shape;
};

// out (shape out_shape, elements of elem_size bytes) = gather(operand, indices). fill_value
// (elem_size bytes) selects FILL_OR_DROP; nullptr clamps.
void Gather(int64_t elem_size, const void* operand, absl::Span<const int64_t> operand_shape,
            const IndexArray& indices, const GatherDims& dims, absl::Span<const int64_t> slice_sizes,
            const void* fill_value, void* out, absl::Span<const int64_t> out_shape);

// How an update combines with the value it lands on. For bool, add and max are or, mul and
// min are and. Integers wrap. Float max/min propagate NaN (as the quiet NaN) and order
// -0 < +0. 16-bit floats combine in f32 and round once at the end (so a sum of duplicates
// rounds once, as eager scatter_add always has).
enum class ScatterCombiner { kOverwrite, kAdd, kMul, kMin, kMax };

// Applies the updates (dtype, shape updates_shape) into out (dtype, shape operand_shape).
void Scatter(DType dtype, ScatterCombiner combiner, void* out, absl::Span<const int64_t> operand_shape,
             const IndexArray& indices, const void* updates, absl::Span<const int64_t> updates_shape,
             const ScatterDims& dims, bool clamp);

// The flat position in the operand each update element lands on, in the updates' row-major
// order (the order Scatter applies them), or -1 where its window is dropped: where
// scatter_apply runs its update computation, once per update (eager lax::scatter_apply and
// the CPU backend's scatter-apply kernel). out holds one entry per update element.
void ScatterDestinations(absl::Span<const int64_t> operand_shape, const IndexArray& indices,
                         absl::Span<const int64_t> updates_shape, const ScatterDims& dims, bool clamp, int64_t* out);

}  // namespace jx::lax::kernels

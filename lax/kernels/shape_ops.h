// Shape-op numerics on raw row-major buffers (internal), shared by the eager impl rules
// (lax/shape_ops.cc) and the compiled CPU backend (compiler/backend/cpu/
// data_movement_kernels.cc). They only move bytes, so they dispatch on the element size:
// contiguous runs go through memcpy/fill, transposes through cache tiles with SIMD
// micro-kernels, and rows are split over the pool when large.
//
//   kernels::Transpose(x, {2048, 1024}, {1, 0}, /*item_size=*/4, out);
#pragma once

#include <cstdint>

#include "absl/types/span.h"
#include "jx/core/dtype.h"

namespace jx::lax::kernels {

// out (dims out_shape) = broadcast of in (dims in_dims): operand dim i becomes out dim
// broadcast_dims[i] (size 1 or equal).
void BroadcastInDim(const void* in, absl::Span<const int64_t> in_dims, absl::Span<const int64_t> out_shape,
                    absl::Span<const int64_t> broadcast_dims, int64_t item_size, void* out);

// out = in with its dims permuted: out dim j is in dim perm[j].
void Transpose(const void* in, absl::Span<const int64_t> in_shape, absl::Span<const int64_t> perm,
               int64_t item_size, void* out);

// out = in reversed along `dims`.
void Rev(const void* in, absl::Span<const int64_t> shape, absl::Span<const int64_t> dims, int64_t item_size,
         void* out);

// out (dims shape, element type dtype, not bool) = the index along `dimension`.
void Iota(DType dtype, absl::Span<const int64_t> shape, int64_t dimension, void* out);

}  // namespace jx::lax::kernels

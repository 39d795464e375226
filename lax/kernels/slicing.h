// Slicing numerics on raw row-major buffers (internal), shared by the eager impl rules
// (lax/slicing_ops.cc) and the compiled CPU backend (compiler/backend/cpu/
// dynamic_slice_kernels.cc), so both move exactly the same elements:
//   - StridedCopy: a block of elements between two strided layouts, inner contiguous runs
//     through memcpy, rows split over the pool when large;
//   - Slice, Concatenate and Pad: static windows, joins and borders, the same copies;
//   - DynamicSlice / DynamicUpdateSlice with XLA's start-index semantics: each start is
//     clamped so the window lies inside the operand. DynamicUpdateSlice may run in place
//     (out == operand), then it writes only the window.
// No Eigen here: the header is light enough for the backend's kernel files.
//
//   int64_t starts[2] = {i, 0};
//   kernels::DynamicSlice(x, {1000, 256}, starts, {1, 256}, /*item_size=*/4, row);
#pragma once

#include <cstdint>

#include "absl/types/span.h"
#include "jx/core/dtype.h"

namespace jx::lax::kernels {

// Copies a block of `sizes` elements: element idx moves from src[sum idx*src_strides] to
// dst[sum idx*dst_strides] (strides in elements). Dims contiguous in both are merged; inner
// contiguous runs use memcpy; rows are split over the pool. item_size is 1, 2, 4 or 8.
void StridedCopy(const void* src, absl::Span<const int64_t> src_strides, void* dst,
                 absl::Span<const int64_t> dst_strides, absl::Span<const int64_t> sizes,
                 int64_t item_size);

// out (dims out_dims) = in[starts + i * strides] (strides empty: all 1).
void Slice(const void* in, absl::Span<const int64_t> in_dims, absl::Span<const int64_t> starts,
           absl::Span<const int64_t> strides, absl::Span<const int64_t> out_dims, int64_t item_size, void* out);

// out (dims out_dims) = the operands joined along `dim`; operand i has out_dims with
// out_dims[dim] replaced by sizes_along_dim[i].
void Concatenate(absl::Span<const void* const> operands, absl::Span<const int64_t> sizes_along_dim,
                 absl::Span<const int64_t> out_dims, int64_t dim, int64_t item_size, void* out);

// out (dims out_dims) = in padded with *padding_value: low[d] elements before each axis
// (negative: cropped), interior[d] >= 0 between neighbours, the rest after.
void Pad(const void* in, absl::Span<const int64_t> in_dims, const void* padding_value,
         absl::Span<const int64_t> low, absl::Span<const int64_t> interior, absl::Span<const int64_t> out_dims,
         int64_t item_size, void* out);

// Fills n elements of item_size bytes with *value.
void Fill(const void* value, int64_t n, int64_t item_size, void* out);

// Element i of an integer buffer of `dtype` as int64 (uint64 values past int64's range
// saturate). Throws InternalError for a non-integer dtype.
int64_t ReadIndexElement(const void* data, DType dtype, int64_t i);

// XLA's clamp of a dynamic start index: into [0, dim - window].
inline int64_t ClampStart(int64_t start, int64_t dim, int64_t window) {
  const int64_t hi = dim - window;
  return start < 0 ? 0 : (start > hi ? hi : start);
}

// out (dims slice_sizes) = operand[starts .. starts + slice_sizes), starts clamped.
void DynamicSlice(const void* operand, absl::Span<const int64_t> operand_dims,
                  absl::Span<const int64_t> starts, absl::Span<const int64_t> slice_sizes,
                  int64_t item_size, void* out);

// out = operand with the window at `starts` (clamped) replaced by update. out may be the
// operand's own memory (in place: only the window is written); otherwise the operand is
// copied first.
void DynamicUpdateSlice(const void* operand, const void* update,
                        absl::Span<const int64_t> operand_dims,
                        absl::Span<const int64_t> update_dims, absl::Span<const int64_t> starts,
                        int64_t item_size, void* out);

}  // namespace jx::lax::kernels

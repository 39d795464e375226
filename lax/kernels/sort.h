// Sorting numerics, written once for eager lax::sort / lax::top_k and the CPU backend's sort
// kernel.
//
// Order: JAX's total order. Every dtype maps to an unsigned integer key of its width: floats
// flip their bits so that -NaN < -inf < ... < -0.0 < +0.0 < ... < inf < NaN, signed integers
// flip the sign bit, unsigned integers and booleans are their own keys.
//
//   Sort: sorts every line of `shape` along `dimension`, the first num_keys operands as
//     lexicographic keys (ascending, or descending with `descending`), stably; all operands
//     are permuted alike.
//   TopK: the k largest of each row of [rows, n] in descending order, ties to the lower index
//     (the first k of a stable descending sort of the row and its iota); row r's results go
//     to values / indices [r * out_row_stride, + k) (either may be null).
//
// Usage:
//   SortOperand ops[] = {{DType::kFloat32, x, y}, {DType::kInt32, iota, perm}};
//   Sort(ops, {rows, n}, /*dimension=*/1, /*num_keys=*/1, /*descending=*/false);
#pragma once

#include <cstdint>

#include "absl/types/span.h"
#include "jx/core/dtype.h"

namespace jx::lax::kernels {

struct SortOperand {
  DType dtype;
  const void* in;
  void* out;  // may not alias in
};

void Sort(absl::Span<const SortOperand> operands, absl::Span<const int64_t> shape, int64_t dimension,
          int64_t num_keys, bool descending);

void TopK(DType dtype, const void* x, void* values, int32_t* indices, int64_t rows, int64_t n, int64_t k,
          int64_t out_row_stride);

}  // namespace jx::lax::kernels

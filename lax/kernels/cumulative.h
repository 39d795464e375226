// Cumulative reductions (running scans along one axis), written once for eager lax::cumsum /
// cumprod / cummax / cummin / cumlogsumexp and the CPU backend's scan kernel.
//
// The operand is viewed as [outer, n, inner] around the scanned axis; y[o, i, j] folds
// init and x[o, 0..i, j] (or x[o, i..n-1, j] with reverse), each in O(1) per element.
// Running values are carried in the reduction family's accumulator type (lax/kernels/
// reducer.h): float sums and products in f64 (f64 sums Neumaier-compensated), 16-bit float
// max/min in f32, integers wrap; float max/min follow XLA (NaN wins as the quiet NaN,
// -0 < +0). Log-sum-exp (floats) keeps a running maximum, so it never overflows.
//
// Usage (cumsum along axis 1 of f32[4, 100, 3]):
//   Cumulative(DType::kFloat32, CumulativeOp::kSum, x, y, 4, 100, 3, /*reverse=*/false, nullptr);
#pragma once

#include <cstdint>

#include "jx/core/dtype.h"

namespace jx::lax::kernels {

enum class CumulativeOp { kSum, kProd, kMax, kMin, kLogSumExp };

// Whether the kernel runs op on dtype (not bool; log-sum-exp only on floats).
bool CumulativeAccepts(CumulativeOp op, DType dtype);

// init: one element of dtype to start every line from, or null for op's identity.
void Cumulative(DType dtype, CumulativeOp op, const void* x, void* y, int64_t outer, int64_t n, int64_t inner,
                bool reverse, const void* init);

}  // namespace jx::lax::kernels

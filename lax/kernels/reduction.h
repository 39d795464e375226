// Reductions over a set of axes (sum, prod, max, min, and, or) and argmax/argmin on the CPU:
// the numerics eager execution (lax/reduction_ops.cc) and the compiled CPU backend
// (compiler/backend/cpu/reduce_kernels.cc) share, so a reduction gives the same bits jitted
// or not. Plain interface: a dtype, row-major dims, the reduced axes and raw buffers.
//
//   // column sums of a f32[rows, cols] array
//   kernels::Reduce(kernels::ReduceOp::kSum, DType::kFloat32, {rows, cols}, {0}, x, out);
//   // index (int32) of the first maximum of each row
//   kernels::ArgReduce(/*find_max=*/true, DType::kFloat32, {rows, cols}, 1, DType::kInt32, x, idx);
//
// Accumulation (the monoids of reducer.h): float sums and products of f16/bf16/f32 accumulate
// in f64 and round once (correctly, also to 16 bits); max/min propagate NaN; integer sums and
// products wrap; bool reduces as 0/1 bytes (max = or, min = and). The order of a float
// reduction depends only on the shape: never on the thread count (work is split at fixed
// boundaries) nor on the buffers' addresses (no alignment peeling), so equal inputs give equal
// bits wherever they sit.
#pragma once

#include <cstdint>

#include "absl/types/span.h"
#include "jx/core/dtype.h"

namespace jx::lax::kernels {

// The monoid of a reduction (reducer.h's ReduceKind, restated so that includers of this
// header do not see Eigen).
enum class ReduceOp { kSum, kProd, kMax, kMin, kAnd, kOr };

// What Reduce writes to `out`.
enum class ReduceOutput {
  kDType,    // the operand's dtype: the accumulator rounded once (eager's result)
  kFloat64,  // for ReducesInFloat64 reductions, the f64 accumulator itself (a compiled
             // program's reduce in f64, rounded by the convert that follows it)
};

// True for the reductions that accumulate in f64 although their dtype is narrower: float sums
// and products of f16, bf16 and f32.
bool ReducesInFloat64(ReduceOp op, DType dtype);

// True when Reduce computes op over dtype (and/or: integers and bool; sum/prod: not bool).
bool IsReduceDefined(ReduceOp op, DType dtype);

// out = op-reduction of x (dtype `dtype`, row-major `dims`) over `axes` (distinct, each in
// [0, rank)); out is row-major over the dims not reduced. An empty reduction gives the
// identity. Preconditions (checked by the callers' shape rules): IsReduceDefined(op, dtype),
// and output == kFloat64 only where ReducesInFloat64(op, dtype).
void Reduce(ReduceOp op, DType dtype, absl::Span<const int64_t> dims, absl::Span<const int64_t> axes,
            const void* x, void* out, ReduceOutput output = ReduceOutput::kDType);

// out (integer dtype index_dtype, row-major over dims without `axis`) = the index along `axis`
// of the first maximum (find_max) or minimum of x; a NaN counts as the extreme, so the first
// NaN wins. Precondition: dims[axis] > 0.
void ArgReduce(bool find_max, DType dtype, absl::Span<const int64_t> dims, int64_t axis, DType index_dtype,
               const void* x, void* out);

}  // namespace jx::lax::kernels

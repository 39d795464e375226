// GEMM entry point (internal): batched, strided C = alpha * op(A) * op(B) [+ C] through Eigen's
// general matrix product, multi-threaded on the jx pool. dot_general, conv_general_dilated and
// (later) the compiler's dot/conv kernels call it. Also the operand packer they share: a
// strided, converting, cache-tiled copy.
//
//   kernels::GemmArgs g;
//   g.dtype = float32; g.m = m; g.n = n; g.k = k;
//   g.a = a; g.lda = k;              // A: m x k row-major
//   g.b = b; g.ldb = n;              // B: k x n row-major
//   g.c = c; g.ldc = n;              // C: m x n row-major
//   kernels::Gemm(g);
#pragma once

#include <cstdint>
#include <functional>

#include "absl/types/span.h"
#include "jx/core/dtype.h"

namespace jx::lax::kernels {

// A fused consumer of a kernel's output: called with [begin, end) ranges of the output's
// elements (row-major) once they hold their final values, each element exactly once,
// possibly from several threads at once.
using OutputEpilogue = std::function<void(int64_t begin, int64_t end)>;

struct GemmArgs {
  // Element type of A, B and C: float32, float64, int32 or int64 (integers wrap around).
  DType dtype = DType::kFloat32;
  int64_t batch = 1, m = 0, n = 0, k = 0;
  // op(A) is m x k: A[i, p] = a[i * lda + p], or with transpose_a a[p * lda + i].
  const void* a = nullptr;
  int64_t lda = 0, stride_a = 0;  // stride_*: elements between consecutive batch entries
  bool transpose_a = false;
  // op(B) is k x n: B[p, j] = b[p * ldb + j], or with transpose_b b[j * ldb + p].
  const void* b = nullptr;
  int64_t ldb = 0, stride_b = 0;
  bool transpose_b = false;
  // C is m x n row-major: C[i, j] = c[i * ldc + j].
  void* c = nullptr;
  int64_t ldc = 0, stride_c = 0;
  double alpha = 1.0;
  bool accumulate = false;  // C += alpha * op(A) op(B) instead of C = ...
  // False: run on the calling thread (callers that already split work over the pool).
  bool parallel = true;
  // Optional: called as on_block(batch, i0, i1, j0, j1) on the thread that computed block
  // C[batch][i0:i1, j0:j1], right after it is final (the blocks partition every product).
  std::function<void(int64_t, int64_t, int64_t, int64_t, int64_t)> on_block;
};

// True for the dtypes Gemm computes in.
constexpr bool IsGemmDType(DType d) {
  return d == DType::kFloat32 || d == DType::kFloat64 || d == DType::kInt32 || d == DType::kInt64;
}

// Runs the batched GEMM. Large products are split over the pool: over the batch when it is
// large, else each product into row (or column) blocks, each a single-threaded Eigen product.
// Results do not depend on the thread count (see kGemmSplitAlign). Float products with a
// transposed A and a plain B, both K-major as stored, of at most 256 rows and columns and a
// depth at least as long, run the direct kernel of gemm_k_major.h instead of Eigen's.
void Gemm(const GemmArgs& args);

// A product whose rows (or columns) are split into separate GEMMs at multiples of this gives
// the bits of the unsplit product: it is a multiple of the register panel heights and widths
// of Eigen's kernels (3 packets of rows: 48 floats with AVX-512, 24 with AVX2; nr columns),
// so every row and column runs through the same kernel path either way.
inline constexpr int64_t kGemmSplitAlign = 48;

// dst (dense row-major over `sizes`, dtype dst_dtype) = convert(src[sum_i idx_i * src_strides_i])
// with src of dtype src_dtype. Handles any permutation/broadcast (stride 0) of the source;
// transposing copies go through cache tiles. Conversions follow convert_element_type for
// the values GEMM produces (bool destinations: value != 0). Parallel when large.
void PackConvert(DType src_dtype, const void* src, absl::Span<const int64_t> sizes,
                 absl::Span<const int64_t> src_strides, DType dst_dtype, void* dst);

// The GEMM dtype a result of dtype out_dtype accumulates in, given the operand dtypes:
// floats in float32 (float64 when any is float64), integers and bool in int32 (int64 when
// any is 64-bit).
DType AccumulationDType(DType lhs, DType rhs, DType out_dtype);

// True when data of dtype from can be read as dtype to without conversion (equal, or
// signed/unsigned integers of the same width: GEMM's wrap-around arithmetic is identical).
constexpr bool SameRepresentation(DType from, DType to) {
  if (from == to) return true;
  const bool int_from = IsSignedInt(from) || IsUnsignedInt(from);
  const bool int_to = IsSignedInt(to) || IsUnsignedInt(to);
  return int_from && int_to && ItemSize(from) == ItemSize(to);
}

}  // namespace jx::lax::kernels

// A direct GEMM kernel (internal to gemm.cc) for C = alpha * A^T B [+ C] where A (k x m) and
// B (k x n) are both stored row-major, i.e. both operands are K-major: a weight gradient
// summed over a long batch or time axis (dW = H^T G of an RNN's 1000 steps). Row p of A and
// row p of B are exactly the slivers Goto's micro-kernel reads from packed panels, so this
// kernel reads them in place instead of copying both into packed panels as Eigen does, which
// for K >> M, N keeps the product at the machine's GEMM rate (bench/dot_bench).
//
// Every element of C is summed in the same order (blocks of KMajorDepthBlock<T>() steps,
// each an FMA chain from zero, added to C in turn) wherever it sits in C and however C is
// split over threads: edge tiles run the same vector code on zero-padded copies.
//
//   if (UseKMajorGemm(m, n, k)) KMajorGemm(a, lda, b, ldb, c, ldc, m, n, k, 1.0f, false);
#pragma once

#include <cstdint>

namespace jx::lax::kernels {

// True when the direct kernel beats Eigen's packed product for a K-major product of this
// shape (measured: bench/dot_bench.cc, BM_KMajorGemm vs BM_KMajorGemmEigen).
bool UseKMajorGemm(int64_t m, int64_t n, int64_t k);

// C[i, j] (= or +=) alpha * sum_p a[p * lda + i] * b[p * ldb + j], for C m x n with row
// stride ldc. Single-threaded: gemm.cc splits C over the pool.
void KMajorGemm(const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc, int64_t m,
                int64_t n, int64_t k, float alpha, bool accumulate);
void KMajorGemm(const double* a, int64_t lda, const double* b, int64_t ldb, double* c, int64_t ldc, int64_t m,
                int64_t n, int64_t k, double alpha, bool accumulate);

}  // namespace jx::lax::kernels

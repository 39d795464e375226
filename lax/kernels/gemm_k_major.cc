// The K-major direct GEMM: a register-blocked micro-kernel (MR rows x two packets of columns
// of C in registers; per step p, two packet loads of B's row p and MR broadcasts from A's
// row p) over cache blocks of the depth, reading both operands where they lie.
#include "jx/lax/kernels/gemm_k_major.h"

#include <algorithm>
#include <cstring>

#include <Eigen/Core>

namespace jx::lax::kernels {
namespace {

template <typename T>
using PacketOf = typename Eigen::internal::packet_traits<T>::type;

template <typename T>
constexpr int kPacket = Eigen::internal::unpacket_traits<PacketOf<T>>::size;

// Rows of a micro tile: 2 * MR accumulators, two B packets and a broadcast fit the vector
// registers (32 with AVX-512, 16 with AVX2/SSE).
constexpr int kRows = EIGEN_ARCH_DEFAULT_NUMBER_OF_REGISTERS >= 32 ? 12 : 6;

// Columns of a micro tile: two packets.
template <typename T>
constexpr int kCols = 2 * kPacket<T>;

// Steps per depth block: the block of B a tile column reads (depth x kCols) fills half of a
// 32 KB L1, so it stays there while the kernel walks down the rows of C; A's block
// (depth x m) stays in L2.
template <typename T>
constexpr int64_t kDepthBlock = 16384 / (kCols<T> * static_cast<int64_t>(sizeof(T)));

// c[r * ldc + j] (= or +=) alpha * sum_{p < kc} a[p * lda + r] * b[p * ldb + j] for r < kRows,
// j < kCols<T>.
template <typename T>
void MicroKernel(int64_t kc, const T* a, int64_t lda, const T* b, int64_t ldb, T* c, int64_t ldc, T alpha,
                 bool overwrite) {
  using Packet = PacketOf<T>;
  using Eigen::internal::padd;
  using Eigen::internal::pmadd;
  using Eigen::internal::pmul;
  using Eigen::internal::pset1;
  using Eigen::internal::ploadu;
  using Eigen::internal::pstoreu;
  constexpr int P = kPacket<T>;
  Packet acc0[kRows], acc1[kRows];
#pragma GCC unroll 16
  for (int r = 0; r < kRows; ++r) acc0[r] = acc1[r] = pset1<Packet>(T(0));
  for (int64_t p = 0; p < kc; ++p) {
    const T* ap = a + p * lda;
    const Packet b0 = ploadu<Packet>(b + p * ldb);
    const Packet b1 = ploadu<Packet>(b + p * ldb + P);
#pragma GCC unroll 16
    for (int r = 0; r < kRows; ++r) {
      const Packet ar = pset1<Packet>(ap[r]);
      acc0[r] = pmadd(ar, b0, acc0[r]);
      acc1[r] = pmadd(ar, b1, acc1[r]);
    }
  }
  const Packet al = pset1<Packet>(alpha);
#pragma GCC unroll 16
  for (int r = 0; r < kRows; ++r) {
    T* cr = c + r * ldc;
    Packet v0 = pmul(al, acc0[r]), v1 = pmul(al, acc1[r]);
    if (!overwrite) {
      v0 = padd(ploadu<Packet>(cr), v0);
      v1 = padd(ploadu<Packet>(cr + P), v1);
    }
    pstoreu(cr, v0);
    pstoreu(cr + P, v1);
  }
}

// rows x cols of src (row stride lds) into the top-left of a zeroed dst_rows x dst_cols tile.
template <typename T>
void CopyPadded(const T* src, int64_t lds, int64_t rows, int64_t cols, T* dst, int64_t dst_rows, int64_t dst_cols) {
  for (int64_t i = 0; i < dst_rows; ++i) {
    T* d = dst + i * dst_cols;
    const int64_t valid = i < rows ? cols : 0;
    if (valid > 0) std::memcpy(d, src + i * lds, static_cast<size_t>(valid) * sizeof(T));
    std::fill(d + valid, d + dst_cols, T(0));
  }
}

template <typename T>
void KMajorGemmTyped(const T* a, int64_t lda, const T* b, int64_t ldb, T* c, int64_t ldc, int64_t m, int64_t n,
                     int64_t k, T alpha, bool accumulate) {
  constexpr int64_t kR = kRows, kC = kCols<T>, kD = kDepthBlock<T>;
  // Zero-padded copies for edge tiles (a partial last column or row block), so they run the
  // micro-kernel's arithmetic unchanged.
  alignas(64) T a_pad[kD * kR];
  alignas(64) T b_pad[kD * kC];
  alignas(64) T c_pad[kR * kC];
  if (k <= 0) {
    if (!accumulate) {
      for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, T(0));
    }
    return;
  }
  for (int64_t k0 = 0; k0 < k; k0 += kD) {
    const int64_t kc = std::min(kD, k - k0);
    const bool overwrite = !accumulate && k0 == 0;
    for (int64_t j0 = 0; j0 < n; j0 += kC) {
      const int64_t cols = std::min(kC, n - j0);
      const T* bp = b + k0 * ldb + j0;
      int64_t ldbp = ldb;
      if (cols < kC) {
        CopyPadded(bp, ldb, kc, cols, b_pad, kc, kC);
        bp = b_pad;
        ldbp = kC;
      }
      for (int64_t i0 = 0; i0 < m; i0 += kR) {
        const int64_t rows = std::min(kR, m - i0);
        const T* ap = a + k0 * lda + i0;
        int64_t ldap = lda;
        if (rows < kR) {
          CopyPadded(ap, lda, kc, rows, a_pad, kc, kR);
          ap = a_pad;
          ldap = kR;
        }
        T* cp = c + i0 * ldc + j0;
        if (rows == kR && cols == kC) {
          MicroKernel<T>(kc, ap, ldap, bp, ldbp, cp, ldc, alpha, overwrite);
          continue;
        }
        if (!overwrite) CopyPadded(cp, ldc, rows, cols, c_pad, kR, kC);
        MicroKernel<T>(kc, ap, ldap, bp, ldbp, c_pad, kC, alpha, overwrite);
        for (int64_t i = 0; i < rows; ++i) {
          std::memcpy(cp + i * ldc, c_pad + i * kC, static_cast<size_t>(cols) * sizeof(T));
        }
      }
    }
  }
}

}  // namespace

bool UseKMajorGemm(int64_t m, int64_t n, int64_t k) {
  // One thread, CPU time, loaded 2-core AVX-512 VM (bench/dot_bench, medians of alternating
  // runs), GFLOP/s of this kernel vs Eigen's blocked product on the thread's workspace (this
  // library's other path): 256x256x1000 87-89 vs 78-82, 128x128x4096 80-83 vs 64-66,
  // 64x256x1000 81 vs 71-74. From 384 rows or columns Eigen's packed panels win (384x384x1000
  // 72 vs 79, 512x512x512 63 vs 75). Below 8 rows or columns Eigen's GEMV and small kernels
  // pad nothing.
  return std::min(m, n) >= 8 && std::max(m, n) <= 256 && k >= std::max(m, n);
}

void KMajorGemm(const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc, int64_t m,
                int64_t n, int64_t k, float alpha, bool accumulate) {
  KMajorGemmTyped(a, lda, b, ldb, c, ldc, m, n, k, alpha, accumulate);
}

void KMajorGemm(const double* a, int64_t lda, const double* b, int64_t ldb, double* c, int64_t ldc, int64_t m,
                int64_t n, int64_t k, double alpha, bool accumulate) {
  KMajorGemmTyped(a, lda, b, ldb, c, ldc, m, n, k, alpha, accumulate);
}

}  // namespace jx::lax::kernels

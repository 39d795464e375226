// GEMM through Eigen's general matrix product, split over the jx pool; and the converting,
// tiled operand packer.
//
// Threading: Eigen's own GEMM threading needs OpenMP, which jx does not use. Splitting a
// product into row (or column) blocks, each a single-threaded Eigen product on the jx pool,
// measured as fast as Eigen's Tensor contraction on an Eigen::ThreadPoolDevice with the same
// thread count (bench/dot_bench.cc), and keeps one pool in the process.
#include "jx/lax/kernels/gemm.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <type_traits>

#include <Eigen/Core>

#include "absl/container/inlined_vector.h"
#include "jx/core/errors.h"
#include "jx/core/parallel.h"
#include "jx/lax/kernels/dispatch.h"
#include "jx/lax/kernels/gemm_k_major.h"

namespace jx::lax::kernels {
namespace {

// Products below this many multiply-adds run on the calling thread.
constexpr int64_t kMinParallelMacs = int64_t{1} << 17;
// Row/column blocks of a split product are at least this wide.
constexpr int64_t kMinBlock = 16;

// Products with fewer rows + columns + depth than this are Eigen coefficient-wise loops
// (EIGEN_GEMM_TO_COEFFBASED_THRESHOLD); they pack nothing.
constexpr int64_t kCoeffProductThreshold = 20;

// The packing buffers of Eigen's blocked GEMM (A' and B' of Goto's algorithm), one per thread
// and reused: Eigen's own product allocates them per call (aligned malloc of mc*kc and kc*nc
// elements), and glibc maps and unmaps the large ones, a page fault per page on every call.
// A kernel never runs a nested GEMM on its thread (no pool work happens inside Eigen's
// kernel), so one buffer per thread is never used twice at once.
class PackingWorkspace {
 public:
  // At least `bytes` bytes, aligned for Eigen's widest packet; contents unspecified.
  void* Get(size_t bytes) {
    if (bytes > size_) {
      Eigen::internal::aligned_free(data_);
      data_ = nullptr;
      size_ = 0;
      // Grow geometrically so a run of slightly larger products does not reallocate each time.
      const size_t grown = std::max(bytes, size_ + size_ / 2);
      data_ = Eigen::internal::aligned_malloc(grown);
      size_ = grown;
    }
    return data_;
  }
  ~PackingWorkspace() { Eigen::internal::aligned_free(data_); }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

PackingWorkspace& ThreadPackingWorkspace() {
  thread_local PackingWorkspace workspace;
  return workspace;
}

// Eigen's level-3 blocking (cache block sizes kc, mc, nc and the packed panels) over the
// thread's workspace. For a row-major C the product runs transposed (C^T = op(B)^T op(A)^T),
// so Eigen's "lhs" is B and its rows are C's columns, as in Eigen's gemm_blocking_space.
template <typename T>
class WorkspaceBlocking : public Eigen::internal::level3_blocking<T, T> {
 public:
  WorkspaceBlocking(Eigen::Index m, Eigen::Index n, Eigen::Index k) {
    this->m_mc = n;
    this->m_nc = m;
    this->m_kc = k;
    Eigen::internal::computeProductBlockingSizes<T, T, 1>(this->m_kc, this->m_mc, this->m_nc,
                                                          Eigen::Index{1});
    const size_t size_a = static_cast<size_t>(this->m_mc * this->m_kc);
    const size_t size_b = static_cast<size_t>(this->m_kc * this->m_nc);
    // B' after A', at Eigen's alignment.
    constexpr size_t kAlign = EIGEN_MAX_ALIGN_BYTES > 0 ? EIGEN_MAX_ALIGN_BYTES : 16;
    const size_t offset_b = (size_a * sizeof(T) + kAlign - 1) / kAlign * kAlign;
    char* base = static_cast<char*>(ThreadPackingWorkspace().Get(offset_b + size_b * sizeof(T)));
    this->m_blockA = reinterpret_cast<T*>(base);
    this->m_blockB = reinterpret_cast<T*>(base + offset_b);
  }
};

template <typename T, bool kTransA, bool kTransB>
void GemmKernel(const T* a, int64_t lda, const T* b, int64_t ldb, T* c, int64_t ldc, int64_t m,
                int64_t n, int64_t k, T alpha, bool accumulate) {
  using RowMajor = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using ColMajor = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>;
  using AMat = std::conditional_t<kTransA, ColMajor, RowMajor>;
  using BMat = std::conditional_t<kTransB, ColMajor, RowMajor>;
  Eigen::Map<const AMat, Eigen::Unaligned, Eigen::OuterStride<>> A(a, m, k, Eigen::OuterStride<>(lda));
  Eigen::Map<const BMat, Eigen::Unaligned, Eigen::OuterStride<>> B(b, k, n, Eigen::OuterStride<>(ldb));
  Eigen::Map<RowMajor, Eigen::Unaligned, Eigen::OuterStride<>> C(c, m, n, Eigen::OuterStride<>(ldc));
  if (m > 1 && n > 1 && m + n + k >= kCoeffProductThreshold) {
    // The blocked GEMM Eigen's product would run (same kernels, same bits), packing into the
    // thread's workspace. Vector products (GEMV) and tiny ones pack nothing and stay below.
    if (!accumulate) C.setZero();
    WorkspaceBlocking<T> blocking(m, n, k);
    constexpr int kOrderA = kTransA ? Eigen::ColMajor : Eigen::RowMajor;
    constexpr int kOrderB = kTransB ? Eigen::ColMajor : Eigen::RowMajor;
    Eigen::internal::general_matrix_matrix_product<Eigen::Index, T, kOrderA, false, T, kOrderB, false,
                                                   Eigen::RowMajor, 1>::run(m, n, k, a, lda, b, ldb, c, 1, ldc,
                                                                            alpha, blocking);
    return;
  }
  if (accumulate) {
    C.noalias() += alpha * A * B;
  } else if (alpha == T(1)) {
    C.noalias() = A * B;
  } else {
    C.noalias() = alpha * A * B;
  }
}

template <typename T>
void GemmBlock(bool ta, bool tb, const T* a, int64_t lda, const T* b, int64_t ldb, T* c, int64_t ldc,
               int64_t m, int64_t n, int64_t k, T alpha, bool accumulate) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    if (!accumulate) {
      for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, T(0));
    }
    return;
  }
  if (ta) {
    if (tb) GemmKernel<T, true, true>(a, lda, b, ldb, c, ldc, m, n, k, alpha, accumulate);
    else GemmKernel<T, true, false>(a, lda, b, ldb, c, ldc, m, n, k, alpha, accumulate);
  } else {
    if (tb) GemmKernel<T, false, true>(a, lda, b, ldb, c, ldc, m, n, k, alpha, accumulate);
    else GemmKernel<T, false, false>(a, lda, b, ldb, c, ldc, m, n, k, alpha, accumulate);
  }
}

// Where block q of `blocks` starts along an extent split into row (or column) blocks: the
// multiple of kGemmSplitAlign nearest to an even split. The last block ends at the extent
// and is never shorter than kGemmSplitAlign (a GEMM of a few rows takes other Eigen kernels,
// GEMV for one row, than the same rows inside a larger product).
int64_t BlockStart(int64_t extent, int64_t q, int64_t blocks) {
  if (q == 0) return 0;
  if (q >= blocks) return extent;
  const int64_t even = extent * q / blocks;
  const int64_t start = (even + kGemmSplitAlign / 2) / kGemmSplitAlign * kGemmSplitAlign;
  return extent - start < kGemmSplitAlign ? extent : start;
}

template <typename T>
void GemmTyped(const GemmArgs& g) {
  const T* a = static_cast<const T*>(g.a);
  const T* b = static_cast<const T*>(g.b);
  T* c = static_cast<T*>(g.c);
  // Integer products run in the unsigned type of the same width: two's-complement wraparound
  // (XLA's semantics) without signed-overflow UB; alpha goes through int64 so -1 survives.
  T alpha;
  if constexpr (std::is_integral_v<T>) alpha = static_cast<T>(static_cast<int64_t>(g.alpha));
  else alpha = static_cast<T>(g.alpha);
  // Both operands K-major (A^T B of row-major A and B) and K long against M and N: the direct
  // kernel reads them in place. Decided for the whole product, so every block of a split
  // product runs the same arithmetic.
  bool k_major = false;
  if constexpr (std::is_floating_point_v<T>) {
    k_major = g.transpose_a && !g.transpose_b && UseKMajorGemm(g.m, g.n, g.k);
  }
  // Rows [i0, i1) x columns [j0, j1) of product bi.
  auto block = [&](int64_t bi, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    const T* ab = a + bi * g.stride_a + (g.transpose_a ? i0 : i0 * g.lda);
    const T* bb = b + bi * g.stride_b + (g.transpose_b ? j0 * g.ldb : j0);
    T* cb = c + bi * g.stride_c + i0 * g.ldc + j0;
    if constexpr (std::is_floating_point_v<T>) {
      if (k_major) {
        KMajorGemm(ab, g.lda, bb, g.ldb, cb, g.ldc, i1 - i0, j1 - j0, g.k, alpha, g.accumulate);
        if (g.on_block) g.on_block(bi, i0, i1, j0, j1);
        return;
      }
    }
    GemmBlock<T>(g.transpose_a, g.transpose_b, ab, g.lda, bb, g.ldb, cb, g.ldc, i1 - i0, j1 - j0, g.k, alpha,
                 g.accumulate);
    if (g.on_block) g.on_block(bi, i0, i1, j0, j1);
  };
  const int64_t macs_one = g.m * g.n * std::max<int64_t>(g.k, 1);
  const int threads = g.parallel ? NumThreads() : 1;
  if (threads == 1 || g.batch * macs_one < kMinParallelMacs) {
    for (int64_t bi = 0; bi < g.batch; ++bi) block(bi, 0, g.m, 0, g.n);
    return;
  }
  // Blocks per product: enough that batch * blocks is a multiple of the thread count while
  // the batch alone does not balance the pool.
  int64_t blocks = 1;
  if (g.batch < 4 * threads) blocks = threads / std::gcd<int64_t>(g.batch, threads);
  const bool split_rows = g.m >= g.n;
  const int64_t extent = split_rows ? g.m : g.n;
  blocks = std::max<int64_t>(1, std::min(blocks, extent / kMinBlock));
  const int64_t tasks = g.batch * blocks;
  const int64_t grain = std::max<int64_t>(1, kMinParallelMacs / std::max<int64_t>(1, macs_one / blocks));
  ParallelFor(tasks, grain, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t bi = t / blocks, q = t % blocks;
      const int64_t lo = BlockStart(extent, q, blocks), hi = BlockStart(extent, q + 1, blocks);
      if (lo == hi) continue;
      if (split_rows) block(bi, lo, hi, 0, g.n);
      else block(bi, 0, g.m, lo, hi);
    }
  });
}

// ----- PackConvert -----

using DimVec = absl::InlinedVector<int64_t, 8>;

template <typename D, typename S>
inline D Cvt(S s) {
  if constexpr (std::is_same_v<D, S>) {
    return s;
  } else if constexpr (kIsHalf<S>) {
    return Cvt<D>(static_cast<float>(s));
  } else if constexpr (std::is_same_v<D, bool>) {
    return s != S(0);
  } else if constexpr (kIsHalf<D>) {
    return D(static_cast<float>(s));
  } else {
    return static_cast<D>(s);
  }
}

template <typename D, typename S>
void ConvertRun(const S* src, int64_t n, D* dst) {
  if constexpr (std::is_same_v<D, S>) {
    std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(D));
  } else {
    for (int64_t i = 0; i < n; ++i) dst[i] = Cvt<D>(src[i]);
  }
}

template <typename D, typename S>
void PackTyped(const S* src, const DimVec& sizes, const DimVec& strides, D* dst) {
  const int r = static_cast<int>(sizes.size());
  if (r == 0) {
    dst[0] = Cvt<D>(src[0]);
    return;
  }
  if (r == 1) {
    const int64_t n = sizes[0], s = strides[0];
    ForChunks(n, [&](int64_t b, int64_t e) {
      if (s == 1) ConvertRun(src + b, e - b, dst + b);
      else for (int64_t i = b; i < e; ++i) dst[i] = Cvt<D>(src[i * s]);
    });
    return;
  }
  const int64_t rows = sizes[r - 2], cols = sizes[r - 1];
  const int64_t s0 = strides[r - 2], s1 = strides[r - 1];
  int64_t outer = 1;
  for (int i = 0; i < r - 2; ++i) outer *= sizes[i];
  auto outer_offset = [&](int64_t o) {
    int64_t off = 0;
    for (int i = r - 3; i >= 0; --i) {
      off += (o % sizes[i]) * strides[i];
      o /= sizes[i];
    }
    return off;
  };
  if (s1 == 1) {
    // Contiguous inner runs: one task per row.
    const int64_t grain = std::max<int64_t>(1, kParallelGrain / cols);
    ParallelFor(outer * rows, grain, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t o = t / rows, i = t % rows;
        ConvertRun(src + outer_offset(o) + i * s0, cols, dst + t * cols);
      }
    });
    return;
  }
  // Strided inner dimension (a transpose): copy through cache-resident tiles.
  constexpr int64_t kTile = 32;
  const int64_t row_tiles = (rows + kTile - 1) / kTile;
  const int64_t grain = std::max<int64_t>(1, kParallelGrain / (kTile * cols));
  ParallelFor(outer * row_tiles, grain, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t o = t / row_tiles;
      const int64_t i0 = (t % row_tiles) * kTile, i1 = std::min(rows, i0 + kTile);
      const S* sb = src + outer_offset(o);
      D* db = dst + o * rows * cols;
      for (int64_t j0 = 0; j0 < cols; j0 += kTile) {
        const int64_t j1 = std::min(cols, j0 + kTile);
        for (int64_t i = i0; i < i1; ++i) {
          const S* si = sb + i * s0;
          D* di = db + i * cols;
          for (int64_t j = j0; j < j1; ++j) di[j] = Cvt<D>(si[j * s1]);
        }
      }
    }
  });
}

}  // namespace

void Gemm(const GemmArgs& args) {
  if (args.batch <= 0 || args.m <= 0 || args.n <= 0) return;
  switch (args.dtype) {
    case DType::kFloat32: return GemmTyped<float>(args);
    case DType::kFloat64: return GemmTyped<double>(args);
    case DType::kInt32: return GemmTyped<uint32_t>(args);
    case DType::kInt64: return GemmTyped<uint64_t>(args);
    default: throw InternalError(StrCat("Gemm: unsupported dtype ", dtype_name(args.dtype)));
  }
}

void PackConvert(DType src_dtype, const void* src, absl::Span<const int64_t> sizes,
                 absl::Span<const int64_t> src_strides, DType dst_dtype, void* dst) {
  // Drop size-1 dims and merge dims whose source strides nest (dst is always dense).
  DimVec sz, st;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == 0) return;
    if (sizes[i] == 1) continue;
    if (!sz.empty() && st.back() == src_strides[i] * sizes[i]) {
      sz.back() *= sizes[i];
      st.back() = src_strides[i];
    } else {
      sz.push_back(sizes[i]);
      st.push_back(src_strides[i]);
    }
  }
  DispatchDType(src_dtype, [&](auto stag) {
    using S = typename decltype(stag)::type;
    DispatchDType(dst_dtype, [&](auto dtag) {
      using D = typename decltype(dtag)::type;
      PackTyped<D, S>(static_cast<const S*>(src), sz, st, static_cast<D*>(dst));
    });
  });
}

DType AccumulationDType(DType lhs, DType rhs, DType out_dtype) {
  if (IsFloating(out_dtype)) {
    const bool f64 = out_dtype == DType::kFloat64 || lhs == DType::kFloat64 || rhs == DType::kFloat64;
    return f64 ? DType::kFloat64 : DType::kFloat32;
  }
  auto wide_int = [](DType d) { return !IsFloating(d) && ItemSize(d) == 8; };
  return wide_int(out_dtype) || wide_int(lhs) || wide_int(rhs) ? DType::kInt64 : DType::kInt32;
}

}  // namespace jx::lax::kernels

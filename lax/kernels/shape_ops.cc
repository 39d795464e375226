#include "jx/lax/kernels/shape_ops.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <vector>

#ifdef __AVX2__
#include <immintrin.h>
#endif

#include "jx/lax/kernels/copy_kernels.h"

namespace jx::lax::kernels {
namespace {

int64_t NumElements(absl::Span<const int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

DimVec RowMajor(absl::Span<const int64_t> dims) {
  DimVec strides(dims.size());
  int64_t acc = 1;
  for (size_t k = dims.size(); k-- > 0;) {
    strides[k] = acc;
    acc *= dims[k];
  }
  return strides;
}

}  // namespace

void BroadcastInDim(const void* in_data, absl::Span<const int64_t> in_dims, absl::Span<const int64_t> out_shape,
                    absl::Span<const int64_t> bdims, int64_t item_size, void* out_data) {
  const int64_t n = static_cast<int64_t>(out_shape.size());
  if (NumElements(out_shape) == 0) return;
  const DimVec op_strides = RowMajor(in_dims);
  DimVec st(static_cast<size_t>(n), 0);
  for (size_t i = 0; i < bdims.size(); ++i) {
    if (in_dims[i] != 1) st[static_cast<size_t>(bdims[i])] = op_strides[i];
  }
  // Collapse: drop size-1 dims, merge neighbours that are both broadcast or both contiguous.
  DimVec sizes, strides;
  for (int64_t j = 0; j < n; ++j) {
    const int64_t s = out_shape[static_cast<size_t>(j)], t = st[static_cast<size_t>(j)];
    if (s == 1) continue;
    if (!sizes.empty() && ((strides.back() == 0 && t == 0) || (t != 0 && strides.back() == t * s))) {
      sizes.back() *= s;
      strides.back() = t;
    } else {
      sizes.push_back(s);
      strides.push_back(t);
    }
  }
  DispatchBySize(item_size, [&](auto tag) {
    using U = typename decltype(tag)::type;
    const U* src = static_cast<const U*>(in_data);
    U* dst = static_cast<U*>(out_data);
    const size_t m = sizes.size();
    size_t prefix = 0;  // leading broadcast dims: computed once, then replicated
    while (prefix < m && strides[prefix] == 0) ++prefix;
    if (prefix == m) {
      ParallelFill(dst, NumElements(out_shape), src[0]);
      return;
    }
    DimVec outer_sizes(sizes.begin() + static_cast<ptrdiff_t>(prefix), sizes.end() - 1);
    DimVec in_strides(strides.begin() + static_cast<ptrdiff_t>(prefix), strides.end() - 1);
    DimVec out_strides(outer_sizes.size());
    const int64_t len = sizes.back();
    int64_t acc = len;
    for (size_t k = outer_sizes.size(); k-- > 0;) {
      out_strides[k] = acc;
      acc *= outer_sizes[k];
    }
    const int64_t block = acc;  // elements of the non-replicated suffix
    const bool fill_rows = strides.back() == 0;
    ForEachIndex<2>(outer_sizes, {in_strides, out_strides}, RowGrain(len),
                             [&](const std::array<int64_t, 2>& off) {
                               if (fill_rows) {
                                 std::fill_n(dst + off[1], len, src[off[0]]);
                               } else {
                                 std::memcpy(dst + off[1], src + off[0], static_cast<size_t>(len) * sizeof(U));
                               }
                             });
    int64_t copies = 1;
    for (size_t k = 0; k < prefix; ++k) copies *= sizes[k];
    ReplicateBlock(reinterpret_cast<char*>(dst), block * static_cast<int64_t>(sizeof(U)), copies);
  });
}

namespace {

// Micro-kernels: transpose an MxM block, src rows at stride ss (M contiguous elements each)
// into dst rows at stride ds. They only shuffle bits, so any 2/4/8-byte dtype goes through.
#ifdef __AVX2__
inline void MicroTranspose(const uint32_t* src, int64_t ss, uint32_t* dst, int64_t ds) {
  const float* s = reinterpret_cast<const float*>(src);
  float* d = reinterpret_cast<float*>(dst);
  const __m256 r0 = _mm256_loadu_ps(s), r1 = _mm256_loadu_ps(s + ss), r2 = _mm256_loadu_ps(s + 2 * ss),
               r3 = _mm256_loadu_ps(s + 3 * ss), r4 = _mm256_loadu_ps(s + 4 * ss), r5 = _mm256_loadu_ps(s + 5 * ss),
               r6 = _mm256_loadu_ps(s + 6 * ss), r7 = _mm256_loadu_ps(s + 7 * ss);
  const __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1), t2 = _mm256_unpacklo_ps(r2, r3),
               t3 = _mm256_unpackhi_ps(r2, r3), t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5),
               t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
  const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE),
               u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE),
               u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE),
               u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  _mm256_storeu_ps(d, _mm256_permute2f128_ps(u0, u4, 0x20));
  _mm256_storeu_ps(d + ds, _mm256_permute2f128_ps(u1, u5, 0x20));
  _mm256_storeu_ps(d + 2 * ds, _mm256_permute2f128_ps(u2, u6, 0x20));
  _mm256_storeu_ps(d + 3 * ds, _mm256_permute2f128_ps(u3, u7, 0x20));
  _mm256_storeu_ps(d + 4 * ds, _mm256_permute2f128_ps(u0, u4, 0x31));
  _mm256_storeu_ps(d + 5 * ds, _mm256_permute2f128_ps(u1, u5, 0x31));
  _mm256_storeu_ps(d + 6 * ds, _mm256_permute2f128_ps(u2, u6, 0x31));
  _mm256_storeu_ps(d + 7 * ds, _mm256_permute2f128_ps(u3, u7, 0x31));
}
inline void MicroTranspose(const uint64_t* src, int64_t ss, uint64_t* dst, int64_t ds) {
  const double* s = reinterpret_cast<const double*>(src);
  double* d = reinterpret_cast<double*>(dst);
  const __m256d r0 = _mm256_loadu_pd(s), r1 = _mm256_loadu_pd(s + ss), r2 = _mm256_loadu_pd(s + 2 * ss),
                r3 = _mm256_loadu_pd(s + 3 * ss);
  const __m256d t0 = _mm256_unpacklo_pd(r0, r1), t1 = _mm256_unpackhi_pd(r0, r1), t2 = _mm256_unpacklo_pd(r2, r3),
                t3 = _mm256_unpackhi_pd(r2, r3);
  _mm256_storeu_pd(d, _mm256_permute2f128_pd(t0, t2, 0x20));
  _mm256_storeu_pd(d + ds, _mm256_permute2f128_pd(t1, t3, 0x20));
  _mm256_storeu_pd(d + 2 * ds, _mm256_permute2f128_pd(t0, t2, 0x31));
  _mm256_storeu_pd(d + 3 * ds, _mm256_permute2f128_pd(t1, t3, 0x31));
}
inline void MicroTranspose(const uint16_t* src, int64_t ss, uint16_t* dst, int64_t ds) {
  auto ld = [&](int k) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + k * ss)); };
  const __m128i r0 = ld(0), r1 = ld(1), r2 = ld(2), r3 = ld(3), r4 = ld(4), r5 = ld(5), r6 = ld(6), r7 = ld(7);
  const __m128i a0 = _mm_unpacklo_epi16(r0, r1), a1 = _mm_unpackhi_epi16(r0, r1), a2 = _mm_unpacklo_epi16(r2, r3),
                a3 = _mm_unpackhi_epi16(r2, r3), a4 = _mm_unpacklo_epi16(r4, r5), a5 = _mm_unpackhi_epi16(r4, r5),
                a6 = _mm_unpacklo_epi16(r6, r7), a7 = _mm_unpackhi_epi16(r6, r7);
  const __m128i b0 = _mm_unpacklo_epi32(a0, a2), b1 = _mm_unpackhi_epi32(a0, a2), b2 = _mm_unpacklo_epi32(a1, a3),
                b3 = _mm_unpackhi_epi32(a1, a3), b4 = _mm_unpacklo_epi32(a4, a6), b5 = _mm_unpackhi_epi32(a4, a6),
                b6 = _mm_unpacklo_epi32(a5, a7), b7 = _mm_unpackhi_epi32(a5, a7);
  auto st = [&](int k, __m128i v) { _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + k * ds), v); };
  st(0, _mm_unpacklo_epi64(b0, b4));
  st(1, _mm_unpackhi_epi64(b0, b4));
  st(2, _mm_unpacklo_epi64(b1, b5));
  st(3, _mm_unpackhi_epi64(b1, b5));
  st(4, _mm_unpacklo_epi64(b2, b6));
  st(5, _mm_unpackhi_epi64(b2, b6));
  st(6, _mm_unpacklo_epi64(b3, b7));
  st(7, _mm_unpackhi_epi64(b3, b7));
}
inline void MicroTranspose(const uint8_t* src, int64_t ss, uint8_t* dst, int64_t ds) {
  // 16x16 bytes in four unpack stages (8-, 16-, 32-, 64-bit).
  __m128i r[16], b[16], c[4][4], d[4][2][2];
  for (int k = 0; k < 16; ++k) r[k] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + k * ss));
  for (int p = 0; p < 8; ++p) {
    b[p] = _mm_unpacklo_epi8(r[2 * p], r[2 * p + 1]);      // cols 0..7 of rows 2p, 2p+1
    b[p + 8] = _mm_unpackhi_epi8(r[2 * p], r[2 * p + 1]);  // cols 8..15
  }
  for (int q = 0; q < 4; ++q) {  // c[g][q]: cols 4g..4g+3 of rows 4q..4q+3
    c[0][q] = _mm_unpacklo_epi16(b[2 * q], b[2 * q + 1]);
    c[1][q] = _mm_unpackhi_epi16(b[2 * q], b[2 * q + 1]);
    c[2][q] = _mm_unpacklo_epi16(b[8 + 2 * q], b[8 + 2 * q + 1]);
    c[3][q] = _mm_unpackhi_epi16(b[8 + 2 * q], b[8 + 2 * q + 1]);
  }
  for (int g = 0; g < 4; ++g) {
    for (int pp = 0; pp < 2; ++pp) {  // d[g][h][pp]: cols 4g+2h, 4g+2h+1 of rows 8pp..8pp+7
      d[g][0][pp] = _mm_unpacklo_epi32(c[g][2 * pp], c[g][2 * pp + 1]);
      d[g][1][pp] = _mm_unpackhi_epi32(c[g][2 * pp], c[g][2 * pp + 1]);
    }
  }
  for (int g = 0; g < 4; ++g) {
    for (int h = 0; h < 2; ++h) {
      const int col = 4 * g + 2 * h;
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + col * ds), _mm_unpacklo_epi64(d[g][h][0], d[g][h][1]));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + (col + 1) * ds), _mm_unpackhi_epi64(d[g][h][0], d[g][h][1]));
    }
  }
}
template <typename U>
inline constexpr int64_t kMicro = sizeof(U) == 8 ? 4 : sizeof(U) == 1 ? 16 : 8;
#else
template <typename U>
inline constexpr int64_t kMicro = 0;
template <typename U>
inline void MicroTranspose(const U*, int64_t, U*, int64_t) {}
#endif

// One tile of a transpose: dst[i * ds + j] = src[i + j * ss] for i in [i0, i1), j in [j0, j1).
template <typename U>
void TransposeTile(const U* src, int64_t ss, U* dst, int64_t ds, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  constexpr int64_t m = kMicro<U>;
  int64_t i_full = i0, j_full = j0;
  if constexpr (m > 0) {
    i_full = i0 + (i1 - i0) / m * m;
    j_full = j0 + (j1 - j0) / m * m;
    // j (input rows) outer: a few input rows are consumed across the tile while their lines
    // are hot; measured faster than i-outer and than staging through a buffer.
    for (int64_t j = j0; j < j_full; j += m) {
      for (int64_t i = i0; i < i_full; i += m) MicroTranspose(src + i + j * ss, ss, dst + i * ds + j, ds);
    }
  }
  // Edges (everything without SIMD micro-kernels).
  for (int64_t i = i0; i < i1; ++i) {
    U* drow = dst + i * ds;
    const U* scol = src + i;
    for (int64_t j = (i < i_full ? j_full : j0); j < j1; ++j) drow[j] = scol[j * ss];
  }
}

}  // namespace

// Transposes in (row-major, shape in_shape) into out. Size-1 dims are dropped and runs of
// input dims that stay adjacent are merged, so most transposes become a 2-D or 3-D problem.
void Transpose(const void* in_data, absl::Span<const int64_t> in_shape, absl::Span<const int64_t> perm,
               int64_t item_size, void* out_data) {
  const int64_t total = NumElements(in_shape);
  if (total == 0) return;
  // Drop size-1 dims.
  const size_t rank = in_shape.size();
  std::vector<int64_t> new_index(rank, -1);
  DimVec sizes1;
  for (size_t i = 0; i < rank; ++i) {
    if (in_shape[i] != 1) {
      new_index[i] = static_cast<int64_t>(sizes1.size());
      sizes1.push_back(in_shape[i]);
    }
  }
  DimVec perm1;
  for (int64_t a : perm) {
    if (new_index[static_cast<size_t>(a)] >= 0) perm1.push_back(new_index[static_cast<size_t>(a)]);
  }
  // Merge runs of consecutive input dims that stay consecutive in the output.
  struct Run {
    int64_t first, len;
  };
  absl::InlinedVector<Run, 8> runs;  // in output order
  for (size_t j = 0; j < perm1.size(); ++j) {
    if (j > 0 && perm1[j] == perm1[j - 1] + 1) {
      ++runs.back().len;
    } else {
      runs.push_back({perm1[j], 1});
    }
  }
  const size_t r = runs.size();
  if (r <= 1) {
    ParallelMemcpy(out_data, in_data, total * item_size);
    return;
  }
  // Input order of the runs gives the merged input dims.
  DimVec order(r);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return runs[a].first < runs[b].first; });
  DimVec in_sizes(r), p(r);  // p: merged permutation (output position -> merged input dim)
  for (size_t k = 0; k < r; ++k) {
    const Run& run = runs[static_cast<size_t>(order[k])];
    int64_t s = 1;
    for (int64_t d = run.first; d < run.first + run.len; ++d) s *= sizes1[static_cast<size_t>(d)];
    in_sizes[k] = s;
    p[static_cast<size_t>(order[k])] = static_cast<int64_t>(k);
  }
  DimVec in_strides(r), out_sizes(r), out_strides(r);
  int64_t acc = 1;
  for (size_t k = r; k-- > 0;) {
    in_strides[k] = acc;
    acc *= in_sizes[k];
  }
  for (size_t j = 0; j < r; ++j) out_sizes[j] = in_sizes[static_cast<size_t>(p[j])];
  acc = 1;
  for (size_t j = r; j-- > 0;) {
    out_strides[j] = acc;
    acc *= out_sizes[j];
  }
  DispatchBySize(item_size, [&](auto tag) {
    using U = typename decltype(tag)::type;
    const U* src = static_cast<const U*>(in_data);
    U* dst = static_cast<U*>(out_data);
    if (p[r - 1] == static_cast<int64_t>(r) - 1) {
      // The last axis stays last: copy whole rows.
      const int64_t len = out_sizes[r - 1];
      DimVec osz(out_sizes.begin(), out_sizes.end() - 1), ist(r - 1), ost(out_strides.begin(), out_strides.end() - 1);
      for (size_t j = 0; j + 1 < r; ++j) ist[j] = in_strides[static_cast<size_t>(p[j])];
      ForEachIndex<2>(osz, {ist, ost}, RowGrain(len), [&](const std::array<int64_t, 2>& off) {
        std::memcpy(dst + off[1], src + off[0], static_cast<size_t>(len) * sizeof(U));
      });
      return;
    }
    // Tiles over (q, a): q is the output position of the input's contiguous axis, a the
    // output's contiguous axis. Reads and writes of a tile stay in L1.
    constexpr int64_t kTile = sizeof(U) == 4 ? 64 : 32;
    const size_t a = r - 1;
    size_t q = 0;
    while (p[q] != static_cast<int64_t>(r) - 1) ++q;
    const int64_t n_q = out_sizes[q], n_a = out_sizes[a];
    const int64_t s_a = in_strides[static_cast<size_t>(p[a])], os_q = out_strides[q];
    // Odometer dims: the other output dims, then the two tile dims (whose coordinates come
    // out as offsets 2 and 3).
    DimVec sz, ist, ost, tq, ta;
    for (size_t j = 0; j < r; ++j) {
      if (j == q || j == a) continue;
      sz.push_back(out_sizes[j]);
      ist.push_back(in_strides[static_cast<size_t>(p[j])]);
      ost.push_back(out_strides[j]);
      tq.push_back(0);
      ta.push_back(0);
    }
    sz.push_back((n_q + kTile - 1) / kTile);
    sz.push_back((n_a + kTile - 1) / kTile);
    ist.insert(ist.end(), {0, 0});
    ost.insert(ost.end(), {0, 0});
    tq.insert(tq.end(), {kTile, 0});
    ta.insert(ta.end(), {0, kTile});
    ForEachIndex<4>(sz, {ist, ost, tq, ta}, RowGrain(kTile * kTile),
                             [&](const std::array<int64_t, 4>& off) {
                               TransposeTile<U>(src + off[0], s_a, dst + off[1], os_q, off[2],
                                             std::min(off[2] + kTile, n_q), off[3], std::min(off[3] + kTile, n_a));
                             });
  });
}

void Rev(const void* in_data, absl::Span<const int64_t> shape, absl::Span<const int64_t> dims, int64_t item_size,
         void* out_data) {
  if (NumElements(shape) == 0) return;
  std::vector<bool> reversed(shape.size(), false);
  for (int64_t d : dims) reversed[static_cast<size_t>(d)] = true;
  // Collapse: drop size-1 dims and merge neighbours with the same reversal flag.
  DimVec sizes;
  absl::InlinedVector<bool, 8> rev;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 1) continue;
    if (!sizes.empty() && rev.back() == reversed[i]) {
      sizes.back() *= shape[i];
    } else {
      sizes.push_back(shape[i]);
      rev.push_back(reversed[i]);
    }
  }
  const int64_t item = item_size;
  if (std::find(rev.begin(), rev.end(), true) == rev.end()) {
    ParallelMemcpy(out_data, in_data, NumElements(shape) * item);
    return;
  }
  const size_t m = sizes.size();
  const int64_t len = sizes.back();
  const bool inner_rev = rev.back();
  DimVec osz(sizes.begin(), sizes.end() - 1), ist(m - 1), ost(m - 1);
  int64_t acc = len, base = 0;
  for (size_t k = m - 1; k-- > 0;) {
    ost[k] = acc;
    ist[k] = rev[k] ? -acc : acc;
    if (rev[k]) base += (sizes[k] - 1) * acc;
    acc *= sizes[k];
  }
  DispatchBySize(item, [&](auto tag) {
    using U = typename decltype(tag)::type;
    const U* src = static_cast<const U*>(in_data) + base;
    U* dst = static_cast<U*>(out_data);
    if (osz.empty()) {  // one long reversed row: split it
      ParallelFor(len, kParallelGrain, [&](int64_t b, int64_t e) {
        for (int64_t k = b; k < e; ++k) dst[k] = src[len - 1 - k];
      });
      return;
    }
    ForEachIndex<2>(osz, {ist, ost}, RowGrain(len), [&](const std::array<int64_t, 2>& off) {
      const U* s = src + off[0];
      U* d = dst + off[1];
      if (inner_rev) {
        for (int64_t k = 0; k < len; ++k) d[k] = s[len - 1 - k];
      } else {
        std::memcpy(d, s, static_cast<size_t>(len) * sizeof(U));
      }
    });
  });
}

void Iota(DType dtype, absl::Span<const int64_t> shape, int64_t dimension, void* out_data) {
  if (NumElements(shape) == 0) return;
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < dimension; ++i) outer *= shape[static_cast<size_t>(i)];
  for (size_t i = static_cast<size_t>(dimension) + 1; i < shape.size(); ++i) inner *= shape[i];
  const int64_t n = shape[static_cast<size_t>(dimension)];
  DispatchDType(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) {
      T* dst = static_cast<T*>(out_data);
      ParallelFor(n, RowGrain(inner), [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          T v;
          if constexpr (kIsHalf<T>) v = T(static_cast<float>(i));
          else v = static_cast<T>(i);
          std::fill_n(dst + i * inner, inner, v);
        }
      });
      ReplicateBlock(reinterpret_cast<char*>(dst), n * inner * static_cast<int64_t>(sizeof(T)), outer);
    }
  });
}

}  // namespace jx::lax::kernels

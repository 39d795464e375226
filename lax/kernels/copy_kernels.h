// Data-movement kernel helpers (internal): shape and slicing primitives only move bytes, so
// they dispatch on the element size, walk rows with an odometer, and copy inner runs with
// memcpy/fill, splitting rows over the pool.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "jx/core/errors.h"
#include "jx/core/parallel.h"
#include "jx/lax/kernels/dispatch.h"
#include "jx/lax/kernels/slicing.h"

namespace jx::lax::kernels {

using DimVec = absl::InlinedVector<int64_t, 8>;

// Calls f(TypeTag<U>{}) with the unsigned integer type of the given element size.
template <typename F>
decltype(auto) DispatchBySize(int64_t item_size, F&& f) {
  switch (item_size) {
    case 1: return f(TypeTag<uint8_t>{});
    case 2: return f(TypeTag<uint16_t>{});
    case 4: return f(TypeTag<uint32_t>{});
    case 8: return f(TypeTag<uint64_t>{});
  }
  throw InternalError("bad element size");
}

// Rows per parallel chunk so that a chunk moves about kParallelGrain elements.
inline int64_t RowGrain(int64_t row_elems) { return std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, row_elems)); }

inline int64_t Product(const DimVec& v) {
  int64_t n = 1;
  for (int64_t d : v) n *= d;
  return n;
}

// Calls fn(offsets) for every index of an odometer over `sizes` in row-major order, where
// offsets[k] = sum_d idx[d] * strides[k][d]. Positions are split over the pool in chunks of
// at least `grain` positions; each chunk restarts the odometer from its first position.
template <size_t K, typename Fn>
void ForEachIndex(const DimVec& sizes, const std::array<DimVec, K>& strides, int64_t grain, Fn&& fn) {
  const int64_t total = Product(sizes);
  const int n = static_cast<int>(sizes.size());
  ParallelFor(total, grain, [&](int64_t begin, int64_t end) {
    DimVec idx(sizes.size(), 0);
    std::array<int64_t, K> off{};
    int64_t rem = begin;
    for (int d = n - 1; d >= 0; --d) {
      idx[d] = rem % sizes[d];
      rem /= sizes[d];
      for (size_t k = 0; k < K; ++k) off[k] += idx[d] * strides[k][d];
    }
    for (int64_t p = begin; p < end; ++p) {
      fn(off);
      for (int d = n - 1; d >= 0; --d) {
        ++idx[d];
        for (size_t k = 0; k < K; ++k) off[k] += strides[k][d];
        if (idx[d] < sizes[d]) break;
        for (size_t k = 0; k < K; ++k) off[k] -= strides[k][d] * sizes[d];
        idx[d] = 0;
      }
    }
  });
}

// memcpy split over the pool when large.
inline void ParallelMemcpy(void* dst, const void* src, int64_t nbytes) {
  if (nbytes <= 0) return;
  constexpr int64_t kGrainBytes = int64_t{1} << 18;
  ParallelFor(nbytes, kGrainBytes, [&](int64_t b, int64_t e) {
    std::memcpy(static_cast<char*>(dst) + b, static_cast<const char*>(src) + b, static_cast<size_t>(e - b));
  });
}

// Fills n elements with value, split over the pool when large.
template <typename U>
void ParallelFill(U* dst, int64_t n, U value) {
  ParallelFor(n, kParallelGrain, [&](int64_t b, int64_t e) { std::fill(dst + b, dst + e, value); });
}

// Repeats the first `block` bytes of dst `count` times (dst holds count * block bytes): the
// block is doubled until it is a few KiB, then copied out in parallel.
inline void ReplicateBlock(char* dst, int64_t block, int64_t count) {
  if (count <= 1 || block <= 0) return;
  int64_t have = 1;
  constexpr int64_t kChunkBytes = 1 << 14;
  while (have < count && have * block < kChunkBytes) {
    const int64_t n = std::min(have, count - have);
    std::memcpy(dst + have * block, dst, static_cast<size_t>(n * block));
    have += n;
  }
  if (have >= count) return;
  const int64_t chunk = have;  // copies per memcpy
  const int64_t rest = count - have;
  const int64_t pieces = (rest + chunk - 1) / chunk;
  ParallelFor(pieces, std::max<int64_t>(1, (int64_t{1} << 18) / (chunk * block)), [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) {
      const int64_t first = have + p * chunk;
      const int64_t n = std::min(chunk, count - first);
      std::memcpy(dst + first * block, dst, static_cast<size_t>(n * block));
    }
  });
}

// Defined in slicing_ops.cc (shared with gather_scatter.cc).

// Element i of an integer index array as int64 (uint64 values past int64's range saturate).
int64_t ReadIndex(const Array& a, int64_t i);

}  // namespace jx::lax::kernels

// Sorting (see sort.h). A single operand sorts its keys directly (equal keys are equal bit
// patterns, so stability is moot); several operands sort (key, index) pairs or an index
// permutation and gather every operand through it. Long rows use an LSD radix sort (8-bit
// digits), short ones std::sort. Rows run in parallel at fixed boundaries.
#include "jx/lax/kernels/sort.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <utility>
#include <vector>

#include "jx/core/parallel.h"
#include "jx/lax/kernels/dispatch.h"

namespace jx::lax::kernels {
namespace {

template <size_t N> struct UIntOfSize;
template <> struct UIntOfSize<1> { using type = uint8_t; };
template <> struct UIntOfSize<2> { using type = uint16_t; };
template <> struct UIntOfSize<4> { using type = uint32_t; };
template <> struct UIntOfSize<8> { using type = uint64_t; };

// The order-preserving unsigned key of T, and back.
template <typename T>
struct SortKey {
  using U = typename UIntOfSize<sizeof(T)>::type;
  static constexpr U kSign = static_cast<U>(U(1) << (8 * sizeof(T) - 1));
  static U To(T v) {
    U b;
    std::memcpy(&b, &v, sizeof(T));
    if constexpr (kIsFloat<T>) {
      return (b & kSign) ? static_cast<U>(~b) : static_cast<U>(b | kSign);
    } else if constexpr (std::is_signed_v<T>) {
      return static_cast<U>(b ^ kSign);
    } else {
      return b;
    }
  }
  static T From(U k) {
    U b;
    if constexpr (kIsFloat<T>) {
      b = (k & kSign) ? static_cast<U>(k ^ kSign) : static_cast<U>(~k);
    } else if constexpr (std::is_signed_v<T>) {
      b = static_cast<U>(k ^ kSign);
    } else {
      b = k;
    }
    T v;
    std::memcpy(static_cast<void*>(&v), &b, sizeof(T));
    return v;
  }
};

// Calls f(TypeTag<T>{}) for dtype d, with booleans as uint8 (0 < 1 is their order).
template <typename F>
void DispatchSortable(DType d, F&& f) {
  DispatchDType(d == bool_ ? uint8 : d, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) f(tag);
  });
}

// The rows of a sort: [O, n, I] around the sorted dimension. Tasks take G = min(I, 16)
// neighbouring rows at once, so strided rows are read G contiguous elements at a time.
struct Rows {
  int64_t O = 1, n = 1, I = 1;
  int64_t G() const { return std::min<int64_t>(I, 16); }
  int64_t groups_per_outer() const { return (I + G() - 1) / G(); }
  int64_t tasks() const { return O * groups_per_outer(); }
  // Offset of element 0 of the first row of task t, and how many rows it holds.
  int64_t base(int64_t t) const { return (t / groups_per_outer()) * n * I + (t % groups_per_outer()) * G(); }
  int64_t width(int64_t t) const { return std::min(G(), I - (t % groups_per_outer()) * G()); }
};

int64_t RowGrain(int64_t n) { return std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, 4 * n)); }
int64_t TaskGrain(const Rows& rows) {
  return std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, 4 * rows.n * rows.G()));
}

// Below this many elements a comparison sort beats the radix passes.
constexpr int64_t kRadixMin = 256;

// Stable LSD radix sort of n unsigned keys (8-bit digits; digits equal in every key are
// skipped), permuting idx alongside when given. tmp and idx_tmp are scratch of n entries.
template <typename U>
void RadixSort(U* keys, U* tmp, int64_t* idx, int64_t* idx_tmp, int64_t n) {
  constexpr int kDigits = sizeof(U);
  int64_t count[kDigits][256] = {};
  for (int64_t j = 0; j < n; ++j) {
    for (int d = 0; d < kDigits; ++d) ++count[d][(keys[j] >> (8 * d)) & 0xFF];
  }
  U* src = keys;
  U* dst = tmp;
  int64_t* isrc = idx;
  int64_t* idst = idx_tmp;
  for (int d = 0; d < kDigits; ++d) {
    int64_t* c = count[d];
    if (c[(src[0] >> (8 * d)) & 0xFF] == n) continue;  // one digit value: order unchanged
    int64_t sum = 0;
    for (int b = 0; b < 256; ++b) {
      const int64_t v = c[b];
      c[b] = sum;
      sum += v;
    }
    for (int64_t j = 0; j < n; ++j) {
      const int64_t pos = c[(src[j] >> (8 * d)) & 0xFF]++;
      dst[pos] = src[j];
      if (idx != nullptr) idst[pos] = isrc[j];
    }
    std::swap(src, dst);
    std::swap(isrc, idst);
  }
  if (src != keys) {
    std::copy(src, src + n, keys);
    if (idx != nullptr) std::copy(isrc, isrc + n, idx);
  }
}

// Sorts n keys, stably permuting idx (or not, when idx is null).
template <typename U>
void SortKeys(U* keys, U* tmp, int64_t* idx, int64_t* idx_tmp, int64_t n) {
  if (n >= kRadixMin) return RadixSort(keys, tmp, idx, idx_tmp, n);
  if (idx == nullptr) return std::sort(keys, keys + n);
  // Small rows: sort (key, position) pairs; the position keeps equal keys in order.
  std::vector<std::pair<U, int64_t>> pairs(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) pairs[static_cast<size_t>(j)] = {keys[j], j};
  std::sort(pairs.begin(), pairs.end());
  std::copy(idx, idx + n, idx_tmp);
  for (int64_t j = 0; j < n; ++j) {
    keys[j] = pairs[static_cast<size_t>(j)].first;
    idx[j] = idx_tmp[pairs[static_cast<size_t>(j)].second];
  }
}

// One operand: sort the keys of each row and map them back (descending: complemented keys).
template <typename T>
void SortSingle(const T* x, T* y, Rows rows, bool descending) {
  using K = SortKey<T>;
  using U = typename K::U;
  const U flip = descending ? static_cast<U>(~U(0)) : U(0);
  const int64_t n = rows.n, I = rows.I;
  ParallelFor(rows.tasks(), TaskGrain(rows), [&](int64_t begin, int64_t end) {
    std::vector<U> keys(static_cast<size_t>(n * rows.G())), tmp(static_cast<size_t>(n));
    for (int64_t t = begin; t < end; ++t) {
      const int64_t b = rows.base(t), w = rows.width(t);
      for (int64_t j = 0; j < n; ++j) {
        for (int64_t g = 0; g < w; ++g) keys[static_cast<size_t>(g * n + j)] = static_cast<U>(K::To(x[b + j * I + g]) ^ flip);
      }
      for (int64_t g = 0; g < w; ++g) SortKeys<U>(keys.data() + g * n, tmp.data(), nullptr, nullptr, n);
      for (int64_t j = 0; j < n; ++j) {
        for (int64_t g = 0; g < w; ++g) y[b + j * I + g] = K::From(static_cast<U>(keys[static_cast<size_t>(g * n + j)] ^ flip));
      }
    }
  });
}

// Reads the keys of w neighbouring rows of operand a (any dtype), widened to uint64 (and
// complemented when descending), into out[g * n + j].
void LoadKeys(const SortOperand& a, const Rows& rows, int64_t base, int64_t w, bool descending, uint64_t* out) {
  DispatchSortable(a.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using U = typename SortKey<T>::U;
    const U flip = descending ? static_cast<U>(~U(0)) : U(0);
    const T* x = static_cast<const T*>(a.in);
    for (int64_t j = 0; j < rows.n; ++j) {
      for (int64_t g = 0; g < w; ++g) out[g * rows.n + j] = static_cast<U>(SortKey<T>::To(x[base + j * rows.I + g]) ^ flip);
    }
  });
}

// Gathers w neighbouring rows of every operand through perm[g * n + j] into the outputs.
void Permute(absl::Span<const SortOperand> ops, const Rows& rows, int64_t base, int64_t w, const int64_t* perm) {
  const int64_t n = rows.n, I = rows.I;
  for (const SortOperand& op : ops) {
    auto move = [&](auto* dst, const auto* src) {
      for (int64_t j = 0; j < n; ++j) {
        for (int64_t g = 0; g < w; ++g) dst[base + j * I + g] = src[base + perm[g * n + j] * I + g];
      }
    };
    void* dst = op.out;
    const void* src = op.in;
    switch (ItemSize(op.dtype)) {
      case 1: move(static_cast<uint8_t*>(dst), static_cast<const uint8_t*>(src)); break;
      case 2: move(static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(src)); break;
      case 4: move(static_cast<uint32_t*>(dst), static_cast<const uint32_t*>(src)); break;
      default: move(static_cast<uint64_t*>(dst), static_cast<const uint64_t*>(src)); break;
    }
  }
}

// Several operands: a stable sort of the index permutation by each key from the last to the
// first (LSD order gives the lexicographic order), then a gather of every operand.
void SortMulti(absl::Span<const SortOperand> ops, const Rows& rows, int64_t num_keys, bool descending) {
  const int64_t n = rows.n;
  const size_t rows_n = static_cast<size_t>(n * rows.G());
  ParallelFor(rows.tasks(), TaskGrain(rows), [&](int64_t begin, int64_t end) {
    std::vector<uint64_t> keys(rows_n), sorted(static_cast<size_t>(n)), tmp(static_cast<size_t>(n));
    std::vector<int64_t> perm(rows_n), idx_tmp(static_cast<size_t>(n));
    for (int64_t t = begin; t < end; ++t) {
      const int64_t b = rows.base(t), w = rows.width(t);
      for (int64_t g = 0; g < w; ++g) std::iota(perm.begin() + g * n, perm.begin() + (g + 1) * n, int64_t{0});
      for (int64_t k = num_keys - 1; k >= 0; --k) {
        LoadKeys(ops[static_cast<size_t>(k)], rows, b, w, descending, keys.data());
        for (int64_t g = 0; g < w; ++g) {
          int64_t* p = perm.data() + g * n;
          const uint64_t* key = keys.data() + g * n;
          for (int64_t j = 0; j < n; ++j) sorted[static_cast<size_t>(j)] = key[p[j]];
          SortKeys<uint64_t>(sorted.data(), tmp.data(), p, idx_tmp.data(), n);
        }
      }
      Permute(ops, rows, b, w, perm.data());
    }
  });
}

// The k largest of each row (last axis), descending; ties keep the lower index first.
template <typename T>
void TopKKernel(const T* x, T* values, int32_t* indices, int64_t rows, int64_t n, int64_t k, int64_t stride) {
  using K = SortKey<T>;
  ParallelFor(rows, RowGrain(n), [&](int64_t begin, int64_t end) {
    // (complemented key, index) ascending = key descending, then index ascending.
    std::vector<std::pair<typename K::U, int64_t>> pairs(static_cast<size_t>(n));
    for (int64_t r = begin; r < end; ++r) {
      const T* src = x + r * n;
      for (int64_t j = 0; j < n; ++j) {
        pairs[static_cast<size_t>(j)] = {static_cast<typename K::U>(~K::To(src[j])), j};
      }
      const auto kth = pairs.begin() + k;
      if (k < n) std::nth_element(pairs.begin(), kth, pairs.end());
      std::sort(pairs.begin(), kth);
      for (int64_t j = 0; j < k; ++j) {
        const int64_t idx = pairs[static_cast<size_t>(j)].second;
        if (values != nullptr) values[r * stride + j] = src[idx];
        if (indices != nullptr) indices[r * stride + j] = static_cast<int32_t>(idx);
      }
    }
  });
}

}  // namespace

void Sort(absl::Span<const SortOperand> operands, absl::Span<const int64_t> shape, int64_t dimension,
          int64_t num_keys, bool descending) {
  int64_t size = 1;
  for (int64_t d : shape) size *= d;
  if (operands.empty() || size == 0) return;
  Rows rows;
  rows.n = shape[static_cast<size_t>(dimension)];
  for (int64_t i = 0; i < dimension; ++i) rows.O *= shape[static_cast<size_t>(i)];
  for (size_t i = static_cast<size_t>(dimension) + 1; i < shape.size(); ++i) rows.I *= shape[i];
  if (operands.size() == 1) {
    DispatchSortable(operands[0].dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      SortSingle<T>(static_cast<const T*>(operands[0].in), static_cast<T*>(operands[0].out), rows, descending);
    });
  } else {
    SortMulti(operands, rows, num_keys, descending);
  }
}

void TopK(DType dtype, const void* x, void* values, int32_t* indices, int64_t rows, int64_t n, int64_t k,
          int64_t out_row_stride) {
  if (rows * k == 0) return;
  DispatchSortable(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    TopKKernel<T>(static_cast<const T*>(x), static_cast<T*>(values), indices, rows, n, k, out_row_stride);
  });
}

}  // namespace jx::lax::kernels

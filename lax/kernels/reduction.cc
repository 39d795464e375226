// Reductions and argmax/argmin (reduction.h). The operand's axes are grouped canonically
// (size-1 axes dropped, neighbouring axes of the same kind merged), which leaves one of four
// layouts:
//   [R]        one contiguous reduction, split into fixed chunks over the pool;
//   [K, R]     row reductions (vectorized Eigen / auto-vectorized loops), parallel over rows;
//   [R, I], [O, R, I]  column accumulation into vector accumulators, parallel over O x
//              inner blocks (or over chunks of R when that is all the parallelism there is);
//   anything else: reduced axes are not contiguous, so the operand is transposed to
//              [kept..., reduced...] first and reduced as rows.
#include "jx/lax/kernels/reduction.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <memory>
#include <type_traits>
#include <vector>

#include "jx/core/errors.h"
#include "jx/core/parallel.h"
#include "jx/lax/kernels/dispatch.h"
#include "jx/lax/kernels/narrow_float.h"
#include "jx/lax/kernels/reducer.h"
#include "jx/lax/kernels/shape_ops.h"

namespace jx::lax::kernels {
namespace {

// ---------------------------------------------------------------------------------------
// Layout: canonical grouping of axes (a non-contiguous reduction is transposed by
// shape_ops.h's Transpose first).

struct Group {
  int64_t size;
  bool reduced;
};

std::vector<Group> GroupAxes(absl::Span<const int64_t> dims, absl::Span<const int64_t> axes) {
  std::vector<bool> reduced(dims.size(), false);
  for (int64_t a : axes) reduced[static_cast<size_t>(a)] = true;
  std::vector<Group> groups;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == 1) continue;
    if (!groups.empty() && groups.back().reduced == reduced[i]) {
      groups.back().size *= dims[i];
    } else {
      groups.push_back({dims[i], reduced[i]});
    }
  }
  return groups;
}

// ---------------------------------------------------------------------------------------
// Reductions. Out is T (rounded once) or, with ReduceOutput::kFloat64, the accumulator type.

// Few rows this long are split into fixed-size chunks (never by thread count, so results
// are deterministic) whose partial results are combined in order.
constexpr int64_t kFewRows = 64;
constexpr int64_t kRowChunk = 4 * kParallelGrain;

// An accumulator as the output element: T rounded as convert f64 -> T rounds, or the
// accumulator itself.
template <ReduceKind K, typename T, typename Out>
Out StoreAs(typename Reducer<K, T>::Acc w) {
  if constexpr (!std::is_same_v<Out, T>) {
    return w;
  } else if constexpr (kIsHalf<T> && std::is_same_v<typename Reducer<K, T>::Acc, double>) {
    return NarrowFromF64<T>(w);
  } else {
    return Reducer<K, T>::Store(w);
  }
}

// Rows: out[k] = reduce(x[k*R : (k+1)*R]).
template <ReduceKind K, typename T, typename Out>
void ReduceRows(const T* x, Out* out, int64_t rows, int64_t R, bool is_bool) {
  using Red = Reducer<K, T>;
  using Acc = typename Red::Acc;
  if (rows < kFewRows && R >= 2 * kRowChunk) {
    const int64_t n_chunks = (R + kRowChunk - 1) / kRowChunk;
    // Not std::vector<Acc>: a bool Acc would pack the partials into shared words.
    std::unique_ptr<Acc[]> partial = std::make_unique<Acc[]>(static_cast<size_t>(rows * n_chunks));
    ParallelFor(rows * n_chunks, 1, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        const int64_t k = t / n_chunks, c = t % n_chunks;
        partial[t] = Reducer<K, T>::Row(x + k * R + c * kRowChunk, std::min(kRowChunk, R - c * kRowChunk), is_bool);
      }
    });
    for (int64_t k = 0; k < rows; ++k) {
      Acc total = partial[k * n_chunks];
      for (int64_t c = 1; c < n_chunks; ++c) total = Red::Combine(total, partial[k * n_chunks + c]);
      out[k] = StoreAs<K, T, Out>(total);
    }
    return;
  }
  ParallelFor(rows, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(R, 1)), [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) out[k] = StoreAs<K, T, Out>(Reducer<K, T>::Row(x + k * R, R, is_bool));
  });
}

// Columns of [O, R, I]: acc[i] = reduce_{r in [r0, r1)} x[o, r, i0 + i] for i < len.
template <ReduceKind K, typename T>
void ColumnBlock(const T* x, int64_t I, int64_t r0, int64_t r1, int64_t i0, int64_t len,
                 typename Reducer<K, T>::Acc* acc, bool is_bool) {
  using Red = Reducer<K, T>;
  using Acc = typename Red::Acc;
  std::fill(acc, acc + len, Red::template Identity<Acc>(is_bool));
  int64_t r = r0;
  for (; r + 4 <= r1; r += 4) Red::Accumulate4(acc, x + r * I + i0, I, len);
  for (; r < r1; ++r) Red::Accumulate(acc, x + r * I + i0, len);
}

template <ReduceKind K, typename T, typename Out>
void ReduceColumns(const T* x, Out* out, int64_t O, int64_t R, int64_t I, bool is_bool) {
  using Red = Reducer<K, T>;
  using Acc = typename Red::Acc;
  constexpr int64_t kBlockI = kColumnBlock;
  const int64_t n_iblocks = (I + kBlockI - 1) / kBlockI;
  const int64_t tasks = O * n_iblocks;
  const int64_t total = O * R * I;
  if (tasks < 8 && total >= 2 * kParallelGrain && R >= 8) {
    // Few column blocks, long reductions: split R into at most 32 chunks (fixed by the shape,
    // not the thread count, so results are deterministic), combine partials in order.
    const int64_t chunk_rows = std::max((R + 31) / 32, (kParallelGrain + O * I - 1) / (O * I));
    const int64_t n_chunks = (R + chunk_rows - 1) / chunk_rows;
    std::unique_ptr<Acc[]> partial = std::make_unique<Acc[]>(static_cast<size_t>(n_chunks * O * I));
    ParallelFor(n_chunks * tasks, 1, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        const int64_t c = t / tasks, o = (t % tasks) / n_iblocks, ib = t % n_iblocks;
        const int64_t i0 = ib * kBlockI, len = std::min(kBlockI, I - i0);
        const int64_t r0 = c * chunk_rows, r1 = std::min(R, r0 + chunk_rows);
        ColumnBlock<K, T>(x + o * R * I, I, r0, r1, i0, len, partial.get() + (c * O + o) * I + i0, is_bool);
      }
    });
    for (int64_t j = 0; j < O * I; ++j) {
      Acc w = partial[j];
      for (int64_t c = 1; c < n_chunks; ++c) w = Red::Combine(w, partial[c * O * I + j]);
      out[j] = StoreAs<K, T, Out>(w);
    }
    return;
  }
  const int64_t grain = std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, R * std::min(I, kBlockI)));
  ParallelFor(tasks, grain, [&](int64_t begin, int64_t end) {
    alignas(64) Acc acc[kBlockI];
    for (int64_t t = begin; t < end; ++t) {
      const int64_t o = t / n_iblocks, i0 = (t % n_iblocks) * kBlockI, len = std::min(kBlockI, I - i0);
      ColumnBlock<K, T>(x + o * R * I, I, 0, R, i0, len, acc, is_bool);
      Out* dst = out + o * I + i0;
      for (int64_t i = 0; i < len; ++i) dst[i] = StoreAs<K, T, Out>(acc[i]);
    }
  });
}

template <ReduceKind K, typename T, typename Out>
void ReduceTyped(const T* x, Out* y, absl::Span<const int64_t> dims, absl::Span<const int64_t> axes, bool is_bool) {
  using Red = Reducer<K, T>;
  int64_t n_in = 1, n_out = 1;
  std::vector<bool> reduced(dims.size(), false);
  for (int64_t a : axes) reduced[static_cast<size_t>(a)] = true;
  for (size_t i = 0; i < dims.size(); ++i) {
    n_in *= dims[i];
    if (!reduced[i]) n_out *= dims[i];
  }
  if (n_out == 0) return;
  if (n_in == 0) {  // reducing an empty axis gives the identity
    std::fill(y, y + n_out, StoreAs<K, T, Out>(Red::template Identity<typename Red::Acc>(is_bool)));
    return;
  }
  const std::vector<Group> groups = GroupAxes(dims, axes);
  const bool any_reduced = std::any_of(groups.begin(), groups.end(), [](const Group& g) { return g.reduced; });
  if (!any_reduced) {  // only size-1 axes reduced: the values are unchanged
    if constexpr (std::is_same_v<Out, T>) {
      std::memcpy(y, x, static_cast<size_t>(n_in) * sizeof(T));
    } else {
      for (int64_t i = 0; i < n_in; ++i) y[i] = Red::Load(x[i]);
    }
    return;
  }
  const size_t ng = groups.size();
  if (ng == 1) return ReduceRows<K, T, Out>(x, y, 1, groups[0].size, is_bool);
  if (ng == 2 && groups[1].reduced) return ReduceRows<K, T, Out>(x, y, groups[0].size, groups[1].size, is_bool);
  if (ng == 2) return ReduceColumns<K, T, Out>(x, y, 1, groups[0].size, groups[1].size, is_bool);
  if (ng == 3 && groups[1].reduced) {
    return ReduceColumns<K, T, Out>(x, y, groups[0].size, groups[1].size, groups[2].size, is_bool);
  }
  // Non-contiguous reduced axes: transpose to [kept..., reduced...], then reduce rows.
  std::vector<int64_t> group_dims, perm;
  int64_t kept = 1, red = 1;
  for (size_t g = 0; g < ng; ++g) {
    group_dims.push_back(groups[g].size);
    if (!groups[g].reduced) {
      perm.push_back(static_cast<int64_t>(g));
      kept *= groups[g].size;
    }
  }
  for (size_t g = 0; g < ng; ++g) {
    if (groups[g].reduced) {
      perm.push_back(static_cast<int64_t>(g));
      red *= groups[g].size;
    }
  }
  std::unique_ptr<T[]> transposed(new T[static_cast<size_t>(n_in)]);
  Transpose(x, group_dims, perm, sizeof(T), transposed.get());
  ReduceRows<K, T, Out>(transposed.get(), y, kept, red, is_bool);
}

template <ReduceKind K>
void ReduceWith(DType dtype, absl::Span<const int64_t> dims, absl::Span<const int64_t> axes, const void* x,
                void* out, ReduceOutput output) {
  const bool is_bool = dtype == DType::kBool;
  // Booleans reduce as 0/1 bytes (max = or, min = and).
  DispatchDType(is_bool ? DType::kUInt8 : dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Acc = typename Reducer<K, T>::Acc;
    constexpr bool kBitwise = K == ReduceKind::kAnd || K == ReduceKind::kOr;
    if constexpr (std::is_same_v<T, bool> || (kBitwise && kIsFloat<T>)) {
      throw InternalError("reduction kernel called on an unsupported dtype");
    } else if (output == ReduceOutput::kFloat64) {
      if constexpr (std::is_same_v<Acc, double>) {
        ReduceTyped<K, T, double>(static_cast<const T*>(x), static_cast<double*>(out), dims, axes, is_bool);
      } else {
        throw InternalError("f64 reduction output requested for a reduction that does not accumulate in f64");
      }
    } else {
      using E = SharedElement<K, T>;
      ReduceTyped<K, E, E>(static_cast<const E*>(x), static_cast<E*>(out), dims, axes, is_bool);
    }
  });
}

// ---------------------------------------------------------------------------------------
// argmax / argmin: first index of the extreme value; NaN counts as the extreme.

template <bool kMax, typename C>
inline bool Better(C x, C best) {
  if constexpr (std::is_floating_point_v<C>) {
    return (kMax ? x > best : x < best) || (x != x && best == best);
  } else {
    return kMax ? x > best : x < best;
  }
}

// Index of the extreme of n contiguous elements: a vectorized reduction, then a search.
template <bool kMax, typename T>
int64_t ArgRow(const T* x, int64_t n) {
  using Red = Reducer<kMax ? ReduceKind::kMax : ReduceKind::kMin, T>;
  using C = typename Red::Acc;
  const C m = static_cast<C>(Reducer<kMax ? ReduceKind::kMax : ReduceKind::kMin, T>::Row(x, n, false));
  if constexpr (std::is_floating_point_v<C>) {
    if (m != m) {
      for (int64_t i = 0; i < n; ++i) {
        const C v = Red::Load(x[i]);
        if (v != v) return i;
      }
    }
  }
  for (int64_t i = 0; i < n; ++i) {
    if (Red::Load(x[i]) == m) return i;
  }
  return 0;
}

// x viewed as [O, R, I], reduced over R; out gets int64 indices (ArgReduceWith narrows them).
template <bool kMax, typename T>
void ArgKernel(const T* x, int64_t* out, int64_t O, int64_t R, int64_t I) {
  using C = ComputeType<T>;
  if (I == 1 && O < kFewRows && R >= 2 * kRowChunk) {
    // Few long rows: the extreme of each fixed-size chunk, then the first best chunk.
    const int64_t n_chunks = (R + kRowChunk - 1) / kRowChunk;
    std::vector<int64_t> partial(static_cast<size_t>(O * n_chunks));
    ParallelFor(O * n_chunks, 1, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        const int64_t o = t / n_chunks, c0 = (t % n_chunks) * kRowChunk;
        partial[static_cast<size_t>(t)] = c0 + ArgRow<kMax>(x + o * R + c0, std::min(kRowChunk, R - c0));
      }
    });
    for (int64_t o = 0; o < O; ++o) {
      int64_t best = partial[static_cast<size_t>(o * n_chunks)];
      for (int64_t c = 1; c < n_chunks; ++c) {
        const int64_t i = partial[static_cast<size_t>(o * n_chunks + c)];
        if (Better<kMax>(static_cast<C>(x[o * R + i]), static_cast<C>(x[o * R + best]))) best = i;
      }
      out[o] = best;
    }
    return;
  }
  if (I == 1) {
    ParallelFor(O, std::max<int64_t>(1, kParallelGrain / R), [&](int64_t begin, int64_t end) {
      for (int64_t o = begin; o < end; ++o) out[o] = ArgRow<kMax>(x + o * R, R);
    });
    return;
  }
  constexpr int64_t kBlockI = kColumnBlock;
  const int64_t n_iblocks = (I + kBlockI - 1) / kBlockI;
  const int64_t grain = std::max<int64_t>(1, kParallelGrain / (R * std::min(I, kBlockI)));
  ParallelFor(O * n_iblocks, grain, [&](int64_t begin, int64_t end) {
    alignas(64) C best[kBlockI];
    alignas(64) C row[kIsHalf<T> ? kBlockI : 1];
    alignas(64) int64_t idx[kBlockI];
    for (int64_t t = begin; t < end; ++t) {
      const int64_t o = t / n_iblocks, i0 = (t % n_iblocks) * kBlockI, len = std::min(kBlockI, I - i0);
      const T* base = x + o * R * I + i0;
      if constexpr (kIsHalf<T>) ToFloat(base, best, len);
      else std::copy(base, base + len, best);
      std::fill(idx, idx + len, int64_t{0});
      for (int64_t r = 1; r < R; ++r) {
        const C* p;
        if constexpr (kIsHalf<T>) {
          ToFloat(base + r * I, row, len);
          p = row;
        } else {
          p = base + r * I;
        }
        for (int64_t i = 0; i < len; ++i) {
          const bool b = Better<kMax>(p[i], best[i]);
          best[i] = b ? p[i] : best[i];
          idx[i] = b ? r : idx[i];
        }
      }
      std::copy(idx, idx + len, out + o * I + i0);
    }
  });
}

template <bool kMax>
void ArgReduceWith(DType dtype, absl::Span<const int64_t> dims, int64_t axis, DType index_dtype, const void* x,
                   void* out) {
  const int64_t R = dims[static_cast<size_t>(axis)];
  int64_t O = 1, I = 1;
  for (int64_t i = 0; i < axis; ++i) O *= dims[static_cast<size_t>(i)];
  for (size_t i = static_cast<size_t>(axis) + 1; i < dims.size(); ++i) I *= dims[i];
  if (O * I == 0) return;
  if (R == 0) throw InternalError("argmax/argmin kernel called on an empty axis");
  if (!IsInteger(index_dtype)) throw InternalError("argmax/argmin kernel called with a non-integer index dtype");
  // The kernel writes int64 indices, narrowed to index_dtype afterwards (one pass over the
  // output, not the operand): one kernel per element type instead of one per element and
  // index type pair, which took most of this file's compile time.
  const bool wide_out = ItemSize(index_dtype) == sizeof(int64_t);
  std::vector<int64_t> wide(wide_out ? 0 : static_cast<size_t>(O * I));
  int64_t* idx = wide_out ? static_cast<int64_t*>(out) : wide.data();
  // Booleans compare as 0/1 bytes.
  DispatchDType(dtype == DType::kBool ? DType::kUInt8 : dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) ArgKernel<kMax>(static_cast<const T*>(x), idx, O, R, I);
  });
  if (wide_out) return;
  DispatchDType(index_dtype, [&](auto itag) {
    using Idx = typename decltype(itag)::type;
    if constexpr (kIsInt<Idx>) {
      Idx* dst = static_cast<Idx*>(out);
      ParallelFor(O * I, kParallelGrain, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) dst[i] = static_cast<Idx>(wide[static_cast<size_t>(i)]);
      });
    }
  });
}

}  // namespace

bool ReducesInFloat64(ReduceOp op, DType dtype) {
  return (op == ReduceOp::kSum || op == ReduceOp::kProd) &&
         (dtype == DType::kFloat16 || dtype == DType::kBFloat16 || dtype == DType::kFloat32);
}

bool IsReduceDefined(ReduceOp op, DType dtype) {
  switch (op) {
    case ReduceOp::kSum: case ReduceOp::kProd: return dtype != DType::kBool;
    case ReduceOp::kMax: case ReduceOp::kMin: return true;
    case ReduceOp::kAnd: case ReduceOp::kOr: return !IsFloating(dtype);
  }
  return false;
}

void Reduce(ReduceOp op, DType dtype, absl::Span<const int64_t> dims, absl::Span<const int64_t> axes,
            const void* x, void* out, ReduceOutput output) {
  switch (op) {
    case ReduceOp::kSum: return ReduceWith<ReduceKind::kSum>(dtype, dims, axes, x, out, output);
    case ReduceOp::kProd: return ReduceWith<ReduceKind::kProd>(dtype, dims, axes, x, out, output);
    case ReduceOp::kMax: return ReduceWith<ReduceKind::kMax>(dtype, dims, axes, x, out, output);
    case ReduceOp::kMin: return ReduceWith<ReduceKind::kMin>(dtype, dims, axes, x, out, output);
    case ReduceOp::kAnd: return ReduceWith<ReduceKind::kAnd>(dtype, dims, axes, x, out, output);
    case ReduceOp::kOr: return ReduceWith<ReduceKind::kOr>(dtype, dims, axes, x, out, output);
  }
}

void ArgReduce(bool find_max, DType dtype, absl::Span<const int64_t> dims, int64_t axis, DType index_dtype,
               const void* x, void* out) {
  if (find_max) {
    ArgReduceWith<true>(dtype, dims, axis, index_dtype, x, out);
  } else {
    ArgReduceWith<false>(dtype, dims, axis, index_dtype, x, out);
  }
}

}  // namespace jx::lax::kernels

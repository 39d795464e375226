// Reductions over a set of axes (reduce_sum/prod/max/min/and/or) and argmax/argmin.
//
// Kernels: the operand's axes are grouped canonically (size-1 axes dropped, neighbouring
// axes of the same kind merged), which leaves one of four layouts:
//   [R]        one contiguous reduction, split into fixed chunks over the pool;
//   [K, R]     row reductions (vectorized Eigen / auto-vectorized loops), parallel over rows;
//   [R, I], [O, R, I]  column accumulation into vector accumulators, parallel over O x
//              inner blocks (or over chunks of R when that is all the parallelism there is);
//   anything else: reduced axes are not contiguous, so the operand is transposed to
//              [kept..., reduced...] first and reduced as rows.
// Chunking is fixed by sizes, never by the thread count, so results are deterministic.
#include "jx/lax/reduction_ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "absl/strings/str_join.h"
#include "jx/lax/binary_ops.h"
#include "jx/lax/convert_ops.h"
#include "jx/lax/kernels/dispatch.h"
#include "jx/lax/kernels/reducer.h"
#include "jx/lax/op_util.h"
#include "jx/lax/primitives.h"
#include "jx/lax/rule_util.h"
#include "jx/lax/shape_ops.h"
#include "jx/lax/slicing_ops.h"

namespace jx::lax {

using internal::BindOp1;

namespace {

// Negative axes count from the end; out-of-range ones are left for abstract eval to report.
std::vector<int64_t> WrapAxes(const Array& x, const std::vector<int64_t>& axes) {
  std::vector<int64_t> out = axes;
  const int64_t rank = x.ndim();
  for (int64_t& a : out) {
    if (a < 0 && a >= -rank) a += rank;
  }
  return out;
}

Array Reduce(Primitive p, const Array& x, const std::vector<int64_t>& axes) {
  return BindOp1(p, {x}, ParamMap{{"axes", WrapAxes(x, axes)}});
}

Array ArgReduce(Primitive p, const Array& x, int64_t axis, DType index_dtype) {
  const int64_t rank = x.ndim();
  if (axis < 0 && axis >= -rank) axis += rank;
  return BindOp1(p, {x}, ParamMap{{"axes", std::vector<int64_t>{axis}}, {"index_dtype", index_dtype}});
}

}  // namespace

Array reduce_sum(const Array& x, const std::vector<int64_t>& axes) { return Reduce(kReduceSum, x, axes); }
Array reduce_prod(const Array& x, const std::vector<int64_t>& axes) { return Reduce(kReduceProd, x, axes); }
Array reduce_max(const Array& x, const std::vector<int64_t>& axes) { return Reduce(kReduceMax, x, axes); }
Array reduce_min(const Array& x, const std::vector<int64_t>& axes) { return Reduce(kReduceMin, x, axes); }
Array reduce_and(const Array& x, const std::vector<int64_t>& axes) { return Reduce(kReduceAnd, x, axes); }
Array reduce_or(const Array& x, const std::vector<int64_t>& axes) { return Reduce(kReduceOr, x, axes); }
Array argmax(const Array& x, int64_t axis, DType index_dtype) { return ArgReduce(kArgmax, x, axis, index_dtype); }
Array argmin(const Array& x, int64_t axis, DType index_dtype) { return ArgReduce(kArgmin, x, axis, index_dtype); }

namespace internal {
namespace {

using kernels::ReduceKind;
using kernels::Reducer;

// ---------------------------------------------------------------------------------------
// Abstract evaluation.

std::string AxesString(const std::vector<int64_t>& axes) {
  if (axes.size() == 1) return StrCat("(", axes[0], ",)");
  return StrCat("(", absl::StrJoin(axes, ", "), ")");
}

// Checks axes against the operand: each in [0, rank), no duplicates. Returns a mask.
std::vector<bool> CheckAxes(std::string_view op, const ShapedArray& x, const std::vector<int64_t>& axes) {
  std::vector<bool> reduced(static_cast<size_t>(x.ndim()), false);
  for (int64_t a : axes) {
    if (a < 0 || a >= x.ndim()) {
      ThrowOpError<ShapeError>(op, "axis ", a, " is out of bounds for operand ", x.str(), " of rank ", x.ndim(),
                               " (axes=", AxesString(axes), ")");
    }
    if (reduced[static_cast<size_t>(a)]) {
      ThrowOpError<ValueError>(op, "duplicate axis ", a, " in axes=", AxesString(axes), " for operand ", x.str());
    }
    reduced[static_cast<size_t>(a)] = true;
  }
  return reduced;
}

void DefineReduceAval(PrimitiveRules& rules, Primitive p, DTypeClass accepted, bool keep_weak) {
  rules.abstract_eval = [p, accepted, keep_weak](InAvals in, const ParamMap& params) -> Avals {
    CheckArity(p.name(), in, 1);
    const ShapedArray& x = *in[0];
    if (!InClass(x.dtype, accepted)) {
      ThrowOpError<TypeError>(p.name(), "does not accept dtype ", dtype_name(x.dtype), " (operand ", x.str(),
                              "); expected a ", ClassName(accepted), " dtype");
    }
    const std::vector<bool> reduced = CheckAxes(p.name(), x, params.GetInts("axes"));
    Shape shape;
    for (int64_t i = 0; i < x.ndim(); ++i) {
      if (!reduced[static_cast<size_t>(i)]) shape.push_back(x.shape[static_cast<size_t>(i)]);
    }
    return {ShapedArray{std::move(shape), x.dtype, keep_weak && x.weak_type}};
  };
}

// ---------------------------------------------------------------------------------------
// Layout: canonical grouping of axes and the transpose for non-contiguous reductions.

struct Group {
  int64_t size;
  bool reduced;
};

std::vector<Group> GroupAxes(const Shape& shape, const std::vector<bool>& reduced) {
  std::vector<Group> groups;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 1) continue;
    if (!groups.empty() && groups.back().reduced == reduced[i]) {
      groups.back().size *= shape[i];
    } else {
      groups.push_back({shape[i], reduced[i]});
    }
  }
  return groups;
}

// Copies in (dims `dims`, row-major) into out transposed by perm: out dim j is in dim perm[j].
template <typename T>
void TransposeCopy(const T* in, T* out, const std::vector<int64_t>& dims, const std::vector<int64_t>& perm) {
  const int64_t rank = static_cast<int64_t>(dims.size());
  std::vector<int64_t> in_strides(dims.size());
  int64_t s = 1;
  for (int64_t i = rank - 1; i >= 0; --i) {
    in_strides[static_cast<size_t>(i)] = s;
    s *= dims[static_cast<size_t>(i)];
  }
  std::vector<int64_t> out_dims(dims.size()), strides(dims.size());
  for (int64_t j = 0; j < rank; ++j) {
    out_dims[static_cast<size_t>(j)] = dims[static_cast<size_t>(perm[static_cast<size_t>(j)])];
    strides[static_cast<size_t>(j)] = in_strides[static_cast<size_t>(perm[static_cast<size_t>(j)])];
  }
  const int64_t inner = out_dims.back();
  const int64_t inner_stride = strides.back();
  const int64_t rows = s / inner;
  ParallelFor(rows, std::max<int64_t>(1, kernels::kParallelGrain / inner), [&](int64_t begin, int64_t end) {
    // Odometer over the outer output dims, started at row `begin`.
    std::vector<int64_t> idx(static_cast<size_t>(rank - 1));
    int64_t rem = begin, offset = 0;
    for (int64_t j = rank - 2; j >= 0; --j) {
      idx[static_cast<size_t>(j)] = rem % out_dims[static_cast<size_t>(j)];
      rem /= out_dims[static_cast<size_t>(j)];
      offset += idx[static_cast<size_t>(j)] * strides[static_cast<size_t>(j)];
    }
    for (int64_t r = begin; r < end; ++r) {
      const T* src = in + offset;
      T* dst = out + r * inner;
      for (int64_t k = 0; k < inner; ++k) dst[k] = src[k * inner_stride];
      for (int64_t j = rank - 2; j >= 0; --j) {
        const size_t u = static_cast<size_t>(j);
        offset += strides[u];
        if (++idx[u] < out_dims[u]) break;
        offset -= strides[u] * out_dims[u];
        idx[u] = 0;
      }
    }
  });
}

// ---------------------------------------------------------------------------------------
// Reduction kernels.

// Few rows this long are split into fixed-size chunks (never by thread count, so results
// are deterministic) whose partial results are combined in order.
constexpr int64_t kFewRows = 64;
constexpr int64_t kRowChunk = 4 * kernels::kParallelGrain;

// Rows: out[k] = reduce(x[k*R : (k+1)*R]).
template <ReduceKind K, typename T>
void ReduceRows(const T* x, T* out, int64_t rows, int64_t R, bool is_bool) {
  using Red = Reducer<K, T>;
  using Acc = typename Red::Acc;
  if (rows < kFewRows && R >= 2 * kRowChunk) {
    const int64_t n_chunks = (R + kRowChunk - 1) / kRowChunk;
    std::vector<Acc> partial(static_cast<size_t>(rows * n_chunks));
    ParallelFor(rows * n_chunks, 1, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        const int64_t k = t / n_chunks, c = t % n_chunks;
        partial[static_cast<size_t>(t)] =
            Red::Row(x + k * R + c * kRowChunk, std::min(kRowChunk, R - c * kRowChunk), is_bool);
      }
    });
    for (int64_t k = 0; k < rows; ++k) {
      Acc total = partial[static_cast<size_t>(k * n_chunks)];
      for (int64_t c = 1; c < n_chunks; ++c) total = Red::Combine(total, partial[static_cast<size_t>(k * n_chunks + c)]);
      out[k] = Red::Store(total);
    }
    return;
  }
  ParallelFor(rows, std::max<int64_t>(1, kernels::kParallelGrain / std::max<int64_t>(R, 1)),
              [&](int64_t begin, int64_t end) {
                for (int64_t k = begin; k < end; ++k) out[k] = Red::Store(Red::Row(x + k * R, R, is_bool));
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

template <ReduceKind K, typename T>
void ReduceColumns(const T* x, T* out, int64_t O, int64_t R, int64_t I, bool is_bool) {
  using Red = Reducer<K, T>;
  using Acc = typename Red::Acc;
  constexpr int64_t kBlockI = kernels::kColumnBlock;
  const int64_t n_iblocks = (I + kBlockI - 1) / kBlockI;
  const int64_t tasks = O * n_iblocks;
  const int64_t total = O * R * I;
  if (tasks < 8 && total >= 2 * kernels::kParallelGrain && R >= 8) {
    // Few column blocks, long reductions: split R into at most 32 chunks (fixed by the shape,
    // not the thread count, so results are deterministic), combine partials in order.
    const int64_t chunk_rows = std::max((R + 31) / 32, (kernels::kParallelGrain + O * I - 1) / (O * I));
    const int64_t n_chunks = (R + chunk_rows - 1) / chunk_rows;
    std::vector<Acc> partial(static_cast<size_t>(n_chunks * O * I));
    ParallelFor(n_chunks * tasks, 1, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        const int64_t c = t / tasks, o = (t % tasks) / n_iblocks, ib = t % n_iblocks;
        const int64_t i0 = ib * kBlockI, len = std::min(kBlockI, I - i0);
        const int64_t r0 = c * chunk_rows, r1 = std::min(R, r0 + chunk_rows);
        ColumnBlock<K, T>(x + o * R * I, I, r0, r1, i0, len, partial.data() + (c * O + o) * I + i0, is_bool);
      }
    });
    for (int64_t j = 0; j < O * I; ++j) {
      Acc w = partial[static_cast<size_t>(j)];
      for (int64_t c = 1; c < n_chunks; ++c) w = Red::Combine(w, partial[static_cast<size_t>(c * O * I + j)]);
      out[j] = Red::Store(w);
    }
    return;
  }
  const int64_t grain = std::max<int64_t>(1, kernels::kParallelGrain / std::max<int64_t>(1, R * std::min(I, kBlockI)));
  ParallelFor(tasks, grain, [&](int64_t begin, int64_t end) {
    alignas(64) Acc acc[kBlockI];
    for (int64_t t = begin; t < end; ++t) {
      const int64_t o = t / n_iblocks, i0 = (t % n_iblocks) * kBlockI, len = std::min(kBlockI, I - i0);
      ColumnBlock<K, T>(x + o * R * I, I, 0, R, i0, len, acc, is_bool);
      T* dst = out + o * I + i0;
      for (int64_t i = 0; i < len; ++i) dst[i] = Red::Store(acc[i]);
    }
  });
}

template <ReduceKind K, typename T>
void ReduceKernel(const Array& in, const std::vector<int64_t>& axes, const Array& out, bool is_bool) {
  using Red = Reducer<K, T>;
  const T* x = kernels::Data<T>(in);
  T* y = kernels::MutableData<T>(out);
  const int64_t n_out = out.size();
  if (n_out == 0) return;
  if (in.size() == 0) {  // reducing an empty axis gives the identity
    const T id = Red::Store(Red::template Identity<typename Red::Acc>(is_bool));
    std::fill(y, y + n_out, id);
    return;
  }
  std::vector<bool> reduced(static_cast<size_t>(in.ndim()), false);
  for (int64_t a : axes) reduced[static_cast<size_t>(a)] = true;
  const std::vector<Group> groups = GroupAxes(in.shape(), reduced);
  const bool any_reduced = std::any_of(groups.begin(), groups.end(), [](const Group& g) { return g.reduced; });
  if (!any_reduced) {  // only size-1 axes reduced: the values are unchanged
    std::memcpy(y, x, static_cast<size_t>(in.nbytes()));
    return;
  }
  const size_t ng = groups.size();
  if (ng == 1) return ReduceRows<K, T>(x, y, 1, groups[0].size, is_bool);
  if (ng == 2 && groups[1].reduced) return ReduceRows<K, T>(x, y, groups[0].size, groups[1].size, is_bool);
  if (ng == 2) return ReduceColumns<K, T>(x, y, 1, groups[0].size, groups[1].size, is_bool);
  if (ng == 3 && groups[1].reduced) {
    return ReduceColumns<K, T>(x, y, groups[0].size, groups[1].size, groups[2].size, is_bool);
  }
  // Non-contiguous reduced axes: transpose to [kept..., reduced...], then reduce rows.
  std::vector<int64_t> dims, perm;
  int64_t kept = 1, red = 1;
  for (size_t g = 0; g < ng; ++g) {
    dims.push_back(groups[g].size);
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
  Array tmp = Array::Empty(in.shape(), in.dtype());
  T* t = kernels::MutableData<T>(tmp);
  TransposeCopy(x, t, dims, perm);
  ReduceRows<K, T>(t, y, kept, red, is_bool);
}

template <ReduceKind K>
void DefineReduce(Registry& r, Primitive p, DTypeClass accepted, bool keep_weak) {
  PrimitiveRules& rules = r.Define(p);
  DefineReduceAval(rules, p, accepted, keep_weak);
  rules.impl = [](absl::Span<const Array> in, const ParamMap& params,
                  absl::Span<const ShapedArray> out_avals) -> Arrays {
    Array out = Array::Empty(out_avals[0]);
    const std::vector<int64_t>& axes = params.GetInts("axes");
    const bool is_bool = in[0].dtype() == bool_;
    // Booleans reduce as 0/1 bytes (max = or, min = and).
    const DType d = is_bool ? uint8 : in[0].dtype();
    kernels::DispatchDType(d, [&](auto tag) {
      using T = typename decltype(tag)::type;
      constexpr bool kBitwise = K == ReduceKind::kAnd || K == ReduceKind::kOr;
      if constexpr (std::is_same_v<T, bool>) {
        throw InternalError("bool reductions dispatch as uint8");
      } else if constexpr (kBitwise && kernels::kIsFloat<T>) {
        throw InternalError("bitwise reduction of a float");
      } else {
        ReduceKernel<K, T>(in[0], axes, out, is_bool);
      }
    });
    return {out};
  };
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
  const C m = static_cast<C>(Red::Row(x, n, false));
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

template <bool kMax, typename T, typename Idx>
void ArgKernel(const T* x, Idx* out, int64_t O, int64_t R, int64_t I) {
  using C = kernels::ComputeType<T>;
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
      out[o] = static_cast<Idx>(best);
    }
    return;
  }
  if (I == 1) {
    ParallelFor(O, std::max<int64_t>(1, kernels::kParallelGrain / R), [&](int64_t begin, int64_t end) {
      for (int64_t o = begin; o < end; ++o) out[o] = static_cast<Idx>(ArgRow<kMax>(x + o * R, R));
    });
    return;
  }
  constexpr int64_t kBlockI = kernels::kColumnBlock;
  const int64_t n_iblocks = (I + kBlockI - 1) / kBlockI;
  const int64_t grain = std::max<int64_t>(1, kernels::kParallelGrain / (R * std::min(I, kBlockI)));
  ParallelFor(O * n_iblocks, grain, [&](int64_t begin, int64_t end) {
    alignas(64) C best[kBlockI];
    alignas(64) C row[kernels::kIsHalf<T> ? kBlockI : 1];
    alignas(64) int64_t idx[kBlockI];
    for (int64_t t = begin; t < end; ++t) {
      const int64_t o = t / n_iblocks, i0 = (t % n_iblocks) * kBlockI, len = std::min(kBlockI, I - i0);
      const T* base = x + o * R * I + i0;
      if constexpr (kernels::kIsHalf<T>) kernels::ToFloat(base, best, len);
      else std::copy(base, base + len, best);
      std::fill(idx, idx + len, int64_t{0});
      for (int64_t r = 1; r < R; ++r) {
        const C* p;
        if constexpr (kernels::kIsHalf<T>) {
          kernels::ToFloat(base + r * I, row, len);
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
      Idx* dst = out + o * I + i0;
      for (int64_t i = 0; i < len; ++i) dst[i] = static_cast<Idx>(idx[i]);
    }
  });
}

template <bool kMax>
void DefineArg(Registry& r, Primitive p) {
  PrimitiveRules& rules = r.Define(p);
  rules.abstract_eval = [p](InAvals in, const ParamMap& params) -> Avals {
    CheckArity(p.name(), in, 1);
    const ShapedArray& x = *in[0];
    const std::vector<int64_t>& axes = params.GetInts("axes");
    const DType index_dtype = params.GetDType("index_dtype");
    if (axes.size() != 1) {
      ThrowOpError<ValueError>(p.name(), "expects exactly one axis, got axes=", AxesString(axes), " for operand ",
                               x.str());
    }
    if (!IsInteger(index_dtype)) {
      ThrowOpError<TypeError>(p.name(), "index_dtype must be an integer dtype, got ", dtype_name(index_dtype),
                              " (operand ", x.str(), ")");
    }
    CheckAxes(p.name(), x, axes);
    const int64_t axis = axes[0];
    if (x.shape[static_cast<size_t>(axis)] == 0) {
      ThrowOpError<ValueError>(p.name(), "requires a non-empty reduced dimension: operand ", x.str(), ", axis ",
                               axis);
    }
    Shape shape = x.shape;
    shape.erase(shape.begin() + axis);
    return {ShapedArray{std::move(shape), index_dtype, false}};
  };
  rules.impl = [](absl::Span<const Array> in, const ParamMap& params,
                  absl::Span<const ShapedArray> out_avals) -> Arrays {
    Array out = Array::Empty(out_avals[0]);
    if (out.size() == 0) return {out};
    const Array& x = in[0];
    const int64_t axis = params.GetInts("axes")[0];
    const int64_t R = x.shape()[static_cast<size_t>(axis)];
    int64_t O = 1, I = 1;
    for (int64_t i = 0; i < axis; ++i) O *= x.shape()[static_cast<size_t>(i)];
    for (int64_t i = axis + 1; i < x.ndim(); ++i) I *= x.shape()[static_cast<size_t>(i)];
    const DType d = x.dtype() == bool_ ? uint8 : x.dtype();
    kernels::DispatchDType(d, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (!std::is_same_v<T, bool>) {
        kernels::DispatchDType(out.dtype(), [&](auto itag) {
          using Idx = typename decltype(itag)::type;
          if constexpr (std::is_integral_v<Idx> && !std::is_same_v<Idx, bool>) {
            ArgKernel<kMax>(kernels::Data<T>(x), kernels::MutableData<Idx>(out), O, R, I);
          }
        });
      }
    });
    return {out};
  };
}

// ---------------------------------------------------------------------------------------
// Transformation rules (jvp, transpose, batching), written with lax ops.

using Axes = std::vector<int64_t>;

// The operand dims a reduction over `axes` keeps, in order: the broadcast_dimensions that
// map its result back onto the operand.
Axes KeptDims(int64_t rank, const Axes& axes) {
  Axes kept;
  for (int64_t d = 0; d < rank; ++d) {
    if (std::find(axes.begin(), axes.end(), d) == axes.end()) kept.push_back(d);
  }
  return kept;
}

// A reduction's result broadcast back over the reduced axes of an operand of shape `shape`.
Array BroadcastBack(const Array& y, const Shape& shape, const Axes& axes) {
  return broadcast_in_dim(y, shape, KeptDims(static_cast<int64_t>(shape.size()), axes));
}

// reduce_prod's tangent by a pairwise product tree (JAX's _reduce_prod_jvp_rule): the
// reduced axes become one leading axis of n rows, halved every level by multiplying even and
// odd rows, with tangents ta * xb + xa * tb. No division, so zeros in x are exact.
Array ProdTangent(const Array& x, const Array& t, const Axes& axes) {
  Axes perm = axes;
  const Axes kept = KeptDims(x.ndim(), axes);
  perm.insert(perm.end(), kept.begin(), kept.end());
  int64_t n = 1, m = 1;
  Shape out_shape;
  for (int64_t a : axes) n *= x.shape()[static_cast<size_t>(a)];
  for (int64_t d : kept) {
    m *= x.shape()[static_cast<size_t>(d)];
    out_shape.push_back(x.shape()[static_cast<size_t>(d)]);
  }
  if (n == 0) return Array{};  // an empty product is the constant 1
  Array xs = reshape(transpose(x, perm), {n, m});
  Array ts = reshape(transpose(t, perm), {n, m});
  const Array one = Array::Scalar(1, x.dtype()), zero = Array::Scalar(0, t.dtype());
  while (n > 1) {
    if (n % 2 == 1) {  // an odd row count gets a row of ones (tangent zero)
      xs = pad(xs, one, {{0, 1, 0}, {0, 0, 0}});
      ts = pad(ts, zero, {{0, 1, 0}, {0, 0, 0}});
      ++n;
    }
    const Array xa = slice(xs, {0, 0}, {n, m}, {2, 1}), xb = slice(xs, {1, 0}, {n, m}, {2, 1});
    const Array ta = slice(ts, {0, 0}, {n, m}, {2, 1}), tb = slice(ts, {1, 0}, {n, m}, {2, 1});
    ts = add(mul(ta, xb), mul(xa, tb));
    xs = mul(xa, xb);
    n /= 2;
  }
  return reshape(ts, out_shape);
}

// reduce_max/min's tangent (JAX's _reduce_chooser_jvp_rule): the mean of the tangents at the
// locations equal to the result. An empty reduction (the identity, +-inf) has a zero tangent.
Array ChooserTangent(const Array& x, const Array& out, const Array& t, const Axes& axes) {
  for (int64_t a : axes) {
    if (x.shape()[static_cast<size_t>(a)] == 0) return Array{};
  }
  const Array at_extreme = convert_element_type(eq(x, BroadcastBack(out, x.shape(), axes)), t.dtype());
  return div(reduce_sum(mul(t, at_extreme), axes), reduce_sum(at_extreme, axes));
}

using TangentFn = Array (*)(const Array& x, const Array& out, const Array& t, const Axes& axes);

// A reduction's jvp: the primal by binding p, the tangent by `tangent` (undefined stays a
// symbolic zero; integer and bool operands only ever have those).
JvpRule ReduceJvp(Primitive p, TangentFn tangent) {
  return [p, tangent](absl::Span<const Array> primals, absl::Span<const Array> tangents, const ParamMap& params) {
    Array out = Bind1(p, primals, params);
    Array t;
    if (tangents[0].defined()) t = tangent(primals[0], out, tangents[0], params.GetInts("axes"));
    return JvpResult{{std::move(out)}, {std::move(t)}};
  };
}

// Nonlinear reductions with integer (or bool) results: the tangent is a symbolic zero.
JvpRule ZeroTangentJvp(Primitive p) {
  return [p](absl::Span<const Array> primals, absl::Span<const Array>, const ParamMap& params) {
    return JvpResult{{Bind1(p, primals, params)}, {Array{}}};
  };
}

// Every reduction batches by moving the batch dim to the front and shifting its axes by one.
BatchRule BatchReduce(Primitive p) {
  return [p](absl::Span<const Array> args, absl::Span<const int64_t> dims, int64_t n, const ParamMap& params) {
    Axes axes = params.GetInts("axes");
    for (int64_t& a : axes) ++a;
    ParamMap shifted = params;
    shifted.Set("axes", std::move(axes));
    const Array x = MoveBatchToFront(args[0], dims[0], n);
    return BatchResult{{Bind1(p, {x}, shifted)}, {0}};
  };
}

constexpr const char* kNotLinear = "not linear: reverse mode transposes the linear ops of its jvp";

void DefineReduceRules(Registry& r) {
  PrimitiveRules& sum = r.Define(kReduceSum);
  sum.jvp = ReduceJvp(kReduceSum, [](const Array&, const Array&, const Array& t, const Axes& axes) {
    return reduce_sum(t, axes);
  });
  // Linear: the cotangent is broadcast back over the reduced axes.
  sum.transpose = [](absl::Span<const Array> cts, absl::Span<const TransposeArg> args, const ParamMap& params) {
    if (!cts[0].defined()) return Arrays{Array{}};
    return Arrays{BroadcastBack(cts[0], args[0].aval.shape, params.GetInts("axes"))};
  };
  r.Define(kReduceProd).jvp =
      ReduceJvp(kReduceProd, [](const Array& x, const Array&, const Array& t, const Axes& axes) {
        return ProdTangent(x, t, axes);
      });
  r.Define(kReduceMax).jvp = ReduceJvp(kReduceMax, ChooserTangent);
  r.Define(kReduceMin).jvp = ReduceJvp(kReduceMin, ChooserTangent);
  for (Primitive p : {kReduceAnd, kReduceOr, kArgmax, kArgmin}) r.Define(p).jvp = ZeroTangentJvp(p);
  for (Primitive p : {kReduceSum, kReduceProd, kReduceMax, kReduceMin, kReduceAnd, kReduceOr, kArgmax, kArgmin}) {
    PrimitiveRules& rules = r.Define(p);
    rules.batch = BatchReduce(p);
    if (p != kReduceSum) rules.unsupported["transpose"] = kNotLinear;
  }
}

}  // namespace

void RegisterReductionOps(Registry& r) {
  DefineReduce<ReduceKind::kSum>(r, kReduceSum, DTypeClass::kNumeric, true);
  DefineReduce<ReduceKind::kProd>(r, kReduceProd, DTypeClass::kNumeric, true);
  DefineReduce<ReduceKind::kMax>(r, kReduceMax, DTypeClass::kAny, true);
  DefineReduce<ReduceKind::kMin>(r, kReduceMin, DTypeClass::kAny, true);
  DefineReduce<ReduceKind::kAnd>(r, kReduceAnd, DTypeClass::kIntegerOrBool, false);
  DefineReduce<ReduceKind::kOr>(r, kReduceOr, DTypeClass::kIntegerOrBool, false);
  DefineArg<true>(r, kArgmax);
  DefineArg<false>(r, kArgmin);
  DefineReduceRules(r);
}

}  // namespace internal
}  // namespace jx::lax

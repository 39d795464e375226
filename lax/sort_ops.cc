// Sorting: multi-operand lexicographic sort along one dimension, and top_k.
//
// Every dtype maps to an unsigned integer key of its width whose order is JAX's total order:
// floats flip their bits so that -NaN < -inf < ... < -0.0 < +0.0 < ... < inf < NaN, signed
// integers flip the sign bit, unsigned integers and booleans are their own keys. Sorting then
// compares plain integers. A single operand sorts its keys directly (equal keys are equal
// bit patterns, so stability is moot); several operands sort (key, index) pairs or an index
// permutation and gather every operand through it. Long rows use an LSD radix sort (8-bit
// digits), short ones std::sort. Rows run in parallel.
#include "jx/lax/sort_ops.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <vector>

#include "jx/lax/convert_ops.h"
#include "jx/lax/kernels/dispatch.h"
#include "jx/lax/op_util.h"
#include "jx/lax/primitives.h"
#include "jx/lax/rule_util.h"
#include "jx/lax/shape_ops.h"
#include "jx/lax/slicing_ops.h"

namespace jx::lax {

std::vector<Array> sort(const std::vector<Array>& operands, int64_t dimension, bool is_stable, int64_t num_keys) {
  if (!operands.empty()) {
    const int64_t rank = operands[0].ndim();
    if (dimension < 0 && dimension >= -rank) dimension += rank;
  }
  Arrays out = internal::BindOp(kSort, absl::MakeConstSpan(operands),
                                ParamMap{{"dimension", dimension}, {"is_stable", is_stable}, {"num_keys", num_keys}});
  return std::vector<Array>(out.begin(), out.end());
}

Array sort(const Array& x, int64_t dimension, bool is_stable) { return sort(std::vector<Array>{x}, dimension, is_stable, 1)[0]; }

std::pair<Array, Array> top_k(const Array& x, int64_t k) {
  const Array in[] = {x};
  Arrays out = internal::BindOp(kTopK, in, ParamMap{{"k", k}});
  return {out[0], out[1]};
}

namespace internal {
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
    if constexpr (kernels::kIsFloat<T>) {
      return (b & kSign) ? static_cast<U>(~b) : static_cast<U>(b | kSign);
    } else if constexpr (std::is_signed_v<T>) {
      return static_cast<U>(b ^ kSign);
    } else {
      return b;
    }
  }
  static T From(U k) {
    U b;
    if constexpr (kernels::kIsFloat<T>) {
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
  kernels::DispatchDType(d == bool_ ? uint8 : d, [&](auto tag) {
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
Rows MakeRows(const Shape& shape, int64_t dim) {
  Rows rows;
  rows.n = shape[static_cast<size_t>(dim)];
  for (int64_t i = 0; i < dim; ++i) rows.O *= shape[static_cast<size_t>(i)];
  for (size_t i = static_cast<size_t>(dim) + 1; i < shape.size(); ++i) rows.I *= shape[i];
  return rows;
}

int64_t RowGrain(int64_t n) { return std::max<int64_t>(1, kernels::kParallelGrain / std::max<int64_t>(1, 4 * n)); }
int64_t TaskGrain(const Rows& rows) {
  return std::max<int64_t>(1, kernels::kParallelGrain / std::max<int64_t>(1, 4 * rows.n * rows.G()));
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

// One operand: sort the keys of each row and map them back.
template <typename T>
void SortSingle(const T* x, T* y, Rows rows) {
  using K = SortKey<T>;
  using U = typename K::U;
  const int64_t n = rows.n, I = rows.I;
  ParallelFor(rows.tasks(), TaskGrain(rows), [&](int64_t begin, int64_t end) {
    std::vector<U> keys(static_cast<size_t>(n * rows.G())), tmp(static_cast<size_t>(n));
    for (int64_t t = begin; t < end; ++t) {
      const int64_t b = rows.base(t), w = rows.width(t);
      for (int64_t j = 0; j < n; ++j) {
        for (int64_t g = 0; g < w; ++g) keys[static_cast<size_t>(g * n + j)] = K::To(x[b + j * I + g]);
      }
      for (int64_t g = 0; g < w; ++g) SortKeys<U>(keys.data() + g * n, tmp.data(), nullptr, nullptr, n);
      for (int64_t j = 0; j < n; ++j) {
        for (int64_t g = 0; g < w; ++g) y[b + j * I + g] = K::From(keys[static_cast<size_t>(g * n + j)]);
      }
    }
  });
}

// Reads the keys of w neighbouring rows of operand a (any dtype), widened to uint64, into
// out[g * n + j].
void LoadKeys(const Array& a, const Rows& rows, int64_t base, int64_t w, uint64_t* out) {
  DispatchSortable(a.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = kernels::Data<T>(a);
    for (int64_t j = 0; j < rows.n; ++j) {
      for (int64_t g = 0; g < w; ++g) out[g * rows.n + j] = SortKey<T>::To(x[base + j * rows.I + g]);
    }
  });
}

// Gathers w neighbouring rows of every operand through perm[g * n + j] into the outputs.
void Permute(absl::Span<const Array> in, const Arrays& out, const Rows& rows, int64_t base, int64_t w,
             const int64_t* perm) {
  const int64_t n = rows.n, I = rows.I;
  for (size_t k = 0; k < in.size(); ++k) {
    auto move = [&](auto* dst, const auto* src) {
      for (int64_t j = 0; j < n; ++j) {
        for (int64_t g = 0; g < w; ++g) dst[base + j * I + g] = src[base + perm[g * n + j] * I + g];
      }
    };
    void* dst = out[k].mutable_data();
    const void* src = in[k].data();
    switch (ItemSize(in[k].dtype())) {
      case 1: move(static_cast<uint8_t*>(dst), static_cast<const uint8_t*>(src)); break;
      case 2: move(static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(src)); break;
      case 4: move(static_cast<uint32_t*>(dst), static_cast<const uint32_t*>(src)); break;
      default: move(static_cast<uint64_t*>(dst), static_cast<const uint64_t*>(src)); break;
    }
  }
}

// Several operands: a stable sort of the index permutation by each key from the last to the
// first (LSD order gives the lexicographic order), then a gather of every operand.
void SortMulti(absl::Span<const Array> in, const Arrays& out, const Rows& rows, int64_t num_keys) {
  const int64_t n = rows.n;
  const size_t rows_n = static_cast<size_t>(n * rows.G());
  ParallelFor(rows.tasks(), TaskGrain(rows), [&](int64_t begin, int64_t end) {
    std::vector<uint64_t> keys(rows_n), sorted(static_cast<size_t>(n)), tmp(static_cast<size_t>(n));
    std::vector<int64_t> perm(rows_n), idx_tmp(static_cast<size_t>(n));
    for (int64_t t = begin; t < end; ++t) {
      const int64_t b = rows.base(t), w = rows.width(t);
      for (int64_t g = 0; g < w; ++g) std::iota(perm.begin() + g * n, perm.begin() + (g + 1) * n, int64_t{0});
      for (int64_t k = num_keys - 1; k >= 0; --k) {
        LoadKeys(in[static_cast<size_t>(k)], rows, b, w, keys.data());
        for (int64_t g = 0; g < w; ++g) {
          int64_t* p = perm.data() + g * n;
          const uint64_t* key = keys.data() + g * n;
          for (int64_t j = 0; j < n; ++j) sorted[static_cast<size_t>(j)] = key[p[j]];
          SortKeys<uint64_t>(sorted.data(), tmp.data(), p, idx_tmp.data(), n);
        }
      }
      Permute(in, out, rows, b, w, perm.data());
    }
  });
}

void DefineSort(Registry& r) {
  PrimitiveRules& rules = r.Define(kSort);
  rules.abstract_eval = [](InAvals in, const ParamMap& params) -> Avals {
    const std::string_view op = kSort.name();
    if (in.empty()) ThrowOpError<TypeError>(op, "expects at least one operand, got none");
    CheckSameShapes(op, in);
    const ShapedArray& x = *in[0];
    const int64_t dimension = params.GetInt("dimension");
    const int64_t num_keys = params.GetInt("num_keys");
    params.GetBool("is_stable");
    if (dimension < 0 || dimension >= x.ndim()) {
      ThrowOpError<ShapeError>(op, "dimension ", dimension, " is out of bounds for operands ", AvalsToString(in),
                               " of rank ", x.ndim());
    }
    if (num_keys < 1 || num_keys > static_cast<int64_t>(in.size())) {
      ThrowOpError<ValueError>(op, "num_keys=", num_keys, " must be between 1 and the number of operands (",
                               in.size(), ": ", AvalsToString(in), ")");
    }
    Avals out;
    for (const ShapedArray* a : in) out.push_back(*a);
    return out;
  };
  rules.impl = [](absl::Span<const Array> in, const ParamMap& params,
                  absl::Span<const ShapedArray> out_avals) -> Arrays {
    Arrays out;
    for (const ShapedArray& a : out_avals) out.push_back(Array::Empty(a));
    if (in[0].size() == 0) return out;
    const Rows rows = MakeRows(in[0].shape(), params.GetInt("dimension"));
    if (in.size() == 1) {
      DispatchSortable(in[0].dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        SortSingle<T>(kernels::Data<T>(in[0]), kernels::MutableData<T>(out[0]), rows);
      });
    } else {
      SortMulti(in, out, rows, params.GetInt("num_keys"));
    }
    return out;
  };
}

// The k largest of each row (last axis), descending; ties keep the lower index first.
template <typename T>
void TopKKernel(const T* x, T* values, int32_t* indices, int64_t rows, int64_t n, int64_t k) {
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
        values[r * k + j] = src[idx];
        indices[r * k + j] = static_cast<int32_t>(idx);
      }
    }
  });
}

void DefineTopK(Registry& r) {
  PrimitiveRules& rules = r.Define(kTopK);
  rules.abstract_eval = [](InAvals in, const ParamMap& params) -> Avals {
    const std::string_view op = kTopK.name();
    CheckArity(op, in, 1);
    const ShapedArray& x = *in[0];
    const int64_t k = params.GetInt("k");
    if (x.ndim() == 0) ThrowOpError<ShapeError>(op, "operand must have at least one dimension, got ", x.str());
    if (k < 0) ThrowOpError<ValueError>(op, "k must be non-negative, got k=", k, " for operand ", x.str());
    if (k > x.shape.back()) {
      ThrowOpError<ValueError>(op, "k=", k, " is larger than the last dimension of operand ", x.str(), " (",
                               x.shape.back(), ")");
    }
    Shape shape = x.shape;
    shape.back() = k;
    return {ShapedArray{shape, x.dtype, x.weak_type}, ShapedArray{shape, int32, false}};
  };
  rules.impl = [](absl::Span<const Array> in, const ParamMap& params,
                  absl::Span<const ShapedArray> out_avals) -> Arrays {
    Array values = Array::Empty(out_avals[0]);
    Array indices = Array::Empty(out_avals[1]);
    if (values.size() == 0) return {values, indices};
    const int64_t n = in[0].shape().back();
    const int64_t k = params.GetInt("k");
    DispatchSortable(in[0].dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      TopKKernel<T>(kernels::Data<T>(in[0]), kernels::MutableData<T>(values), kernels::MutableData<int32_t>(indices),
                    in[0].size() / n, n, k);
    });
    return {values, indices};
  };
}

// ---------------------------------------------------------------------------------------
// Transformation rules (jvp, batching). Neither op is linear; their tangents are gathers.

// out[..., j, ...] = x[..., idx[..., j, ...], ...] along axis (take_along_axis): one gather
// whose index vectors pair idx with iotas over the other dims, as JAX's sort and top_k jvps.
Array TakeAlongAxis(const Array& x, const Array& idx, int64_t axis) {
  // Nothing to gather (and no valid 1-element slice of an empty operand): a zero tangent.
  if (idx.size() == 0 || x.size() == 0) return Array{};
  const int64_t rank = idx.ndim();
  Shape column = idx.shape();
  column.push_back(1);
  std::vector<Array> coords;
  std::vector<int64_t> all_dims, ones(static_cast<size_t>(rank), 1);
  for (int64_t d = 0; d < rank; ++d) {
    const Array coord = d == axis ? convert_element_type(idx, int32) : broadcasted_iota(int32, idx.shape(), d);
    coords.push_back(reshape(coord, column));
    all_dims.push_back(d);
  }
  const GatherDimensionNumbers dnums{/*offset_dims=*/{}, /*collapsed_slice_dims=*/all_dims,
                                     /*start_index_map=*/all_dims};
  return gather(x, concatenate(coords, rank), dnums, ones, GatherScatterMode::kPromiseInBounds);
}

// sort's jvp (JAX's _sort_jvp): an iota sorted alongside the operands is the permutation,
// which gathers every defined tangent.
JvpResult SortJvp(absl::Span<const Array> primals, absl::Span<const Array> tangents, const ParamMap& params) {
  const bool any_tangent = std::any_of(tangents.begin(), tangents.end(), [](const Array& t) { return t.defined(); });
  // Empty operands have empty (symbolic zero) tangents, and no index to gather with.
  if (!any_tangent || primals[0].size() == 0) return JvpResult{Bind(kSort, primals, params), Arrays(primals.size())};
  const int64_t dimension = params.GetInt("dimension");
  Arrays operands(primals.begin(), primals.end());
  operands.push_back(broadcasted_iota(int32, primals[0].shape(), dimension));
  Arrays sorted = Bind(kSort, operands, params);
  const Array perm = sorted.back();
  sorted.pop_back();
  Arrays tangents_out;
  for (const Array& t : tangents) tangents_out.push_back(t.defined() ? TakeAlongAxis(t, perm, dimension) : Array{});
  return JvpResult{std::move(sorted), std::move(tangents_out)};
}

// top_k's jvp (JAX's _top_k_jvp): the tangents at the returned indices; indices get none.
JvpResult TopKJvp(absl::Span<const Array> primals, absl::Span<const Array> tangents, const ParamMap& params) {
  Arrays out = Bind(kTopK, primals, params);
  Array t;
  if (tangents[0].defined() && out[0].size() > 0) t = TakeAlongAxis(tangents[0], out[1], out[1].ndim() - 1);
  return JvpResult{std::move(out), {std::move(t), Array{}}};
}

// sort batches with every operand's batch dim at the front (unbatched ones broadcast) and
// the sorted dimension shifted by one.
BatchResult BatchSort(absl::Span<const Array> args, absl::Span<const int64_t> dims, int64_t n,
                      const ParamMap& params) {
  Arrays moved;
  for (size_t i = 0; i < args.size(); ++i) moved.push_back(MoveBatchToFront(args[i], dims[i], n));
  ParamMap shifted = params;
  shifted.Set("dimension", params.GetInt("dimension") + 1);
  Arrays out = Bind(kSort, moved, shifted);
  return BatchResult{std::move(out), std::vector<int64_t>(args.size(), 0)};
}

// top_k works on the last axis, which stays last once the batch dim is at the front.
BatchResult BatchTopK(absl::Span<const Array> args, absl::Span<const int64_t> dims, int64_t n,
                      const ParamMap& params) {
  return BatchResult{Bind(kTopK, {MoveBatchToFront(args[0], dims[0], n)}, params), {0, 0}};
}

void DefineSortRules(Registry& r) {
  constexpr const char* kNotLinear = "not linear: reverse mode transposes the linear ops of its jvp";
  PrimitiveRules& sort_rules = r.Define(kSort);
  sort_rules.jvp = SortJvp;
  sort_rules.batch = BatchSort;
  sort_rules.unsupported["transpose"] = kNotLinear;
  PrimitiveRules& top_k_rules = r.Define(kTopK);
  top_k_rules.jvp = TopKJvp;
  top_k_rules.batch = BatchTopK;
  top_k_rules.unsupported["transpose"] = kNotLinear;
}

}  // namespace

void RegisterSortOps(Registry& r) {
  DefineSort(r);
  DefineTopK(r);
  DefineSortRules(r);
}

}  // namespace internal
}  // namespace jx::lax

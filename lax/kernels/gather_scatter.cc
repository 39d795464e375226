// Gather and scatter (see gather_scatter.h). Every batch position (gather) or update position
// (scatter) moves one window, whose dims are merged into contiguous runs once up front. The
// common "take rows" gather and "combine rows" scatter get tight loops. Scatter is
// deterministic: updates apply in order, and parallel runs split the destination (rows or
// columns) between threads, never the updates.
#include "jx/lax/kernels/gather_scatter.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "jx/core/parallel.h"
#include "jx/lax/kernels/copy_kernels.h"
#include "jx/lax/kernels/dispatch.h"

namespace jx::lax::kernels {
namespace {

bool Contains(const std::vector<int64_t>& v, int64_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }

std::vector<int64_t> Strides(absl::Span<const int64_t> shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) s[d - 1] = s[d] * shape[d];
  return s;
}

int64_t Elements(absl::Span<const int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// The windows' dims after dropping size-1 dims and merging dims contiguous in both arrays:
// outer dims walked by an odometer, then one inner run of `len` elements.
struct WindowPlan {
  DimVec sizes, src_strides, dst_strides;
  int64_t len = 1, src_inner = 1, dst_inner = 1;
  bool contiguous() const { return src_inner == 1 && dst_inner == 1; }
};

WindowPlan PlanWindow(const std::vector<int64_t>& sizes, const std::vector<int64_t>& src_strides,
                      const std::vector<int64_t>& dst_strides) {
  WindowPlan w;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 1) continue;
    if (!w.sizes.empty() && w.src_strides.back() == src_strides[d] * sizes[d] &&
        w.dst_strides.back() == dst_strides[d] * sizes[d]) {
      w.sizes.back() *= sizes[d];
      w.src_strides.back() = src_strides[d];
      w.dst_strides.back() = dst_strides[d];
    } else {
      w.sizes.push_back(sizes[d]);
      w.src_strides.push_back(src_strides[d]);
      w.dst_strides.push_back(dst_strides[d]);
    }
  }
  if (!w.sizes.empty()) {
    w.len = w.sizes.back();
    w.src_inner = w.src_strides.back();
    w.dst_inner = w.dst_strides.back();
    w.sizes.pop_back();
    w.src_strides.pop_back();
    w.dst_strides.pop_back();
  }
  return w;
}

// Calls fn(src_offset, dst_offset) for every inner run of the window (serially).
template <typename Fn>
void ForEachRun(const WindowPlan& w, Fn&& fn) {
  const int n = static_cast<int>(w.sizes.size());
  DimVec idx(w.sizes.size(), 0);
  int64_t so = 0, doff = 0;
  while (true) {
    fn(so, doff);
    int d = n - 1;
    for (; d >= 0; --d) {
      ++idx[d];
      so += w.src_strides[d];
      doff += w.dst_strides[d];
      if (idx[d] < w.sizes[d]) break;
      so -= w.src_strides[d] * w.sizes[d];
      doff -= w.dst_strides[d] * w.sizes[d];
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}

// Walks the positions of a batch shape in row-major order, keeping the coordinates.
struct BatchCursor {
  const std::vector<int64_t>* shape;
  DimVec coord;
  BatchCursor(const std::vector<int64_t>& s, int64_t flat) : shape(&s), coord(s.size(), 0) {
    for (size_t d = s.size(); d-- > 0;) {
      coord[d] = flat % s[d];
      flat /= s[d];
    }
  }
  void Next() {
    for (size_t d = shape->size(); d-- > 0;) {
      if (++coord[d] < (*shape)[d]) return;
      coord[d] = 0;
    }
  }
};

// Reads the index vectors of an integer index array as int64, a block at a time, so big
// index arrays are never copied whole. One reader per thread; items are best requested in
// increasing order.
class IndexReader {
 public:
  IndexReader(const IndexArray& a, int64_t items, int64_t per_item)
      : a_(a), items_(items), n_(per_item), buf_(static_cast<size_t>(std::max<int64_t>(1, kBlock * per_item))) {}
  const int64_t* Get(int64_t item) {
    if (item < begin_ || item >= end_) Load(item);
    return buf_.data() + (item - begin_) * n_;
  }

 private:
  static constexpr int64_t kBlock = 1024;
  void Load(int64_t item) {
    begin_ = item;
    end_ = std::min(items_, item + kBlock);
    const int64_t first = begin_ * n_, count = (end_ - begin_) * n_;
    int64_t* out = buf_.data();
    DispatchDType(a_.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (kIsInt<T>) {
        const T* p = static_cast<const T*>(a_.data) + first;
        for (int64_t i = 0; i < count; ++i) {
          if constexpr (std::is_unsigned_v<T> && sizeof(T) == 8) {
            out[i] = p[i] > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
                         ? std::numeric_limits<int64_t>::max()
                         : static_cast<int64_t>(p[i]);
          } else {
            out[i] = static_cast<int64_t>(p[i]);
          }
        }
      } else {
        throw InternalError("gather/scatter indices must have an integer dtype");
      }
    });
  }
  const IndexArray& a_;
  int64_t items_, n_, begin_ = 0, end_ = 0;
  std::vector<int64_t> buf_;
};

// The batch positions of an index array: its dims without the index vector dim.
struct IndexLayout {
  std::vector<int64_t> batch_shape;
  int64_t n_idx = 1, batches = 1;
};
IndexLayout LayoutOf(const IndexArray& a, bool implicit_vector) {
  IndexLayout l;
  if (implicit_vector) {
    l.batch_shape.assign(a.shape.begin(), a.shape.end());
  } else {
    l.batch_shape.assign(a.shape.begin(), a.shape.end() - 1);
    l.n_idx = a.shape.back();
  }
  l.batches = Elements(l.batch_shape);
  return l;
}

// Start positions of one index vector in the operand; false when the window of `sizes` is
// not entirely in bounds (never when clamping).
inline bool ComputeStart(const int64_t* idx, const std::vector<int64_t>& index_map,
                         absl::Span<const int64_t> operand_shape, const std::vector<int64_t>& sizes, bool clamp,
                         DimVec& start) {
  for (size_t k = 0; k < index_map.size(); ++k) {
    const size_t d = static_cast<size_t>(index_map[k]);
    const int64_t hi = operand_shape[d] - sizes[d];
    int64_t s = idx[k];
    if (clamp) {
      s = std::clamp<int64_t>(s, 0, std::max<int64_t>(hi, 0));
    } else if (s < 0 || s > hi) {
      return false;
    }
    start[d] = s;
  }
  return true;
}

// True when dims (sorted) are the trailing dims of a rank-`rank` array.
bool Trailing(const std::vector<int64_t>& dims, size_t rank) {
  for (size_t k = 0; k < dims.size(); ++k) {
    if (dims[k] != static_cast<int64_t>(rank - dims.size() + k)) return false;
  }
  return true;
}

// The windows of a scatter: per operand dim the window size (1 for inserted and batching
// dims), the plan walking one window in the updates and the operand, and the update strides
// of the scatter (non-window) dims.
struct ScatterWindows {
  IndexLayout layout;
  std::vector<int64_t> x_strides, u_scatter_strides, win;
  WindowPlan plan;
  int64_t window = 1;  // elements per window
};

ScatterWindows PlanScatterWindows(absl::Span<const int64_t> xs, const IndexArray& index_array,
                                  absl::Span<const int64_t> us, const ScatterDims& dn) {
  ScatterWindows sw;
  sw.layout = LayoutOf(index_array, dn.implicit_index_vector);
  sw.x_strides = Strides(xs);
  const std::vector<int64_t> u_strides = Strides(us);
  for (size_t j = 0; j < us.size(); ++j) {
    if (!Contains(dn.update_window_dims, static_cast<int64_t>(j))) sw.u_scatter_strides.push_back(u_strides[j]);
  }
  sw.win.assign(xs.size(), 1);
  std::vector<int64_t> wsizes, wsrc, wdst;
  size_t w = 0;
  for (size_t d = 0; d < xs.size(); ++d) {
    if (Contains(dn.inserted_window_dims, static_cast<int64_t>(d)) ||
        Contains(dn.operand_batching_dims, static_cast<int64_t>(d))) {
      continue;
    }
    const size_t ud = static_cast<size_t>(dn.update_window_dims[w++]);
    sw.win[d] = us[ud];
    wsizes.push_back(us[ud]);
    wsrc.push_back(u_strides[ud]);
    wdst.push_back(sw.x_strides[d]);
  }
  sw.plan = PlanWindow(wsizes, wsrc, wdst);
  for (int64_t s : wsizes) sw.window *= s;
  return sw;
}

// Calls fn(update offset, operand offset) of every window that is kept (clamped or in
// bounds), serially in update order.
template <typename Fn>
void ForEachScatterWindow(const ScatterWindows& sw, absl::Span<const int64_t> xs, const IndexArray& index_array,
                          const ScatterDims& dn, bool clamp, Fn&& fn) {
  const IndexLayout& il = sw.layout;
  IndexReader indices(index_array, il.batches, il.n_idx);
  BatchCursor cur(il.batch_shape, 0);
  DimVec start(xs.size(), 0);
  for (int64_t k = 0; k < il.batches; ++k, cur.Next()) {
    for (size_t j = 0; j < dn.operand_batching_dims.size(); ++j) {
      start[static_cast<size_t>(dn.operand_batching_dims[j])] =
          cur.coord[static_cast<size_t>(dn.scatter_indices_batching_dims[j])];
    }
    if (!ComputeStart(indices.Get(k), dn.scatter_dims_to_operand_dims, xs, sw.win, clamp, start)) continue;
    int64_t ubase = 0, xbase = 0;
    for (size_t j = 0; j < il.batch_shape.size(); ++j) ubase += cur.coord[j] * sw.u_scatter_strides[j];
    for (size_t d = 0; d < xs.size(); ++d) xbase += start[d] * sw.x_strides[d];
    fn(ubase, xbase);
  }
}

// ---- scatter combiners ----

template <ScatterCombiner K, typename A>
inline A Combine(A acc, A u) {
  if constexpr (K == ScatterCombiner::kOverwrite) {
    return u;
  } else if constexpr (std::is_same_v<A, bool>) {
    return (K == ScatterCombiner::kAdd || K == ScatterCombiner::kMax) ? (acc || u) : (acc && u);
  } else if constexpr (std::is_integral_v<A>) {
    using W = WrapType<A>;
    if constexpr (K == ScatterCombiner::kAdd) return static_cast<A>(static_cast<W>(acc) + static_cast<W>(u));
    if constexpr (K == ScatterCombiner::kMul) return static_cast<A>(static_cast<W>(acc) * static_cast<W>(u));
    if constexpr (K == ScatterCombiner::kMax) return acc >= u ? acc : u;
    else return acc <= u ? acc : u;
  } else {
    if constexpr (K == ScatterCombiner::kAdd) return acc + u;
    if constexpr (K == ScatterCombiner::kMul) return acc * u;
    constexpr bool kMax = K == ScatterCombiner::kMax;
    if (std::isnan(acc) || std::isnan(u)) return std::numeric_limits<A>::quiet_NaN();
    if (acc == u) return std::signbit(acc) == kMax ? u : acc;
    return kMax == (acc > u) ? acc : u;
  }
}

// Applies the updates (element type T) into acc (element type A: T, or f32 for 16-bit floats).
template <ScatterCombiner K, typename A, typename T>
void ScatterInto(A* acc, const T* upd, absl::Span<const int64_t> xs, absl::Span<const int64_t> us,
                 const IndexArray& index_array, const ScatterDims& dn, bool clamp) {
  const ScatterWindows sw = PlanScatterWindows(xs, index_array, us, dn);
  const IndexLayout& il = sw.layout;
  const int64_t n_updates = il.batches;
  const std::vector<int64_t>& x_strides = sw.x_strides;
  const std::vector<int64_t>& win = sw.win;
  const WindowPlan& plan = sw.plan;
  const int64_t window = sw.window;
  if (window == 0 || n_updates == 0) return;

  // Rows: one index, no batching dims, the window one contiguous run (at most one element
  // wide along the indexed dim, so distinct indices touch disjoint runs), updates laid out
  // [scatter dims..., window]. Threads own disjoint index ranges (or column ranges for long
  // rows) and apply updates in order, so results do not depend on the thread count.
  const size_t d0 =
      static_cast<size_t>(dn.scatter_dims_to_operand_dims.empty() ? 0 : dn.scatter_dims_to_operand_dims[0]);
  const bool rows = il.n_idx == 1 && dn.scatter_dims_to_operand_dims.size() == 1 &&
                    dn.operand_batching_dims.empty() && plan.sizes.empty() && plan.contiguous() &&
                    Trailing(dn.update_window_dims, us.size()) && win[d0] == 1;
  if (rows) {
    const int64_t hi = xs[d0] - 1, stride = x_strides[d0];
    auto apply = [&](IndexReader& indices, int64_t k, int64_t lo_idx, int64_t hi_idx, int64_t c0, int64_t c1) {
      int64_t s = *indices.Get(k);
      if (clamp) {
        s = std::clamp<int64_t>(s, 0, hi);
      } else if (s < 0 || s > hi) {
        return;
      }
      if (s < lo_idx || s >= hi_idx) return;
      A* o = acc + s * stride;
      const T* u = upd + k * window;
      for (int64_t c = c0; c < c1; ++c) o[c] = Combine<K, A>(o[c], static_cast<A>(u[c]));
    };
    const int64_t work = n_updates * window;
    const int64_t threads = NumThreads();
    if (work < 2 * kParallelGrain || threads == 1) {
      IndexReader indices(index_array, n_updates, 1);
      for (int64_t k = 0; k < n_updates; ++k) apply(indices, k, 0, hi + 1, 0, window);
    } else if (window >= 2048) {
      ParallelFor(window, 512, [&](int64_t c0, int64_t c1) {
        IndexReader indices(index_array, n_updates, 1);
        for (int64_t k = 0; k < n_updates; ++k) apply(indices, k, 0, hi + 1, c0, c1);
      });
    } else {
      // One index range per thread: every thread reads all indices, so keep chunks few.
      ParallelFor(hi + 1, (hi + threads) / threads, [&](int64_t r0, int64_t r1) {
        IndexReader indices(index_array, n_updates, 1);
        for (int64_t k = 0; k < n_updates; ++k) apply(indices, k, r0, r1, 0, window);
      });
    }
    return;
  }
  // General windows: serial, in update order.
  ForEachScatterWindow(sw, xs, index_array, dn, clamp, [&](int64_t ubase, int64_t xbase) {
    const T* u = upd + ubase;
    A* o = acc + xbase;
    ForEachRun(plan, [&](int64_t so, int64_t doff) {
      for (int64_t c = 0; c < plan.len; ++c) {
        A& dst = o[doff + c * plan.dst_inner];
        dst = Combine<K, A>(dst, static_cast<A>(u[so + c * plan.src_inner]));
      }
    });
  });
}

// One ScatterInto per combiner and element type the combiner can tell apart (48 instead of 65:
// they are most of this file's compile time).
template <ScatterCombiner K>
void ScatterTyped(DType dtype, void* out, absl::Span<const int64_t> xs, const IndexArray& indices,
                  const void* updates, absl::Span<const int64_t> us, const ScatterDims& dn, bool clamp) {
  if constexpr (K == ScatterCombiner::kOverwrite) {
    // Overwriting moves bits: any type of the element's size will do.
    DispatchBySize(ItemSize(dtype), [&](auto tag) {
      using U = typename decltype(tag)::type;
      ScatterInto<K, U, U>(static_cast<U*>(out), static_cast<const U*>(updates), xs, us, indices, dn, clamp);
    });
  } else {
    DispatchDType(dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* o = static_cast<T*>(out);
      const T* u = static_cast<const T*>(updates);
      if constexpr (kIsHalf<T>) {
        // Combine in f32, round once.
        const int64_t n = Elements(xs);
        std::vector<float> acc(static_cast<size_t>(n));
        ParallelFor(n, kParallelGrain, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) acc[static_cast<size_t>(i)] = static_cast<float>(o[i]);
        });
        ScatterInto<K, float, T>(acc.data(), u, xs, us, indices, dn, clamp);
        ParallelFor(n, kParallelGrain, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) o[i] = T(acc[static_cast<size_t>(i)]);
        });
      } else if constexpr (kIsInt<T> && std::is_signed_v<T> &&
                           (K == ScatterCombiner::kAdd || K == ScatterCombiner::kMul)) {
        // Wrapping add and multiply give the same bits on signed and unsigned integers.
        using U = std::make_unsigned_t<T>;
        ScatterInto<K, U, U>(reinterpret_cast<U*>(o), reinterpret_cast<const U*>(u), xs, us, indices, dn, clamp);
      } else {
        ScatterInto<K, T, T>(o, u, xs, us, indices, dn, clamp);
      }
    });
  }
}

}  // namespace

void Gather(int64_t elem_size, const void* operand, absl::Span<const int64_t> xs, const IndexArray& index_array,
            const GatherDims& dn, absl::Span<const int64_t> slice_sizes, const void* fill_value, void* out,
            absl::Span<const int64_t> out_shape) {
  if (Elements(out_shape) == 0) return;
  const bool clamp = fill_value == nullptr;
  const IndexLayout il = LayoutOf(index_array, dn.implicit_index_vector);
  const int64_t batches = il.batches;
  const std::vector<int64_t> sizes(slice_sizes.begin(), slice_sizes.end());
  const std::vector<int64_t> x_strides = Strides(xs);
  const std::vector<int64_t> out_strides = Strides(out_shape);
  std::vector<int64_t> out_batch_strides;
  for (size_t j = 0; j < out_strides.size(); ++j) {
    if (!Contains(dn.offset_dims, static_cast<int64_t>(j))) out_batch_strides.push_back(out_strides[j]);
  }
  std::vector<int64_t> wsizes, wsrc, wdst;
  size_t w = 0;
  for (int64_t d = 0; d < static_cast<int64_t>(xs.size()); ++d) {
    if (Contains(dn.collapsed_slice_dims, d) || Contains(dn.operand_batching_dims, d)) continue;
    wsizes.push_back(sizes[static_cast<size_t>(d)]);
    wsrc.push_back(x_strides[static_cast<size_t>(d)]);
    wdst.push_back(out_strides[static_cast<size_t>(dn.offset_dims[w++])]);
  }
  const WindowPlan plan = PlanWindow(wsizes, wsrc, wdst);
  int64_t window = 1;
  for (int64_t s : wsizes) window *= s;
  // Take rows: one index, no batching dims, the window one contiguous run at the end of out.
  const bool take_rows = il.n_idx == 1 && dn.start_index_map.size() == 1 && dn.operand_batching_dims.empty() &&
                         plan.sizes.empty() && plan.contiguous() && Trailing(dn.offset_dims, out_shape.size());
  DispatchBySize(elem_size, [&](auto tag) {
    using U = typename decltype(tag)::type;
    const U* src = static_cast<const U*>(operand);
    U* dst = static_cast<U*>(out);
    U fv{};
    if (!clamp) std::memcpy(&fv, fill_value, sizeof(U));
    if (take_rows) {
      const size_t d = static_cast<size_t>(dn.start_index_map[0]);
      const int64_t hi = xs[d] - sizes[d], stride = x_strides[d];
      ParallelFor(batches, RowGrain(window), [&](int64_t b0, int64_t b1) {
        IndexReader indices(index_array, batches, 1);
        for (int64_t b = b0; b < b1; ++b) {
          int64_t s = *indices.Get(b);
          U* o = dst + b * window;
          if (clamp) {
            s = std::clamp<int64_t>(s, 0, hi);
          } else if (s < 0 || s > hi) {
            std::fill_n(o, window, fv);
            continue;
          }
          const U* r = src + s * stride;
          if (window <= 8) {
            for (int64_t k = 0; k < window; ++k) o[k] = r[k];
          } else {
            std::memcpy(o, r, static_cast<size_t>(window) * sizeof(U));
          }
        }
      });
      return;
    }
    ParallelFor(batches, RowGrain(window), [&](int64_t b0, int64_t b1) {
      IndexReader indices(index_array, batches, il.n_idx);
      BatchCursor cur(il.batch_shape, b0);
      DimVec start(xs.size(), 0);
      for (int64_t b = b0; b < b1; ++b, cur.Next()) {
        int64_t out_base = 0;
        for (size_t k = 0; k < il.batch_shape.size(); ++k) out_base += cur.coord[k] * out_batch_strides[k];
        for (size_t j = 0; j < dn.operand_batching_dims.size(); ++j) {
          start[static_cast<size_t>(dn.operand_batching_dims[j])] =
              cur.coord[static_cast<size_t>(dn.start_indices_batching_dims[j])];
        }
        const bool ok = ComputeStart(indices.Get(b), dn.start_index_map, xs, sizes, clamp, start);
        U* o = dst + out_base;
        if (!ok) {
          ForEachRun(plan, [&](int64_t, int64_t doff) {
            for (int64_t k = 0; k < plan.len; ++k) o[doff + k * plan.dst_inner] = fv;
          });
          continue;
        }
        int64_t src_base = 0;
        for (size_t d = 0; d < xs.size(); ++d) src_base += start[d] * x_strides[d];
        const U* s = src + src_base;
        ForEachRun(plan, [&](int64_t so, int64_t doff) {
          if (plan.contiguous()) {
            std::memcpy(o + doff, s + so, static_cast<size_t>(plan.len) * sizeof(U));
          } else {
            for (int64_t k = 0; k < plan.len; ++k) o[doff + k * plan.dst_inner] = s[so + k * plan.src_inner];
          }
        });
      }
    });
  });
}

void ScatterDestinations(absl::Span<const int64_t> xs, const IndexArray& index_array, absl::Span<const int64_t> us,
                         const ScatterDims& dn, bool clamp, int64_t* out) {
  std::fill(out, out + Elements(us), int64_t{-1});
  const ScatterWindows sw = PlanScatterWindows(xs, index_array, us, dn);
  if (sw.window == 0) return;
  const WindowPlan& plan = sw.plan;
  ForEachScatterWindow(sw, xs, index_array, dn, clamp, [&](int64_t ubase, int64_t xbase) {
    ForEachRun(plan, [&](int64_t so, int64_t doff) {
      for (int64_t c = 0; c < plan.len; ++c) out[ubase + so + c * plan.src_inner] = xbase + doff + c * plan.dst_inner;
    });
  });
}

void Scatter(DType dtype, ScatterCombiner combiner, void* out, absl::Span<const int64_t> operand_shape,
             const IndexArray& indices, const void* updates, absl::Span<const int64_t> updates_shape,
             const ScatterDims& dims, bool clamp) {
  if (Elements(operand_shape) == 0 || Elements(updates_shape) == 0) return;
  switch (combiner) {
    case ScatterCombiner::kOverwrite:
      return ScatterTyped<ScatterCombiner::kOverwrite>(dtype, out, operand_shape, indices, updates, updates_shape,
                                                       dims, clamp);
    case ScatterCombiner::kAdd:
      return ScatterTyped<ScatterCombiner::kAdd>(dtype, out, operand_shape, indices, updates, updates_shape, dims,
                                                 clamp);
    case ScatterCombiner::kMul:
      return ScatterTyped<ScatterCombiner::kMul>(dtype, out, operand_shape, indices, updates, updates_shape, dims,
                                                 clamp);
    case ScatterCombiner::kMin:
      return ScatterTyped<ScatterCombiner::kMin>(dtype, out, operand_shape, indices, updates, updates_shape, dims,
                                                 clamp);
    case ScatterCombiner::kMax:
      return ScatterTyped<ScatterCombiner::kMax>(dtype, out, operand_shape, indices, updates, updates_shape, dims,
                                                 clamp);
  }
}

}  // namespace jx::lax::kernels

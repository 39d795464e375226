// Windowed reductions (see window.h).
//
// Trailing axes the window leaves alone (size 1, stride 1, no padding or dilation, e.g.
// channels in NHWC) merge into one contiguous run of C elements. The last windowed axis is
// processed a whole output line at a time: for every valid tap of the other windowed axes and
// every tap of the last one, a contiguous (C > 1) or strided (C == 1, e.g. NCHW) loop folds an
// input line into a line of accumulators. Tap ranges are computed per line, so the inner
// loops hold no bounds checks and no per-element calls. Lines run in parallel at fixed
// boundaries; each output folds its taps in row-major window order whatever the split.
#include "jx/lax/kernels/window.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "jx/core/errors.h"
#include "jx/core/parallel.h"
#include "jx/lax/kernels/reducer.h"

namespace jx::lax::kernels {
namespace {

// Floor and ceiling division for a positive divisor.
int64_t FloorDiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
int64_t CeilDiv(int64_t a, int64_t b) { return -FloorDiv(-a, b); }

int64_t Dilated(const WindowAxis& a) { return a.in == 0 ? 0 : (a.in - 1) * a.base_dilation + 1; }
bool Trivial(const WindowAxis& a) {
  return a.size == 1 && a.stride == 1 && a.pad_lo == 0 && a.pad_hi == 0 && a.base_dilation == 1 && a.in == a.out;
}
// Input index of tap k for output index o, or -1 for padding or a base-dilation hole.
int64_t InputIndex(const WindowAxis& a, int64_t o, int64_t k) {
  const int64_t pos = o * a.stride + k * a.window_dilation - a.pad_lo;
  if (pos < 0 || pos >= Dilated(a) || pos % a.base_dilation != 0) return -1;
  return pos / a.base_dilation;
}

// For each output index of one axis, the input offsets (in elements) of its valid taps.
struct TapTable {
  std::vector<int64_t> begin;  // taps of output o are offsets[begin[o], begin[o + 1])
  std::vector<int64_t> offsets;
};
TapTable MakeTapTable(const WindowAxis& a, int64_t stride_elems) {
  TapTable t;
  t.begin.reserve(static_cast<size_t>(a.out) + 1);
  for (int64_t o = 0; o < a.out; ++o) {
    t.begin.push_back(static_cast<int64_t>(t.offsets.size()));
    for (int64_t k = 0; k < a.size; ++k) {
      const int64_t i = InputIndex(a, o, k);
      if (i >= 0) t.offsets.push_back(i * stride_elems);
    }
  }
  t.begin.push_back(static_cast<int64_t>(t.offsets.size()));
  return t;
}

// acc[i] = acc[i] op x[i * stride] for i < n, with the common strides as constants so the
// compiler vectorizes them (loads and permutes, no gathers).
template <typename M, typename W, typename T>
inline void FoldStrided(W* __restrict acc, const T* __restrict x, int64_t n, int64_t stride) {
  if (stride == 1) {
    for (int64_t i = 0; i < n; ++i) acc[i] = M::Combine(acc[i], M::Load(x[i]));
  } else if (stride == 2) {
    for (int64_t i = 0; i < n; ++i) acc[i] = M::Combine(acc[i], M::Load(x[2 * i]));
  } else {
    for (int64_t i = 0; i < n; ++i) acc[i] = M::Combine(acc[i], M::Load(x[i * stride]));
  }
}

template <ReduceKind K, typename T>
void WindowKernel(const T* x, T* y, std::vector<WindowAxis> axes, const T* init) {
  using M = XlaReducer<K, T>;
  using W = typename M::W;
  // Merge the trailing untouched axes into a contiguous run of C elements.
  int64_t C = 1;
  while (!axes.empty() && Trivial(axes.back())) {
    C *= axes.back().in;
    axes.pop_back();
  }
  int64_t n_out = C;
  for (const WindowAxis& a : axes) n_out *= a.out;
  if (n_out == 0) return;
  const W start = init != nullptr ? M::Load(*init) : M::Red::template Identity<W>(false);
  if (axes.empty()) {  // every axis untouched: each output folds init with one element
    ParallelFor(n_out, kParallelGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) y[i] = M::Store(M::Combine(start, M::Load(x[i])));
    });
    return;
  }
  const size_t L = axes.size() - 1;
  const WindowAxis& last = axes.back();
  // Input strides (elements) of the windowed axes, and tap tables of the outer ones.
  std::vector<int64_t> in_stride(axes.size());
  in_stride[L] = C;
  for (size_t j = L; j-- > 0;) in_stride[j] = in_stride[j + 1] * axes[j + 1].in;
  std::vector<TapTable> tables;
  for (size_t j = 0; j < L; ++j) tables.push_back(MakeTapTable(axes[j], in_stride[j]));
  // Taps of the last axis: output range [lo, hi) whose tap k lands inside the input, at
  // input position ow * stride + shift (base dilation 1 only).
  struct LastTap {
    int64_t lo, hi, shift;
  };
  std::vector<LastTap> last_taps;
  for (int64_t k = 0; k < last.size; ++k) {
    const int64_t shift = k * last.window_dilation - last.pad_lo;
    const int64_t lo = std::max<int64_t>(0, CeilDiv(-shift, last.stride));
    const int64_t hi = std::min(last.out, FloorDiv(last.in - 1 - shift, last.stride) + 1);
    if (lo < hi) last_taps.push_back({lo, hi, shift});
  }
  int64_t n_lines = 1;
  for (size_t j = 0; j < L; ++j) n_lines *= axes[j].out;
  int64_t taps = 1;
  for (const WindowAxis& a : axes) taps *= a.size;
  // Split long lines when there are too few to keep the pool busy (fixed sizes: the split
  // does not depend on the thread count).
  const int64_t OW = last.out;
  int64_t chunk = OW;
  if (n_lines < 16) chunk = std::max<int64_t>(64, OW / 16);
  const int64_t n_chunks = (OW + chunk - 1) / chunk;
  const int64_t work_per_task = std::max<int64_t>(1, std::min(chunk, OW) * C * taps);

  ParallelFor(n_lines * n_chunks, std::max<int64_t>(1, kParallelGrain / work_per_task),
              [&](int64_t begin, int64_t end) {
    std::vector<W> acc(static_cast<size_t>(std::min(chunk, OW) * C));
    absl::InlinedVector<int64_t, 6> o(L), pick(L), stop(L);
    for (int64_t t = begin; t < end; ++t) {
      const int64_t line = t / n_chunks;
      const int64_t ow0 = (t % n_chunks) * chunk, ow1 = std::min(OW, ow0 + chunk);
      bool empty = false;
      for (size_t j = L, rem = static_cast<size_t>(line); j-- > 0;) {
        o[j] = static_cast<int64_t>(rem % static_cast<size_t>(axes[j].out));
        rem /= static_cast<size_t>(axes[j].out);
        pick[j] = tables[j].begin[static_cast<size_t>(o[j])];
        stop[j] = tables[j].begin[static_cast<size_t>(o[j]) + 1];
        empty = empty || pick[j] == stop[j];
      }
      W* A = acc.data();
      const int64_t len = (ow1 - ow0) * C;
      std::fill(A, A + len, start);
      while (!empty) {
        int64_t in_off = 0;
        for (size_t j = 0; j < L; ++j) in_off += tables[j].offsets[static_cast<size_t>(pick[j])];
        const T* src = x + in_off;
        if (last.base_dilation == 1) {
          for (const LastTap& tap : last_taps) {
            const int64_t lo = std::max(ow0, tap.lo), hi = std::min(ow1, tap.hi);
            if (lo >= hi) continue;
            W* a = A + (lo - ow0) * C;
            const T* p = src + (lo * last.stride + tap.shift) * C;
            if (C == 1) {
              FoldStrided<M>(a, p, hi - lo, last.stride);
            } else {
              const int64_t step = last.stride * C;
              for (int64_t i = 0; i < hi - lo; ++i) M::Accumulate(a + i * C, p + i * step, C);
            }
          }
        } else {
          for (int64_t k = 0; k < last.size; ++k) {
            for (int64_t ow = ow0; ow < ow1; ++ow) {
              const int64_t i = InputIndex(last, ow, k);
              if (i >= 0) M::Accumulate(A + (ow - ow0) * C, src + i * C, C);
            }
          }
        }
        // Next combination of outer taps.
        size_t j = L;
        while (j-- > 0) {
          if (++pick[j] < stop[j]) break;
          pick[j] = tables[j].begin[static_cast<size_t>(o[j])];
        }
        if (j == static_cast<size_t>(-1)) break;
      }
      T* dst = y + (line * OW + ow0) * C;
      for (int64_t i = 0; i < len; ++i) dst[i] = M::Store(A[i]);
    }
  });
}

// Booleans are 0/1 bytes: or and and are max and min of them.
ReduceKind BoolKind(WindowReducer op) {
  return op == WindowReducer::kSum || op == WindowReducer::kMax || op == WindowReducer::kOr ? ReduceKind::kMax
                                                                                            : ReduceKind::kMin;
}

ReduceKind KindOf(WindowReducer op) {
  switch (op) {
    case WindowReducer::kSum: return ReduceKind::kSum;
    case WindowReducer::kProd: return ReduceKind::kProd;
    case WindowReducer::kMax: return ReduceKind::kMax;
    case WindowReducer::kMin: return ReduceKind::kMin;
    case WindowReducer::kAnd: return ReduceKind::kAnd;
    case WindowReducer::kOr: return ReduceKind::kOr;
  }
  return ReduceKind::kSum;
}

// Element type T's kernel for K (signed integers share their unsigned kernels where the
// bits agree: reducer.h's SharedElement).
template <ReduceKind K, typename T>
void RunShared(const void* x, void* y, std::vector<WindowAxis> axes, const void* init) {
  using E = SharedElement<K, T>;
  WindowKernel<K, E>(static_cast<const E*>(x), static_cast<E*>(y), std::move(axes), static_cast<const E*>(init));
}

template <typename T>
void RunKind(ReduceKind kind, const void* x, void* y, std::vector<WindowAxis> axes, const void* init) {
  switch (kind) {
    case ReduceKind::kSum: return RunShared<ReduceKind::kSum, T>(x, y, std::move(axes), init);
    case ReduceKind::kProd: return RunShared<ReduceKind::kProd, T>(x, y, std::move(axes), init);
    case ReduceKind::kMax: return RunShared<ReduceKind::kMax, T>(x, y, std::move(axes), init);
    case ReduceKind::kMin: return RunShared<ReduceKind::kMin, T>(x, y, std::move(axes), init);
    case ReduceKind::kAnd:
    case ReduceKind::kOr:
      if constexpr (std::is_integral_v<T>) {
        if (kind == ReduceKind::kAnd) return RunShared<ReduceKind::kAnd, T>(x, y, std::move(axes), init);
        return RunShared<ReduceKind::kOr, T>(x, y, std::move(axes), init);
      }
      throw InternalError("reduce_window: and/or of a float dtype");
  }
}

}  // namespace

bool WindowReducerAccepts(WindowReducer op, DType dtype) {
  if (op == WindowReducer::kAnd || op == WindowReducer::kOr) return !IsFloating(dtype);
  return true;
}

void ReduceWindow(DType dtype, WindowReducer op, const void* x, absl::Span<const WindowAxis> axes,
                  const void* init, void* y) {
  std::vector<WindowAxis> a(axes.begin(), axes.end());
  if (dtype == DType::kBool) {
    // The identity of or (max) is false and of and (min) true: 0 and 1, uint8's lowest and
    // its max only for 0/1 bytes, so bool brings its own init.
    const uint8_t identity = BoolKind(op) == ReduceKind::kMax ? 0 : 1;
    const uint8_t* i = init != nullptr ? static_cast<const uint8_t*>(init) : &identity;
    RunKind<uint8_t>(BoolKind(op), x, y, std::move(a), i);
    return;
  }
  DispatchDType(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) {
      RunKind<T>(KindOf(op), x, y, std::move(a), init);
    }
  });
}

}  // namespace jx::lax::kernels

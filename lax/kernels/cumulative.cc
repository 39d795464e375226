// Cumulative reductions (see cumulative.h). With inner == 1 each line is a sequential scan
// (lines in parallel; a few very long lines scan in parallel fixed-size chunks); otherwise a
// vector of `inner` running accumulators walks the n rows, vectorized over inner (blocks of
// it in parallel). Work is split at fixed boundaries, so results never depend on the thread
// count.
#include "jx/lax/kernels/cumulative.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "jx/core/errors.h"
#include "jx/core/parallel.h"
#include "jx/lax/kernels/reducer.h"

namespace jx::lax::kernels {
namespace {

constexpr int64_t kBlockI = kColumnBlock;
// Fewer rows than this, each at least 2 * kScanChunk long, scan in parallel chunks (fixed
// sizes, so results do not depend on the thread count).
constexpr int64_t kFewRows = 64;
constexpr int64_t kScanChunk = 4 * kParallelGrain;

struct Layout {
  int64_t O = 1, N = 1, I = 1;
};

// Grain in rows (or row blocks) of `per_task` elements each.
int64_t TaskGrain(int64_t per_task) { return std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, per_task)); }

// The running value of a scan. f64 sums carry a Neumaier compensation term: a plain f64
// running sum over 10^5 elements drifts by ~1e-12 from the exact prefix sums (every other
// type already accumulates in a wider type or exactly). Compensating f32 sums too would make
// eager f32 cumsum exactly its lowering (an f64 compensated scan between converts), but
// costs 2.3x (1.4 vs 0.6 ms for 1024x1024 on 2 threads), so f32 sums stay a plain f64 fold.
template <ReduceKind K, typename T>
struct Running {
  using Red = Reducer<K, T>;
  using W = typename Red::Acc;
  static constexpr bool kCompensated = K == ReduceKind::kSum && std::is_same_v<T, double>;
  W s = Red::template Identity<W>(false);
  W c = W(0);  // compensation (kCompensated only)

  Running() = default;
  explicit Running(W start, W comp = W(0)) : s(start), c(comp) {}

  void Add(W x) {
    if constexpr (kCompensated) {
      // The exact rounding error of s + x by Knuth's TwoSum: the same value Neumaier's
      // ordered form (|s| >= |x| ? (s - t) + x : (x - t) + s) gives, without its
      // data-dependent branch.
      const W t = s + x;
      const W xp = t - s;
      const W err = (s - (t - xp)) + (x - xp);
      c += std::isfinite(t) ? err : W(0);
      s = t;
    } else {
      s = XlaReducer<K, T>::Combine(s, x);
    }
  }
  void Merge(const Running& other) {
    Add(other.s);
    if constexpr (kCompensated) Add(other.c);
  }
  W value() const {
    if constexpr (kCompensated) return std::isfinite(s) ? s + c : s;
    else return s;
  }
};

template <ReduceKind K, typename T>
void CumKernel(const T* x, T* y, Layout l, bool reverse, typename Reducer<K, T>::Acc start) {
  using Red = Reducer<K, T>;
  using M = XlaReducer<K, T>;
  using W = typename Red::Acc;
  using Run = Running<K, T>;
  const int64_t N = l.N, I = l.I;
  // Scans n elements of src (stride 1) from `run` into dst, in scan order.
  auto scan_row = [reverse](const T* src, T* dst, int64_t n, Run run) {
    for (int64_t j = 0; j < n; ++j) {
      const int64_t k = reverse ? n - 1 - j : j;
      run.Add(static_cast<W>(Red::Load(src[k])));
      dst[k] = Red::Store(run.value());
    }
  };
  if (I == 1 && l.O < kFewRows && N >= 2 * kScanChunk) {
    // Few long rows: a parallel two-pass scan over fixed-size chunks. Pass 1 reduces each
    // chunk (vectorized unless compensated); the chunk totals are scanned serially into
    // starting offsets; pass 2 scans every chunk from its offset.
    const int64_t n_chunks = (N + kScanChunk - 1) / kScanChunk;
    const int64_t tasks = l.O * n_chunks;
    std::vector<Run> part(static_cast<size_t>(tasks));
    ParallelFor(tasks, 1, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        const int64_t o = t / n_chunks, c0 = (t % n_chunks) * kScanChunk, len = std::min(kScanChunk, N - c0);
        const T* src = x + o * N + c0;
        Run& r = part[static_cast<size_t>(t)];
        if constexpr (Run::kCompensated || M::kXlaMinMax) {
          // Sequentially: compensated, or XLA's max/min (Eigen's may pick -0 over +0).
          for (int64_t j = 0; j < len; ++j) r.Add(static_cast<W>(Red::Load(src[j])));
        } else {
          r.s = Red::Row(src, len, false);
        }
      }
    });
    for (int64_t o = 0; o < l.O; ++o) {  // exclusive scan of the totals, in scan order
      Run run(start);
      for (int64_t j = 0; j < n_chunks; ++j) {
        Run& p = part[static_cast<size_t>(o * n_chunks + (reverse ? n_chunks - 1 - j : j))];
        const Run total = p;
        p = run;
        run.Merge(total);
      }
    }
    ParallelFor(tasks, 1, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        const int64_t o = t / n_chunks, c0 = (t % n_chunks) * kScanChunk;
        scan_row(x + o * N + c0, y + o * N + c0, std::min(kScanChunk, N - c0), part[static_cast<size_t>(t)]);
      }
    });
    return;
  }
  if (I == 1) {
    // Contiguous lines: a line's running value is one dependency chain (an add's latency per
    // element), so kLines lines advance in lockstep, their chains interleaved. Each line
    // still folds in its own order; groups are fixed, whatever the thread count.
    constexpr int64_t kLines = 4;
    const int64_t groups = (l.O + kLines - 1) / kLines;
    ParallelFor(groups, TaskGrain(N * kLines), [&](int64_t begin, int64_t end) {
      for (int64_t g = begin; g < end; ++g) {
        const int64_t o0 = g * kLines;
        if (l.O - o0 < kLines) {
          for (int64_t o = o0; o < l.O; ++o) scan_row(x + o * N, y + o * N, N, Run(start));
          continue;
        }
        Run run[kLines];
        for (Run& r : run) r = Run(start);
        const T* src = x + o0 * N;
        T* dst = y + o0 * N;
        for (int64_t j = 0; j < N; ++j) {
          const int64_t k = reverse ? N - 1 - j : j;
          // Loads, steps and stores in separate loops over the lines, so the steps of the
          // kLines independent chains can share vector instructions.
          W in[kLines], out[kLines];
          for (int64_t q = 0; q < kLines; ++q) in[q] = static_cast<W>(Red::Load(src[q * N + k]));
          for (int64_t q = 0; q < kLines; ++q) {
            run[q].Add(in[q]);
            out[q] = run[q].value();
          }
          for (int64_t q = 0; q < kLines; ++q) dst[q * N + k] = Red::Store(out[q]);
        }
      }
    });
    return;
  }
  const int64_t n_iblocks = (I + kBlockI - 1) / kBlockI;
  ParallelFor(l.O * n_iblocks, TaskGrain(N * std::min(I, kBlockI)), [&](int64_t begin, int64_t end) {
    alignas(64) W acc[kBlockI];
    alignas(64) W comp[Run::kCompensated ? kBlockI : 1];
    alignas(64) float buf[kIsHalf<T> ? kBlockI : 1];
    for (int64_t t = begin; t < end; ++t) {
      const int64_t o = t / n_iblocks, i0 = (t % n_iblocks) * kBlockI, len = std::min(kBlockI, I - i0);
      std::fill(acc, acc + len, start);
      if constexpr (Run::kCompensated) std::fill(comp, comp + len, W(0));
      for (int64_t j = 0; j < N; ++j) {
        const int64_t r = reverse ? N - 1 - j : j;
        const T* src = x + (o * N + r) * I + i0;
        T* dst = y + (o * N + r) * I + i0;
        if constexpr (kIsHalf<T>) {
          ToFloat(src, buf, len);
          for (int64_t i = 0; i < len; ++i) {
            acc[i] = M::Combine(acc[i], static_cast<W>(buf[i]));
            buf[i] = static_cast<float>(acc[i]);
          }
          FromFloat(buf, dst, len);
        } else if constexpr (Run::kCompensated) {
          for (int64_t i = 0; i < len; ++i) {
            Run run(acc[i], comp[i]);
            run.Add(src[i]);
            acc[i] = run.s;
            comp[i] = run.c;
            dst[i] = run.value();
          }
        } else {
          for (int64_t i = 0; i < len; ++i) {
            acc[i] = M::Combine(acc[i], static_cast<W>(Red::Load(src[i])));
            dst[i] = Red::Store(acc[i]);
          }
        }
      }
    }
  });
}

// ---------------------------------------------------------------------------------------
// cumlogsumexp. C is the compute type: f32 for 16-bit floats, f64 otherwise.

template <typename T>
using LseType = std::conditional_t<kIsHalf<T>, float, double>;

// One row, in blocks: a sequential running max M, then vectorized exps of the rescaling
// factors, a sequential rescaled sum S_i = S_{i-1} * exp(M_{i-1} - M_i) + exp(x_i - M_i),
// and out = M + log(S). S >= 1 after the first element, so log never sees 0.
template <typename T>
void LseRow(const T* x, T* y, int64_t n, int64_t stride, bool reverse, LseType<T> start) {
  using C = LseType<T>;
  constexpr int64_t kB = kReduceBlock;
  alignas(64) C xv[kB], m[kB], mprev[kB], s[kB];
  C carry = start;
  for (int64_t b = 0; b < n; b += kB) {
    const int64_t len = std::min(kB, n - b);
    for (int64_t i = 0; i < len; ++i) {
      const int64_t k = reverse ? n - 1 - (b + i) : b + i;
      xv[i] = static_cast<C>(static_cast<ComputeType<T>>(x[k * stride]));
    }
    C run = carry;
    for (int64_t i = 0; i < len; ++i) {
      mprev[i] = run;
      run = (xv[i] > run || xv[i] != xv[i] || run != run) ? (run != run ? run : xv[i]) : run;
      m[i] = run;
    }
    // Equal operands (including equal infinities) give a difference of 0, not NaN. Plain
    // loops for the selects (auto-vectorized), Eigen for the exps (packet math).
    for (int64_t i = 0; i < len; ++i) {
      mprev[i] = mprev[i] == m[i] ? C(0) : mprev[i] - m[i];
      xv[i] = xv[i] == m[i] ? C(0) : xv[i] - m[i];
    }
    using Map = ArrayMap<C>;
    Map X(xv, len), M(m, len), P(mprev, len), S(s, len);
    P = P.exp();  // rescaling factors a_i
    X = X.exp();  // new terms b_i
    C acc = 1;
    for (int64_t i = 0; i < len; ++i) {
      acc = acc * mprev[i] + xv[i];
      s[i] = acc;
    }
    S = M + S.log();
    for (int64_t i = 0; i < len; ++i) {
      const int64_t k = reverse ? n - 1 - (b + i) : b + i;
      y[k * stride] = static_cast<T>(static_cast<ComputeType<T>>(s[i]));
    }
    carry = s[len - 1];
  }
}

template <typename T>
void LseKernel(const T* x, T* y, Layout l, bool reverse, LseType<T> start) {
  using C = LseType<T>;
  const int64_t N = l.N, I = l.I;
  if (I == 1) {
    ParallelFor(l.O, TaskGrain(N * 8), [&](int64_t begin, int64_t end) {
      for (int64_t o = begin; o < end; ++o) LseRow(x + o * N, y + o * N, N, 1, reverse, start);
    });
    return;
  }
  const int64_t n_iblocks = (I + kBlockI - 1) / kBlockI;
  ParallelFor(l.O * n_iblocks, TaskGrain(N * std::min(I, kBlockI) * 8), [&](int64_t begin, int64_t end) {
    alignas(64) C acc[kBlockI], xv[kBlockI], mx[kBlockI];
    for (int64_t t = begin; t < end; ++t) {
      const int64_t o = t / n_iblocks, i0 = (t % n_iblocks) * kBlockI, len = std::min(kBlockI, I - i0);
      using Map = ArrayMap<C>;
      Map A(acc, len), X(xv, len), MX(mx, len);
      A.setConstant(start);
      for (int64_t j = 0; j < N; ++j) {
        const int64_t r = reverse ? N - 1 - j : j;
        const T* src = x + (o * N + r) * I + i0;
        T* dst = y + (o * N + r) * I + i0;
        for (int64_t i = 0; i < len; ++i) xv[i] = static_cast<C>(static_cast<ComputeType<T>>(src[i]));
        // logaddexp(a, x) = max + log(1 + exp(-|a - x|)); equal operands (infinities) add log 2.
        for (int64_t i = 0; i < len; ++i) {
          const C a = acc[i], v = xv[i];
          mx[i] = (a > v || a != a) ? a : v;
          xv[i] = a == v ? C(0) : -std::abs(a - v);
        }
        A = MX + (X.exp() + C(1)).log();
        for (int64_t i = 0; i < len; ++i) dst[i] = static_cast<T>(static_cast<ComputeType<T>>(acc[i]));
      }
    }
  });
}

// Element type T's scan for K (signed integers share their unsigned scans where the bits
// agree: reducer.h's SharedElement).
template <ReduceKind K, typename T>
void RunCum(const void* x, void* y, Layout l, bool reverse, const void* init) {
  using E = SharedElement<K, T>;
  using Red = Reducer<K, E>;
  using W = typename Red::Acc;
  const W start = init != nullptr ? static_cast<W>(Red::Load(*static_cast<const E*>(init)))
                                  : Red::template Identity<W>(false);
  CumKernel<K, E>(static_cast<const E*>(x), static_cast<E*>(y), l, reverse, start);
}

}  // namespace

bool CumulativeAccepts(CumulativeOp op, DType dtype) {
  if (dtype == DType::kBool) return false;
  return op != CumulativeOp::kLogSumExp || IsFloating(dtype);
}

void Cumulative(DType dtype, CumulativeOp op, const void* x, void* y, int64_t outer, int64_t n, int64_t inner,
                bool reverse, const void* init) {
  if (outer * n * inner == 0) return;
  if (!CumulativeAccepts(op, dtype)) throw InternalError("cumulative op not defined on this dtype");
  const Layout l{outer, n, inner};
  DispatchDType(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) {
      switch (op) {
        case CumulativeOp::kSum: return RunCum<ReduceKind::kSum, T>(x, y, l, reverse, init);
        case CumulativeOp::kProd: return RunCum<ReduceKind::kProd, T>(x, y, l, reverse, init);
        case CumulativeOp::kMax: return RunCum<ReduceKind::kMax, T>(x, y, l, reverse, init);
        case CumulativeOp::kMin: return RunCum<ReduceKind::kMin, T>(x, y, l, reverse, init);
        case CumulativeOp::kLogSumExp:
          if constexpr (kIsFloat<T>) {
            using C = LseType<T>;
            const C start = init != nullptr
                                ? static_cast<C>(static_cast<ComputeType<T>>(*static_cast<const T*>(init)))
                                : -std::numeric_limits<C>::infinity();
            return LseKernel<T>(static_cast<const T*>(x), static_cast<T*>(y), l, reverse, start);
          }
          return;
      }
    }
  });
}

}  // namespace jx::lax::kernels

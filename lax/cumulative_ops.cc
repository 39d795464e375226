// Cumulative reductions along one axis: cumsum, cumprod, cummax, cummin, cumlogsumexp.
//
// The operand is viewed as [O, N, I] around the axis. With I == 1 each row is a sequential
// scan (rows in parallel); otherwise a vector of I running accumulators walks the N rows,
// vectorized over I (blocks of I in parallel). Running values are carried in the reduction
// family's accumulator type (f64 for float sums and products, f32 for max/min of 16-bit
// floats; integers wrap). cumlogsumexp keeps a running maximum so it never overflows.
#include "jx/lax/cumulative_ops.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "jx/lax/binary_ops.h"
#include "jx/lax/convert_ops.h"
#include "jx/lax/kernels/dispatch.h"
#include "jx/lax/kernels/reducer.h"
#include "jx/lax/op_util.h"
#include "jx/lax/primitives.h"
#include "jx/lax/rule_util.h"
#include "jx/lax/shape_ops.h"
#include "jx/lax/slicing_ops.h"
#include "jx/lax/unary_ops.h"

namespace jx::lax {

using internal::BindOp1;

namespace {
Array Cumulative(Primitive p, const Array& x, int64_t axis, bool reverse) {
  const int64_t rank = x.ndim();
  if (axis < 0 && axis >= -rank) axis += rank;
  return BindOp1(p, {x}, ParamMap{{"axis", axis}, {"reverse", reverse}});
}
}  // namespace

Array cumsum(const Array& x, int64_t axis, bool reverse) { return Cumulative(kCumsum, x, axis, reverse); }
Array cumprod(const Array& x, int64_t axis, bool reverse) { return Cumulative(kCumprod, x, axis, reverse); }
Array cummax(const Array& x, int64_t axis, bool reverse) { return Cumulative(kCummax, x, axis, reverse); }
Array cummin(const Array& x, int64_t axis, bool reverse) { return Cumulative(kCummin, x, axis, reverse); }
Array cumlogsumexp(const Array& x, int64_t axis, bool reverse) {
  return Cumulative(kCumlogsumexp, x, axis, reverse);
}

namespace internal {
namespace {

using kernels::ReduceKind;
using kernels::Reducer;

constexpr int64_t kBlockI = kernels::kColumnBlock;
// Fewer rows than this, each at least 2 * kScanChunk long, scan in parallel chunks (fixed
// sizes, so results do not depend on the thread count).
constexpr int64_t kFewRows = 64;
constexpr int64_t kScanChunk = 4 * kernels::kParallelGrain;

struct Layout {
  int64_t O = 1, N = 1, I = 1;
};
Layout MakeLayout(const Shape& shape, int64_t axis) {
  Layout l;
  l.N = shape[static_cast<size_t>(axis)];
  for (int64_t i = 0; i < axis; ++i) l.O *= shape[static_cast<size_t>(i)];
  for (size_t i = static_cast<size_t>(axis) + 1; i < shape.size(); ++i) l.I *= shape[i];
  return l;
}

// Grain in rows (or row blocks) of `per_task` elements each.
int64_t TaskGrain(int64_t per_task) { return std::max<int64_t>(1, kernels::kParallelGrain / std::max<int64_t>(1, per_task)); }

// The running value of a scan. f64 sums carry a Neumaier compensation term: a plain f64
// running sum over 10^5 elements drifts by ~1e-12 from the exact prefix sums (every other
// type already accumulates in a wider type or exactly).
template <ReduceKind K, typename T>
struct Running {
  using Red = Reducer<K, T>;
  using W = typename Red::Acc;
  static constexpr bool kCompensated = K == ReduceKind::kSum && std::is_same_v<T, double>;
  W s = Red::template Identity<W>(false);
  W c = W(0);  // compensation (kCompensated only)

  void Add(W x) {
    if constexpr (kCompensated) {
      const W t = s + x;
      if (std::isfinite(t)) c += std::fabs(s) >= std::fabs(x) ? (s - t) + x : (x - t) + s;
      s = t;
    } else {
      s = Red::Combine(s, x);
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
void CumKernel(const T* x, T* y, Layout l, bool reverse) {
  using Red = Reducer<K, T>;
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
        if constexpr (Run::kCompensated) {
          for (int64_t j = 0; j < len; ++j) r.Add(src[j]);
        } else {
          r.s = Red::Row(src, len, false);
        }
      }
    });
    for (int64_t o = 0; o < l.O; ++o) {  // exclusive scan of the totals, in scan order
      Run run;
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
    ParallelFor(l.O, TaskGrain(N), [&](int64_t begin, int64_t end) {
      for (int64_t o = begin; o < end; ++o) scan_row(x + o * N, y + o * N, N, Run());
    });
    return;
  }
  const int64_t n_iblocks = (I + kBlockI - 1) / kBlockI;
  ParallelFor(l.O * n_iblocks, TaskGrain(N * std::min(I, kBlockI)), [&](int64_t begin, int64_t end) {
    alignas(64) W acc[kBlockI];
    alignas(64) W comp[Run::kCompensated ? kBlockI : 1];
    alignas(64) float buf[kernels::kIsHalf<T> ? kBlockI : 1];
    for (int64_t t = begin; t < end; ++t) {
      const int64_t o = t / n_iblocks, i0 = (t % n_iblocks) * kBlockI, len = std::min(kBlockI, I - i0);
      std::fill(acc, acc + len, Red::template Identity<W>(false));
      if constexpr (Run::kCompensated) std::fill(comp, comp + len, W(0));
      for (int64_t j = 0; j < N; ++j) {
        const int64_t r = reverse ? N - 1 - j : j;
        const T* src = x + (o * N + r) * I + i0;
        T* dst = y + (o * N + r) * I + i0;
        if constexpr (kernels::kIsHalf<T>) {
          kernels::ToFloat(src, buf, len);
          for (int64_t i = 0; i < len; ++i) {
            acc[i] = Red::Combine(acc[i], static_cast<W>(buf[i]));
            buf[i] = static_cast<float>(acc[i]);
          }
          kernels::FromFloat(buf, dst, len);
        } else if constexpr (Run::kCompensated) {
          for (int64_t i = 0; i < len; ++i) {
            Run run{acc[i], comp[i]};
            run.Add(src[i]);
            acc[i] = run.s;
            comp[i] = run.c;
            dst[i] = run.value();
          }
        } else {
          for (int64_t i = 0; i < len; ++i) {
            acc[i] = Red::Combine(acc[i], static_cast<W>(Red::Load(src[i])));
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
using LseType = std::conditional_t<kernels::kIsHalf<T>, float, double>;

// One row, in blocks: a sequential running max M, then vectorized exps of the rescaling
// factors, a sequential rescaled sum S_i = S_{i-1} * exp(M_{i-1} - M_i) + exp(x_i - M_i),
// and out = M + log(S). S >= 1 after the first element, so log never sees 0.
template <typename T>
void LseRow(const T* x, T* y, int64_t n, int64_t stride, bool reverse) {
  using C = LseType<T>;
  constexpr int64_t kB = kernels::kReduceBlock;
  alignas(64) C xv[kB], m[kB], mprev[kB], s[kB];
  C carry = -std::numeric_limits<C>::infinity();
  for (int64_t b = 0; b < n; b += kB) {
    const int64_t len = std::min(kB, n - b);
    for (int64_t i = 0; i < len; ++i) {
      const int64_t k = reverse ? n - 1 - (b + i) : b + i;
      xv[i] = static_cast<C>(static_cast<kernels::ComputeType<T>>(x[k * stride]));
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
    using Map = kernels::ArrayMap<C>;
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
      y[k * stride] = static_cast<T>(static_cast<kernels::ComputeType<T>>(s[i]));
    }
    carry = s[len - 1];
  }
}

template <typename T>
void LseKernel(const T* x, T* y, Layout l, bool reverse) {
  using C = LseType<T>;
  const int64_t N = l.N, I = l.I;
  if (I == 1) {
    ParallelFor(l.O, TaskGrain(N * 8), [&](int64_t begin, int64_t end) {
      for (int64_t o = begin; o < end; ++o) LseRow(x + o * N, y + o * N, N, 1, reverse);
    });
    return;
  }
  const int64_t n_iblocks = (I + kBlockI - 1) / kBlockI;
  ParallelFor(l.O * n_iblocks, TaskGrain(N * std::min(I, kBlockI) * 8), [&](int64_t begin, int64_t end) {
    alignas(64) C acc[kBlockI], xv[kBlockI], mx[kBlockI];
    for (int64_t t = begin; t < end; ++t) {
      const int64_t o = t / n_iblocks, i0 = (t % n_iblocks) * kBlockI, len = std::min(kBlockI, I - i0);
      using Map = kernels::ArrayMap<C>;
      Map A(acc, len), X(xv, len), MX(mx, len);
      A.setConstant(-std::numeric_limits<C>::infinity());
      for (int64_t j = 0; j < N; ++j) {
        const int64_t r = reverse ? N - 1 - j : j;
        const T* src = x + (o * N + r) * I + i0;
        T* dst = y + (o * N + r) * I + i0;
        for (int64_t i = 0; i < len; ++i) xv[i] = static_cast<C>(static_cast<kernels::ComputeType<T>>(src[i]));
        // logaddexp(a, x) = max + log(1 + exp(-|a - x|)); equal operands (infinities) add log 2.
        for (int64_t i = 0; i < len; ++i) {
          const C a = acc[i], v = xv[i];
          mx[i] = (a > v || a != a) ? a : v;
          xv[i] = a == v ? C(0) : -std::abs(a - v);
        }
        A = MX + (X.exp() + C(1)).log();
        for (int64_t i = 0; i < len; ++i) dst[i] = static_cast<T>(static_cast<kernels::ComputeType<T>>(acc[i]));
      }
    }
  });
}

// ---------------------------------------------------------------------------------------
// Registration.

template <typename Kernel>
void DefineCumulative(Registry& r, Primitive p, DTypeClass accepted, Kernel kernel) {
  PrimitiveRules& rules = r.Define(p);
  rules.abstract_eval = [p, accepted](InAvals in, const ParamMap& params) -> Avals {
    CheckArity(p.name(), in, 1);
    const ShapedArray& x = *in[0];
    if (!InClass(x.dtype, accepted)) {
      ThrowOpError<TypeError>(p.name(), "does not accept dtype ", dtype_name(x.dtype), " (operand ", x.str(),
                              "); expected a ", ClassName(accepted), " dtype");
    }
    const int64_t axis = params.GetInt("axis");
    params.GetBool("reverse");
    if (axis < 0 || axis >= x.ndim()) {
      ThrowOpError<ShapeError>(p.name(), "axis ", axis, " is out of bounds for operand ", x.str(), " of rank ",
                               x.ndim());
    }
    return {x};
  };
  rules.impl = [kernel](absl::Span<const Array> in, const ParamMap& params,
                        absl::Span<const ShapedArray> out_avals) -> Arrays {
    Array out = Array::Empty(out_avals[0]);
    if (out.size() == 0) return {out};
    const Layout l = MakeLayout(in[0].shape(), params.GetInt("axis"));
    const bool reverse = params.GetBool("reverse");
    kernels::DispatchDType(in[0].dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (!std::is_same_v<T, bool>) kernel(kernels::Data<T>(in[0]), kernels::MutableData<T>(out), l, reverse);
    });
    return {out};
  };
}

template <ReduceKind K>
struct CumFn {
  template <typename T>
  void operator()(const T* x, T* y, Layout l, bool reverse) const { CumKernel<K, T>(x, y, l, reverse); }
};
struct LseFn {
  template <typename T>
  void operator()(const T* x, T* y, Layout l, bool reverse) const {
    if constexpr (kernels::kIsFloat<T>) LseKernel<T>(x, y, l, reverse);
  }
};

// ---------------------------------------------------------------------------------------
// Transformation rules (jvp, transpose, batching), written with lax ops.

// x[begin:end] along axis.
Array SliceAxis(const Array& x, int64_t axis, int64_t begin, int64_t end) {
  std::vector<int64_t> start(static_cast<size_t>(x.ndim()), 0), limit;
  for (int64_t d : x.shape()) limit.push_back(d);
  start[static_cast<size_t>(axis)] = begin;
  limit[static_cast<size_t>(axis)] = end;
  return slice(x, start, limit);
}

// A value of a scan and its tangent.
struct Dual {
  Array value, tangent;
};
// Combines a (earlier in scan order) with b: the combined value and its tangent, linear in
// the tangents.
using Combine = Dual (*)(const Dual& a, const Dual& b);

// The tangent of an inclusive scan along axis, by Hillis-Steele doubling (JAX takes the jvp
// of an associative_scan; this is the same idea with log2(n) levels of slices): level s
// combines every element with the one s places earlier in scan order, and the first s pass
// through. Slices, concatenates and the combine's tangent all transpose, and the combine
// never divides, so products stay exact at zeros (unlike cumsum(t / x) * cumprod(x)).
Array ScanTangent(const Array& x, const Array& t, int64_t axis, bool reverse, Combine combine) {
  const int64_t n = x.shape()[static_cast<size_t>(axis)];
  Dual y{x, t};
  auto part = [axis](const Dual& v, int64_t begin, int64_t end) {
    return Dual{SliceAxis(v.value, axis, begin, end), SliceAxis(v.tangent, axis, begin, end)};
  };
  auto join = [axis](const Dual& first, const Dual& second) {
    return Dual{concatenate({first.value, second.value}, axis), concatenate({first.tangent, second.tangent}, axis)};
  };
  for (int64_t s = 1; s < n; s *= 2) {
    if (reverse) {  // element i combines with i + s; the last s pass through
      y = join(combine(part(y, s, n), part(y, 0, n - s)), part(y, n - s, n));
    } else {  // element i combines with i - s; the first s pass through
      y = join(part(y, 0, s), combine(part(y, 0, n - s), part(y, s, n)));
    }
  }
  return y.tangent;
}

Array ScalarLike(double v, const Array& x) { return Array::Scalar(v, x.dtype()); }

Dual CombineProd(const Dual& a, const Dual& b) {
  return {mul(a.value, b.value), add(mul(a.tangent, b.value), mul(a.value, b.tangent))};
}

// max/min's tangent weights as in JAX's jvp of lax.max: the chosen side gets 1, both get
// 0.5 on ties.
std::pair<Array, Array> ChooserWeights(const Array& a, const Array& b, const Array& chosen, DType dtype) {
  const Array ea = convert_element_type(eq(a, chosen), dtype);
  const Array eb = convert_element_type(eq(b, chosen), dtype);
  const Array half = ScalarLike(0.5, ea), one = ScalarLike(1, ea);
  return {mul(ea, sub(one, mul(half, eb))), mul(eb, sub(one, mul(half, ea)))};
}
Dual CombineChooser(const Dual& a, const Dual& b, const Array& chosen) {
  const auto [wa, wb] = ChooserWeights(a.value, b.value, chosen, a.tangent.dtype());
  return {chosen, add(mul(a.tangent, wa), mul(b.tangent, wb))};
}
Dual CombineMax(const Dual& a, const Dual& b) { return CombineChooser(a, b, max(a.value, b.value)); }
Dual CombineMin(const Dual& a, const Dual& b) { return CombineChooser(a, b, min(a.value, b.value)); }

// logaddexp(a, b) = max + log1p(exp(-|a - b|)); each side's weight is exp(side - result).
// Where the result is infinite (both sides -inf, or a side +inf) that weight is 0/0, so the
// sides are weighted like max's (the larger one, half each on ties). Every weight is
// computed from finite values, so the tangent's transpose never multiplies by NaN.
Dual CombineLogAddExp(const Dual& a, const Dual& b) {
  const Array m = max(a.value, b.value), delta = sub(a.value, b.value);
  const Array zero = broadcast_in_dim(ScalarLike(0, m), m.shape(), {});
  const Array defined_delta = select_n(ne(delta, delta), {delta, zero});  // inf - inf: NaN
  const Array r = add(m, log1p(exp(neg(abs(defined_delta)))));
  const Array finite_r = is_finite(r);
  auto safe = [&](const Array& v) { return select_n(finite_r, {zero, v}); };
  const auto [ca, cb] = ChooserWeights(a.value, b.value, m, a.tangent.dtype());
  const Array wa = select_n(finite_r, {ca, exp(sub(safe(a.value), safe(r)))});
  const Array wb = select_n(finite_r, {cb, exp(sub(safe(b.value), safe(r)))});
  return {r, add(mul(a.tangent, wa), mul(b.tangent, wb))};
}

// The jvp of a cumulative op: the primal by binding p, the tangent by `tangent` (an undefined
// tangent, as integer operands have, stays a symbolic zero).
using CumTangentFn = std::function<Array(const Array& x, const Array& t, const ParamMap& params)>;
JvpRule CumulativeJvp(Primitive p, CumTangentFn tangent) {
  return [p, tangent](absl::Span<const Array> primals, absl::Span<const Array> tangents, const ParamMap& params) {
    Array out = Bind1(p, primals, params);
    Array t;
    if (tangents[0].defined()) t = tangent(primals[0], tangents[0], params);
    return JvpResult{{std::move(out)}, {std::move(t)}};
  };
}

CumTangentFn ScanTangentFn(Combine combine) {
  return [combine](const Array& x, const Array& t, const ParamMap& params) {
    return ScanTangent(x, t, params.GetInt("axis"), params.GetBool("reverse"), combine);
  };
}

// Every cumulative op batches by moving the batch dim to the front and shifting its axis.
BatchRule BatchCumulative(Primitive p) {
  return [p](absl::Span<const Array> args, absl::Span<const int64_t> dims, int64_t n, const ParamMap& params) {
    ParamMap shifted = params;
    shifted.Set("axis", params.GetInt("axis") + 1);
    return BatchResult{{Bind1(p, {MoveBatchToFront(args[0], dims[0], n)}, shifted)}, {0}};
  };
}

void DefineCumulativeRules(Registry& r) {
  PrimitiveRules& sum = r.Define(kCumsum);
  sum.jvp = CumulativeJvp(kCumsum, [](const Array&, const Array& t, const ParamMap& params) {
    return Bind1(kCumsum, {t}, params);
  });
  // Linear: each input feeds every later output, so the transpose is the scan run backwards.
  sum.transpose = [](absl::Span<const Array> cts, absl::Span<const TransposeArg>, const ParamMap& params) {
    if (!cts[0].defined()) return Arrays{Array{}};
    ParamMap flipped = params;
    flipped.Set("reverse", !params.GetBool("reverse"));
    return Arrays{Bind1(kCumsum, {cts[0]}, flipped)};
  };
  r.Define(kCumprod).jvp = CumulativeJvp(kCumprod, ScanTangentFn(CombineProd));
  r.Define(kCummax).jvp = CumulativeJvp(kCummax, ScanTangentFn(CombineMax));
  r.Define(kCummin).jvp = CumulativeJvp(kCummin, ScanTangentFn(CombineMin));
  r.Define(kCumlogsumexp).jvp = CumulativeJvp(kCumlogsumexp, ScanTangentFn(CombineLogAddExp));
  for (Primitive p : {kCumsum, kCumprod, kCummax, kCummin, kCumlogsumexp}) {
    PrimitiveRules& rules = r.Define(p);
    rules.batch = BatchCumulative(p);
    if (p != kCumsum) rules.unsupported["transpose"] = "not linear: reverse mode transposes the linear ops of its jvp";
  }
}

}  // namespace

void RegisterCumulativeOps(Registry& r) {
  DefineCumulative(r, kCumsum, DTypeClass::kNumeric, CumFn<ReduceKind::kSum>{});
  DefineCumulative(r, kCumprod, DTypeClass::kNumeric, CumFn<ReduceKind::kProd>{});
  DefineCumulative(r, kCummax, DTypeClass::kNumeric, CumFn<ReduceKind::kMax>{});
  DefineCumulative(r, kCummin, DTypeClass::kNumeric, CumFn<ReduceKind::kMin>{});
  DefineCumulative(r, kCumlogsumexp, DTypeClass::kFloating, LseFn{});
  DefineCumulativeRules(r);
}

}  // namespace internal
}  // namespace jx::lax

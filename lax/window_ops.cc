// Windowed reductions: reduce_window_sum and reduce_window_max, with XLA's semantics.
//
// Padding positions hold the monoid's identity (0, or -inf / the lowest integer); base
// dilation inserts holes between input elements that no window counts; window dilation
// spreads the window's taps apart.
//
// Kernel: trailing axes the window leaves alone (size 1, stride 1, no padding or dilation,
// e.g. channels in NHWC) merge into one contiguous run of C elements. The last windowed axis
// is processed a whole output line at a time: for every valid tap of the other windowed axes
// and every tap of the last one, a contiguous (C > 1) or strided (C == 1, e.g. NCHW) loop
// folds an input line into a line of accumulators. Tap ranges are computed per line, so the
// inner loops hold no bounds checks and no per-element calls. Lines run in parallel.
#include "jx/lax/window_ops.h"

#include <algorithm>
#include <array>
#include <limits>
#include <cstring>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_join.h"
#include "jx/lax/binary_ops.h"
#include "jx/lax/convert_ops.h"
#include "jx/lax/kernels/dispatch.h"
#include "jx/lax/kernels/reducer.h"
#include "jx/lax/op_util.h"
#include "jx/lax/primitives.h"
#include "jx/lax/rule_util.h"
#include "jx/lax/slicing_ops.h"

namespace jx::lax {

using internal::BindOp1;

namespace {

Array ReduceWindowOp(Primitive p, const Array& x, const std::vector<int64_t>& window_dimensions,
                     const std::vector<int64_t>& window_strides, const WindowPadding& padding,
                     const std::vector<int64_t>& base_dilation, const std::vector<int64_t>& window_dilation) {
  // Omitted dilations default to 1 on every axis.
  const std::vector<int64_t> ones(window_dimensions.size(), 1);
  ParamList pads;
  for (const auto& [lo, hi] : padding) pads.push_back(Param(std::vector<int64_t>{lo, hi}));
  return BindOp1(p, {x},
                 ParamMap{{"window_dimensions", window_dimensions},
                          {"window_strides", window_strides},
                          {"padding", std::move(pads)},
                          {"base_dilation", base_dilation.empty() ? ones : base_dilation},
                          {"window_dilation", window_dilation.empty() ? ones : window_dilation}});
}

}  // namespace

Array reduce_window_sum(const Array& x, const std::vector<int64_t>& window_dimensions,
                        const std::vector<int64_t>& window_strides, const WindowPadding& padding,
                        const std::vector<int64_t>& base_dilation, const std::vector<int64_t>& window_dilation) {
  return ReduceWindowOp(kReduceWindowSum, x, window_dimensions, window_strides, padding, base_dilation,
                        window_dilation);
}

Array reduce_window_max(const Array& x, const std::vector<int64_t>& window_dimensions,
                        const std::vector<int64_t>& window_strides, const WindowPadding& padding,
                        const std::vector<int64_t>& base_dilation, const std::vector<int64_t>& window_dilation) {
  return ReduceWindowOp(kReduceWindowMax, x, window_dimensions, window_strides, padding, base_dilation,
                        window_dilation);
}

Array reduce_window(const Array& x, WindowReduction computation, const std::vector<int64_t>& window_dimensions,
                    const std::vector<int64_t>& window_strides, const WindowPadding& padding,
                    const std::vector<int64_t>& base_dilation, const std::vector<int64_t>& window_dilation) {
  switch (computation) {
    case WindowReduction::kSum:
      return reduce_window_sum(x, window_dimensions, window_strides, padding, base_dilation, window_dilation);
    case WindowReduction::kMax:
      return reduce_window_max(x, window_dimensions, window_strides, padding, base_dilation, window_dilation);
  }
  throw ValueError("[reduce_window] unknown WindowReduction");
}

namespace internal {
namespace {

using kernels::ReduceKind;
using kernels::Reducer;

std::string Tuple(const std::vector<int64_t>& v) {
  if (v.size() == 1) return StrCat("(", v[0], ",)");
  return StrCat("(", absl::StrJoin(v, ", "), ")");
}

// The window configuration of one axis.
struct AxisWindow {
  int64_t in = 0, out = 0;       // input and output sizes
  int64_t window = 1, stride = 1, lo = 0, hi = 0, base_dilation = 1, window_dilation = 1;
  int64_t dilated() const { return in == 0 ? 0 : (in - 1) * base_dilation + 1; }
  // Input index of tap k for output index o, or -1 for padding or a base-dilation hole.
  int64_t InputIndex(int64_t o, int64_t k) const {
    const int64_t pos = o * stride + k * window_dilation - lo;
    if (pos < 0 || pos >= dilated() || pos % base_dilation != 0) return -1;
    return pos / base_dilation;
  }
  bool trivial() const { return window == 1 && stride == 1 && lo == 0 && hi == 0 && base_dilation == 1; }
};

// Validates the params against operand x and returns the per-axis configuration.
std::vector<AxisWindow> ParseWindow(std::string_view op, const ShapedArray& x, const ParamMap& params) {
  const int64_t rank = x.ndim();
  const std::vector<int64_t>& dims = params.GetInts("window_dimensions");
  const std::vector<int64_t>& strides = params.GetInts("window_strides");
  const std::vector<int64_t>& base = params.GetInts("base_dilation");
  const std::vector<int64_t>& wdil = params.GetInts("window_dilation");
  const ParamList& padding = params.GetList("padding");
  auto check_len = [&](std::string_view name, size_t n, const std::string& value) {
    if (static_cast<int64_t>(n) != rank) {
      ThrowOpError<ShapeError>(op, name, "=", value, " has ", n, " entries but operand ", x.str(), " has rank ",
                               rank);
    }
  };
  check_len("window_dimensions", dims.size(), Tuple(dims));
  check_len("window_strides", strides.size(), Tuple(strides));
  check_len("base_dilation", base.size(), Tuple(base));
  check_len("window_dilation", wdil.size(), Tuple(wdil));
  check_len("padding", padding.size(), Param(padding).ToString());
  auto check_positive = [&](std::string_view name, const std::vector<int64_t>& v) {
    for (int64_t e : v) {
      if (e < 1) {
        ThrowOpError<ValueError>(op, name, " must be positive, got ", name, "=", Tuple(v), " for operand ", x.str());
      }
    }
  };
  check_positive("window_dimensions", dims);
  check_positive("window_strides", strides);
  check_positive("base_dilation", base);
  check_positive("window_dilation", wdil);
  std::vector<AxisWindow> axes(static_cast<size_t>(rank));
  for (size_t i = 0; i < axes.size(); ++i) {
    const auto* pair = std::get_if<std::vector<int64_t>>(&padding[i].value);
    if (pair == nullptr || pair->size() != 2) {
      ThrowOpError<ValueError>(op, "padding must be (low, high) pairs, got padding=", Param(padding).ToString(),
                               " for operand ", x.str());
    }
    AxisWindow& a = axes[i];
    a.in = x.shape[i];
    a.window = dims[i];
    a.stride = strides[i];
    a.lo = (*pair)[0];
    a.hi = (*pair)[1];
    a.base_dilation = base[i];
    a.window_dilation = wdil[i];
    const int64_t padded = a.dilated() + a.lo + a.hi;
    if (padded < 0) {
      ThrowOpError<ValueError>(op, "padding=", Param(padding).ToString(), " leaves axis ", i, " of operand ",
                               x.str(), " with negative size ", padded);
    }
    const int64_t extent = (a.window - 1) * a.window_dilation + 1;
    a.out = padded < extent ? 0 : (padded - extent) / a.stride + 1;
  }
  return axes;
}

// Floor and ceiling division for a positive divisor.
int64_t FloorDiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
int64_t CeilDiv(int64_t a, int64_t b) { return -FloorDiv(-a, b); }

// For each output index of one axis, the input offsets (in elements) of its valid taps.
struct TapTable {
  std::vector<int64_t> begin;    // taps of output o are offsets[begin[o], begin[o + 1])
  std::vector<int64_t> offsets;
};
TapTable MakeTapTable(const AxisWindow& a, int64_t stride_elems) {
  TapTable t;
  t.begin.reserve(static_cast<size_t>(a.out) + 1);
  for (int64_t o = 0; o < a.out; ++o) {
    t.begin.push_back(static_cast<int64_t>(t.offsets.size()));
    for (int64_t k = 0; k < a.window; ++k) {
      const int64_t i = a.InputIndex(o, k);
      if (i >= 0) t.offsets.push_back(i * stride_elems);
    }
  }
  t.begin.push_back(static_cast<int64_t>(t.offsets.size()));
  return t;
}

// acc[i] = acc[i] op x[i * stride] for i < n, with the common strides as constants so the
// compiler vectorizes them (loads and permutes, no gathers).
template <typename Red, typename W, typename T>
inline void FoldStrided(W* __restrict acc, const T* __restrict x, int64_t n, int64_t stride) {
  if (stride == 1) {
    for (int64_t i = 0; i < n; ++i) acc[i] = Red::Combine(acc[i], static_cast<W>(Red::Load(x[i])));
  } else if (stride == 2) {
    for (int64_t i = 0; i < n; ++i) acc[i] = Red::Combine(acc[i], static_cast<W>(Red::Load(x[2 * i])));
  } else {
    for (int64_t i = 0; i < n; ++i) acc[i] = Red::Combine(acc[i], static_cast<W>(Red::Load(x[i * stride])));
  }
}

template <ReduceKind K, typename T>
void WindowKernel(const T* x, T* y, std::vector<AxisWindow> axes) {
  using Red = Reducer<K, T>;
  using W = typename Red::Acc;
  // Merge the trailing untouched axes into a contiguous run of C elements.
  int64_t C = 1;
  while (!axes.empty() && axes.back().trivial()) {
    C *= axes.back().in;
    axes.pop_back();
  }
  int64_t n_out = C;
  for (const AxisWindow& a : axes) n_out *= a.out;
  if (n_out == 0) return;
  if (axes.empty()) {  // every axis untouched: the identity map
    std::memcpy(y, x, static_cast<size_t>(n_out) * sizeof(T));
    return;
  }
  const size_t L = axes.size() - 1;
  const AxisWindow& last = axes.back();
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
  for (int64_t k = 0; k < last.window; ++k) {
    const int64_t shift = k * last.window_dilation - last.lo;
    const int64_t lo = std::max<int64_t>(0, CeilDiv(-shift, last.stride));
    const int64_t hi = std::min(last.out, FloorDiv(last.in - 1 - shift, last.stride) + 1);
    if (lo < hi) last_taps.push_back({lo, hi, shift});
  }
  int64_t n_lines = 1;
  for (size_t j = 0; j < L; ++j) n_lines *= axes[j].out;
  int64_t taps = 1;
  for (const AxisWindow& a : axes) taps *= a.window;
  // Split long lines when there are too few to keep the pool busy.
  const int64_t OW = last.out;
  int64_t chunk = OW;
  if (n_lines < 4 * NumThreads()) chunk = std::max<int64_t>(64, OW / (4 * NumThreads()));
  const int64_t n_chunks = (OW + chunk - 1) / chunk;
  const int64_t work_per_task = std::max<int64_t>(1, std::min(chunk, OW) * C * taps);
  const W identity = Red::template Identity<W>(false);

  ParallelFor(n_lines * n_chunks, std::max<int64_t>(1, kernels::kParallelGrain / work_per_task),
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
      std::fill(A, A + len, identity);
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
              FoldStrided<Red>(a, p, hi - lo, last.stride);
            } else {
              const int64_t step = last.stride * C;
              for (int64_t i = 0; i < hi - lo; ++i) Red::Accumulate(a + i * C, p + i * step, C);
            }
          }
        } else {
          for (int64_t k = 0; k < last.window; ++k) {
            for (int64_t ow = ow0; ow < ow1; ++ow) {
              const int64_t i = last.InputIndex(ow, k);
              if (i >= 0) Red::Accumulate(A + (ow - ow0) * C, src + i * C, C);
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
      for (int64_t i = 0; i < len; ++i) dst[i] = Red::Store(A[i]);
    }
  });
}

template <ReduceKind K>
void DefineReduceWindow(Registry& r, Primitive p, DTypeClass accepted) {
  PrimitiveRules& rules = r.Define(p);
  rules.abstract_eval = [p, accepted](InAvals in, const ParamMap& params) -> Avals {
    CheckArity(p.name(), in, 1);
    const ShapedArray& x = *in[0];
    if (!InClass(x.dtype, accepted)) {
      ThrowOpError<TypeError>(p.name(), "does not accept dtype ", dtype_name(x.dtype), " (operand ", x.str(),
                              "); expected a ", ClassName(accepted), " dtype");
    }
    const std::vector<AxisWindow> axes = ParseWindow(p.name(), x, params);
    Shape shape;
    for (const AxisWindow& a : axes) shape.push_back(a.out);
    return {ShapedArray{std::move(shape), x.dtype, x.weak_type}};
  };
  rules.impl = [p](absl::Span<const Array> in, const ParamMap& params,
                   absl::Span<const ShapedArray> out_avals) -> Arrays {
    Array out = Array::Empty(out_avals[0]);
    if (out.size() == 0) return {out};
    std::vector<AxisWindow> axes = ParseWindow(p.name(), in[0].aval(), params);
    const bool is_bool = in[0].dtype() == bool_;
    kernels::DispatchDType(is_bool ? uint8 : in[0].dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (!std::is_same_v<T, bool>) {
        // Booleans only reach max, as 0/1 bytes whose lowest value (the identity) is false.
        WindowKernel<K, T>(kernels::Data<T>(in[0]), kernels::MutableData<T>(out), std::move(axes));
      }
    });
    return {out};
  };
}

// ---------------------------------------------------------------------------------------
// Transformation rules (jvp, transpose, batching), written with lax ops.

using PadConfig = std::vector<std::array<int64_t, 3>>;

// The size of n elements with d - 1 holes between neighbours (JAX's _dilate_shape).
int64_t Dilate(int64_t n, int64_t d) { return n == 0 ? 0 : 1 + d * (n - 1); }

// reduce_window_sum's transpose (JAX's _reduce_window_sum_transpose_rule): the cotangent,
// spread by the strides and padded so that every input position sees exactly the outputs
// whose windows covered it, summed over the same window with the base dilation as stride.
Arrays ReduceWindowSumTranspose(absl::Span<const Array> cts, absl::Span<const TransposeArg> args,
                                const ParamMap& params) {
  if (!cts[0].defined()) return {Array{}};
  const std::vector<AxisWindow> axes = ParseWindow(kReduceWindowSum.name(), args[0].aval, params);
  PadConfig config;
  ParamList no_padding;
  for (const AxisWindow& a : axes) {
    const int64_t window = Dilate(a.window, a.window_dilation);
    const int64_t before = window - a.lo - 1;
    const int64_t after = Dilate(a.in, a.base_dilation) + window - 1 - Dilate(a.out, a.stride) - before;
    config.push_back({before, after, a.stride - 1});
    no_padding.push_back(Param(std::vector<int64_t>{0, 0}));
  }
  const Array spread = pad(cts[0], Array::Scalar(0, cts[0].dtype()), config);
  ParamMap q = params;
  q.Set("window_strides", params.GetInts("base_dilation"));
  q.Set("padding", std::move(no_padding));
  q.Set("base_dilation", std::vector<int64_t>(axes.size(), 1));
  return {Bind1(kReduceWindowSum, {spread}, q)};
}

// reduce_window_max's tangent: the mean of the tangents at the window positions equal to the
// window's max (JAX selects one by select_and_gather_add; ties have measure zero). The
// operand and tangent are padded and dilated like the window sees them, then every window
// tap is one strided slice, so the tangent is linear and transposes (pads, slices, products
// with primal masks). Costs a few ops per tap: fine for pooling windows.
Array WindowMaxTangent(const Array& x, const Array& out, const Array& t, const ParamMap& params) {
  if (x.ndim() == 0) return t;
  const std::vector<AxisWindow> axes = ParseWindow(kReduceWindowMax.name(), x.aval(), params);
  if (out.size() == 0) return Array{};
  PadConfig config;
  for (const AxisWindow& a : axes) config.push_back({a.lo, a.hi, a.base_dilation - 1});
  const Array xp = pad(x, Array::Scalar(-std::numeric_limits<double>::infinity(), x.dtype()), config);
  const Array tp = pad(t, Array::Scalar(0, t.dtype()), config);
  const size_t rank = axes.size();
  std::vector<int64_t> tap(rank, 0), start(rank), limit(rank), strides(rank);
  Array sum, count;
  while (true) {
    for (size_t i = 0; i < rank; ++i) {
      const AxisWindow& a = axes[i];
      start[i] = tap[i] * a.window_dilation;
      limit[i] = start[i] + (a.out - 1) * a.stride + 1;
      strides[i] = a.stride;
    }
    const Array hit = convert_element_type(eq(slice(xp, start, limit, strides), out), t.dtype());
    const Array picked = mul(slice(tp, start, limit, strides), hit);
    sum = sum.defined() ? add(sum, picked) : picked;
    count = count.defined() ? add(count, hit) : hit;
    size_t i = rank;  // next tap, odometer order
    while (i-- > 0 && ++tap[i] == axes[i].window) tap[i] = 0;
    if (i == static_cast<size_t>(-1)) break;
  }
  return div(sum, count);
}

// reduce_window_{sum,max} batch with the batch dim at the front under a window of 1.
BatchRule BatchReduceWindow(Primitive p) {
  return [p](absl::Span<const Array> args, absl::Span<const int64_t> dims, int64_t n, const ParamMap& params) {
    ParamMap q = params;
    for (const char* name : {"window_dimensions", "window_strides", "base_dilation", "window_dilation"}) {
      std::vector<int64_t> v = params.GetInts(name);
      v.insert(v.begin(), 1);
      q.Set(name, std::move(v));
    }
    ParamList padding = params.GetList("padding");
    padding.insert(padding.begin(), Param(std::vector<int64_t>{0, 0}));
    q.Set("padding", std::move(padding));
    return BatchResult{{Bind1(p, {MoveBatchToFront(args[0], dims[0], n)}, q)}, {0}};
  };
}

void DefineReduceWindowRules(Registry& r) {
  PrimitiveRules& sum = r.Define(kReduceWindowSum);
  sum.jvp = [](absl::Span<const Array> primals, absl::Span<const Array> tangents, const ParamMap& params) {
    Array out = Bind1(kReduceWindowSum, primals, params);
    Array t = tangents[0].defined() ? Bind1(kReduceWindowSum, {tangents[0]}, params) : Array{};
    return JvpResult{{std::move(out)}, {std::move(t)}};
  };
  sum.transpose = ReduceWindowSumTranspose;
  sum.batch = BatchReduceWindow(kReduceWindowSum);

  PrimitiveRules& max = r.Define(kReduceWindowMax);
  max.jvp = [](absl::Span<const Array> primals, absl::Span<const Array> tangents, const ParamMap& params) {
    Array out = Bind1(kReduceWindowMax, primals, params);
    // An empty output (e.g. a window larger than the operand) has a symbolic zero tangent.
    const bool has_tangent = tangents[0].defined() && out.size() > 0;
    Array t = has_tangent ? WindowMaxTangent(primals[0], out, tangents[0], params) : Array{};
    return JvpResult{{std::move(out)}, {std::move(t)}};
  };
  max.unsupported["transpose"] = "not linear: reverse mode transposes the linear ops of its jvp";
  max.batch = BatchReduceWindow(kReduceWindowMax);
}

}  // namespace

void RegisterWindowOps(Registry& r) {
  DefineReduceWindow<ReduceKind::kSum>(r, kReduceWindowSum, DTypeClass::kNumeric);
  DefineReduceWindow<ReduceKind::kMax>(r, kReduceWindowMax, DTypeClass::kAny);
  DefineReduceWindowRules(r);
}

}  // namespace internal
}  // namespace jx::lax

// Windowed reductions: reduce_window_sum, reduce_window_max and reduce_window_min, with
// XLA's semantics.
//
// Padding positions and base-dilation holes are skipped (the monoid's identity); window
// dilation spreads the window's taps apart. The numerics are the kernel library's
// (lax/kernels/window.h), which the CPU backend's reduce-window kernel runs too.
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
#include "jx/lax/convolution.h"
#include "jx/lax/kernels/window.h"
#include "jx/lax/op_util.h"
#include "jx/lax/primitives.h"
#include "jx/lax/rule_util.h"
#include "jx/lax/slicing_ops.h"

namespace jx::lax {

using internal::BindOp1;

namespace {

Array ReduceWindowOp(Primitive p, const Array& x, const std::vector<int64_t>& window_dimensions,
                     const std::vector<int64_t>& window_strides, const WindowPaddingLike& padding,
                     const std::vector<int64_t>& base_dilation, const std::vector<int64_t>& window_dilation) {
  // Omitted dilations default to 1 on every axis.
  const std::vector<int64_t> ones(window_dimensions.size(), 1);
  ParamList pads;
  for (const auto& [lo, hi] : padding.Resolve(x.shape(), window_dimensions, window_strides)) {
    pads.push_back(Param(std::vector<int64_t>{lo, hi}));
  }
  return BindOp1(p, {x},
                 ParamMap{{"window_dimensions", window_dimensions},
                          {"window_strides", window_strides},
                          {"padding", std::move(pads)},
                          {"base_dilation", base_dilation.empty() ? ones : base_dilation},
                          {"window_dilation", window_dilation.empty() ? ones : window_dilation}});
}

}  // namespace

WindowPadding WindowPaddingLike::Resolve(const Shape& x, const std::vector<int64_t>& window_dimensions,
                                         const std::vector<int64_t>& window_strides) const {
  if (const auto* pads = std::get_if<WindowPadding>(&value_)) return *pads;
  const std::string& padtype = std::get<std::string>(value_);
  if (window_dimensions.size() != x.size() || window_strides.size() != x.size()) {
    ThrowOpError<ShapeError>("reduce_window", "padding=\"", padtype, "\" needs window_dimensions (",
                             window_dimensions.size(), " entries) and window_strides (", window_strides.size(),
                             " entries) of the operand's rank ", x.size(), " (operand shape ", ShapeToString(x), ")");
  }
  return padtype_to_pads(std::vector<int64_t>(x.begin(), x.end()), window_dimensions, window_strides, padtype);
}

Array reduce_window_sum(const Array& x, const std::vector<int64_t>& window_dimensions,
                        const std::vector<int64_t>& window_strides, const WindowPaddingLike& padding,
                        const std::vector<int64_t>& base_dilation, const std::vector<int64_t>& window_dilation) {
  return ReduceWindowOp(kReduceWindowSum, x, window_dimensions, window_strides, padding, base_dilation,
                        window_dilation);
}

Array reduce_window_max(const Array& x, const std::vector<int64_t>& window_dimensions,
                        const std::vector<int64_t>& window_strides, const WindowPaddingLike& padding,
                        const std::vector<int64_t>& base_dilation, const std::vector<int64_t>& window_dilation) {
  return ReduceWindowOp(kReduceWindowMax, x, window_dimensions, window_strides, padding, base_dilation,
                        window_dilation);
}

Array reduce_window_min(const Array& x, const std::vector<int64_t>& window_dimensions,
                        const std::vector<int64_t>& window_strides, const WindowPaddingLike& padding,
                        const std::vector<int64_t>& base_dilation, const std::vector<int64_t>& window_dilation) {
  return ReduceWindowOp(kReduceWindowMin, x, window_dimensions, window_strides, padding, base_dilation,
                        window_dilation);
}

Array reduce_window(const Array& x, WindowReduction computation, const std::vector<int64_t>& window_dimensions,
                    const std::vector<int64_t>& window_strides, const WindowPaddingLike& padding,
                    const std::vector<int64_t>& base_dilation, const std::vector<int64_t>& window_dilation) {
  switch (computation) {
    case WindowReduction::kSum:
      return reduce_window_sum(x, window_dimensions, window_strides, padding, base_dilation, window_dilation);
    case WindowReduction::kMax:
      return reduce_window_max(x, window_dimensions, window_strides, padding, base_dilation, window_dilation);
    case WindowReduction::kMin:
      return reduce_window_min(x, window_dimensions, window_strides, padding, base_dilation, window_dilation);
  }
  throw ValueError("[reduce_window] unknown WindowReduction");
}

namespace internal {
namespace {

std::string Tuple(const std::vector<int64_t>& v) {
  if (v.size() == 1) return StrCat("(", v[0], ",)");
  return StrCat("(", absl::StrJoin(v, ", "), ")");
}

// The window configuration of one axis.
struct AxisWindow {
  int64_t in = 0, out = 0;       // input and output sizes
  int64_t window = 1, stride = 1, lo = 0, hi = 0, base_dilation = 1, window_dilation = 1;
  int64_t dilated() const { return in == 0 ? 0 : (in - 1) * base_dilation + 1; }
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

// The kernel library's view of the window.
std::vector<kernels::WindowAxis> KernelAxes(const std::vector<AxisWindow>& axes) {
  std::vector<kernels::WindowAxis> out;
  for (const AxisWindow& a : axes) {
    out.push_back({a.in, a.out, a.window, a.stride, a.lo, a.hi, a.base_dilation, a.window_dilation});
  }
  return out;
}

template <kernels::WindowReducer kReducer>
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
    const std::vector<AxisWindow> axes = ParseWindow(p.name(), in[0].aval(), params);
    kernels::ReduceWindow(in[0].dtype(), kReducer, in[0].data(), KernelAxes(axes), /*init=*/nullptr,
                          out.mutable_data());
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
// reduce_window_min's is the same with the min (padding holds +inf instead of -inf).
Array WindowExtremumTangent(Primitive p, const Array& x, const Array& out, const Array& t, const ParamMap& params) {
  if (x.ndim() == 0) return t;
  const std::vector<AxisWindow> axes = ParseWindow(p.name(), x.aval(), params);
  if (out.size() == 0) return Array{};
  PadConfig config;
  for (const AxisWindow& a : axes) config.push_back({a.lo, a.hi, a.base_dilation - 1});
  const double outside = (p == kReduceWindowMax ? -1 : 1) * std::numeric_limits<double>::infinity();
  const Array xp = pad(x, Array::Scalar(outside, x.dtype()), config);
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

  for (Primitive p : {kReduceWindowMax, kReduceWindowMin}) {
    PrimitiveRules& extremum = r.Define(p);
    extremum.jvp = [p](absl::Span<const Array> primals, absl::Span<const Array> tangents, const ParamMap& params) {
      Array out = Bind1(p, primals, params);
      // An empty output (e.g. a window larger than the operand) has a symbolic zero tangent.
      const bool has_tangent = tangents[0].defined() && out.size() > 0;
      Array t = has_tangent ? WindowExtremumTangent(p, primals[0], out, tangents[0], params) : Array{};
      return JvpResult{{std::move(out)}, {std::move(t)}};
    };
    extremum.unsupported["transpose"] = "not linear: reverse mode transposes the linear ops of its jvp";
    extremum.batch = BatchReduceWindow(p);
  }
}

}  // namespace

void RegisterWindowOps(Registry& r) {
  DefineReduceWindow<kernels::WindowReducer::kSum>(r, kReduceWindowSum, DTypeClass::kNumeric);
  DefineReduceWindow<kernels::WindowReducer::kMax>(r, kReduceWindowMax, DTypeClass::kAny);
  DefineReduceWindow<kernels::WindowReducer::kMin>(r, kReduceWindowMin, DTypeClass::kAny);
  DefineReduceWindowRules(r);
}

}  // namespace internal
}  // namespace jx::lax

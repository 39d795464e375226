// opinfo records for the window family: reduce_window_sum, reduce_window_max and
// reduce_window_min. The
// reference walks every output index and every window tap with XLA's rules: padding holds
// the identity, base-dilation holes are skipped, window dilation spreads the taps.
#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_join.h"
#include "opinfo.h"

namespace jx::opinfo::window_opinfo {
namespace {

struct WindowCase {
  Shape shape;
  std::vector<int64_t> window, strides;
  lax::WindowPadding padding;
  std::vector<int64_t> base_dilation, window_dilation;  // empty: all ones
};

std::vector<WindowCase> Cases() {
  using P = lax::WindowPadding;
  return {
      {{}, {}, {}, {}, {}, {}},
      {{5}, {2}, {1}, {{0, 0}}, {}, {}},
      {{5}, {3}, {2}, {{1, 1}}, {}, {}},
      {{7}, {2}, {1}, {{0, 0}}, {2}, {1}},
      {{6}, {2}, {1}, {{1, 0}}, {1}, {2}},
      {{8}, {2}, {1}, {{-1, -2}}, {}, {}},
      {{0}, {2}, {1}, {{1, 1}}, {}, {}},
      {{3}, {5}, {1}, {{0, 0}}, {}, {}},
      {{3, 4}, {1, 1}, {1, 1}, {{0, 0}, {0, 0}}, {}, {}},
      {{2, 6, 6, 3}, {1, 2, 2, 1}, {1, 2, 2, 1}, P(4, {0, 0}), {}, {}},
      {{2, 6, 6, 3}, {1, 3, 3, 1}, {1, 1, 1, 1}, {{0, 0}, {1, 1}, {1, 1}, {0, 0}}, {}, {}},
      {{1, 7, 7, 2}, {1, 3, 3, 1}, {1, 2, 2, 1}, {{0, 0}, {1, 1}, {1, 1}, {0, 0}}, {}, {}},
      {{2, 3, 6, 6}, {1, 1, 2, 2}, {1, 1, 2, 2}, P(4, {0, 0}), {}, {}},
      {{2, 3, 7, 6}, {1, 1, 3, 3}, {1, 1, 2, 2}, {{0, 0}, {0, 0}, {1, 1}, {1, 1}}, {}, {}},
      {{2, 3, 4}, {1, 2, 2}, {1, 1, 1}, P(3, {0, 0}), {1, 2, 2}, {}},
      {{4, 5, 6}, {2, 2, 2}, {1, 2, 1}, {{0, 1}, {1, 0}, {2, 2}}, {1, 1, 1}, {2, 1, 2}},
      {{3, 5, 4}, {2, 3, 2}, {2, 1, 3}, {{1, 2}, {0, 3}, {2, 0}}, {2, 1, 3}, {1, 2, 1}},
      {{2, 0, 3}, {1, 2, 1}, {1, 1, 1}, {{0, 0}, {1, 1}, {0, 0}}, {}, {}},
      // Base dilation with trailing untouched axes (C > 1), on the last windowed axis or before.
      {{3, 4, 2}, {1, 2, 1}, {1, 1, 1}, {{0, 0}, {1, 0}, {0, 0}}, {1, 2, 1}, {}},
      {{4, 3, 2}, {2, 2, 1}, {2, 1, 1}, {{1, 1}, {0, 0}, {0, 0}}, {2, 1, 1}, {1, 2, 1}},
      // Large: the parallel paths (NHWC and NCHW pooling, one long line).
      {{4, 32, 32, 16}, {1, 2, 2, 1}, {1, 2, 2, 1}, P(4, {0, 0}), {}, {}},
      {{4, 16, 32, 32}, {1, 1, 3, 3}, {1, 1, 2, 2}, {{0, 0}, {0, 0}, {1, 1}, {1, 1}}, {}, {}},
      {{70000}, {3}, {1}, {{1, 1}}, {}, {}},
  };
}

Array Rand(std::mt19937_64& rng, const Shape& shape, DType d, double lo, double hi) {
  if (IsUnsignedInt(d)) lo = std::max(lo, 0.0);
  return RandomArray(rng, shape, d, lo, hi);
}

double Wrap(double v, DType d) {
  if (!IsInteger(d)) return v;
  const int bits = static_cast<int>(ItemSize(d)) * 8;
  const double lo = IsSignedInt(d) ? -std::ldexp(1.0, bits - 1) : 0.0;
  const double hi = IsSignedInt(d) ? std::ldexp(1.0, bits - 1) - 1 : std::ldexp(1.0, bits) - 1;
  if (v >= lo && v <= hi) return v;
  const double mod = std::ldexp(1.0, bits);
  double r = std::fmod(v, mod);
  if (r < 0) r += mod;
  if (IsSignedInt(d) && r >= mod / 2) r -= mod;
  return r;
}

std::vector<int64_t> OnesIfEmpty(const std::vector<int64_t>& v, size_t n) {
  return v.empty() ? std::vector<int64_t>(n, 1) : v;
}

// Calls f(idx) for every index of shape, row-major (a template: f runs per window element).
template <typename F>
void ForEachIndex(const Shape& shape, const F& f) {
  if (NumElements(shape) == 0) return;
  std::vector<int64_t> idx(shape.size(), 0);
  while (true) {
    f(idx);
    int64_t d = static_cast<int64_t>(shape.size()) - 1;
    for (; d >= 0; --d) {
      if (++idx[static_cast<size_t>(d)] < shape[static_cast<size_t>(d)]) break;
      idx[static_cast<size_t>(d)] = 0;
    }
    if (d < 0) return;
  }
}

RefArray RefWindow(const RefArray& x, const WindowCase& c, double init, const std::function<double(double, double)>& f) {
  const size_t rank = x.shape.size();
  const std::vector<int64_t> bd = OnesIfEmpty(c.base_dilation, rank), wd = OnesIfEmpty(c.window_dilation, rank);
  RefArray out;
  for (size_t i = 0; i < rank; ++i) {
    const int64_t dilated = x.shape[i] == 0 ? 0 : (x.shape[i] - 1) * bd[i] + 1;
    const int64_t padded = dilated + c.padding[i].first + c.padding[i].second;
    const int64_t extent = (c.window[i] - 1) * wd[i] + 1;
    out.shape.push_back(padded < extent ? 0 : (padded - extent) / c.strides[i] + 1);
  }
  out.data.assign(static_cast<size_t>(NumElements(out.shape)), init);
  const Shape window(c.window.begin(), c.window.end());
  std::vector<int64_t> dilated(rank), in(rank);  // reused: no allocation per window element
  for (size_t i = 0; i < rank; ++i) dilated[i] = x.shape[i] == 0 ? 0 : (x.shape[i] - 1) * bd[i] + 1;
  ForEachIndex(out.shape, [&](const std::vector<int64_t>& o) {
    double acc = init;
    ForEachIndex(window, [&](const std::vector<int64_t>& k) {
      for (size_t i = 0; i < rank; ++i) {
        const int64_t pos = o[i] * c.strides[i] + k[i] * wd[i] - c.padding[i].first;
        if (pos < 0 || pos >= dilated[i] || pos % bd[i] != 0) return;  // padding or a hole
        in[i] = pos / bd[i];
      }
      acc = f(acc, x.at(in));
    });
    out.at(o) = acc;
  });
  return out;
}

std::string Describe(const WindowCase& c, DType d) {
  std::vector<std::string> pads;
  for (const auto& [lo, hi] : c.padding) pads.push_back(StrCat("(", lo, ",", hi, ")"));
  return StrCat(ShapedArray{c.shape, d}.str(), " window=(", absl::StrJoin(c.window, ","), ") strides=(",
                absl::StrJoin(c.strides, ","), ") padding=(", absl::StrJoin(pads, ","), ") base_dilation=(",
                absl::StrJoin(c.base_dilation, ","), ") window_dilation=(", absl::StrJoin(c.window_dilation, ","), ")");
}

double Lowest(DType d) {
  if (IsBool(d) || IsUnsignedInt(d)) return 0;
  if (IsFloating(d)) return -std::numeric_limits<double>::infinity();
  return -std::ldexp(1.0, static_cast<int>(ItemSize(d)) * 8 - 1);
}

double Highest(DType d) {
  if (IsBool(d)) return 1;
  if (IsFloating(d)) return std::numeric_limits<double>::infinity();
  const int bits = static_cast<int>(ItemSize(d)) * 8;
  return IsUnsignedInt(d) ? std::ldexp(1.0, bits) - 1 : std::ldexp(1.0, bits - 1) - 1;
}

Array ByName(lax::WindowReduction kind, const Array& x, const WindowCase& c) {
  switch (kind) {
    case lax::WindowReduction::kSum:
      return lax::reduce_window_sum(x, c.window, c.strides, c.padding, c.base_dilation, c.window_dilation);
    case lax::WindowReduction::kMax:
      return lax::reduce_window_max(x, c.window, c.strides, c.padding, c.base_dilation, c.window_dilation);
    case lax::WindowReduction::kMin:
      return lax::reduce_window_min(x, c.window, c.strides, c.padding, c.base_dilation, c.window_dilation);
  }
  throw std::logic_error("unknown WindowReduction");
}

RefArray RefByName(lax::WindowReduction kind, const RefArray& x, const WindowCase& c, DType d) {
  switch (kind) {
    case lax::WindowReduction::kSum:
      return RefWindow(x, c, 0.0, [](double p, double q) { return p + q; });
    case lax::WindowReduction::kMax:
      return RefWindow(x, c, Lowest(d), [](double p, double q) { return std::isnan(p) || std::isnan(q) ? NAN : std::max(p, q); });
    case lax::WindowReduction::kMin:
      return RefWindow(x, c, Highest(d), [](double p, double q) { return std::isnan(p) || std::isnan(q) ? NAN : std::min(p, q); });
  }
  throw std::logic_error("unknown WindowReduction");
}

OpInfo WindowInfo(std::string name, lax::WindowReduction kind, std::vector<DType> dtypes) {
  OpInfo info;
  info.name = name;
  info.dtypes = std::move(dtypes);
  info.tolerance = DefaultTolerance;
  info.samples = [kind](DType d, std::mt19937_64& rng) {
    std::vector<Sample> out;
    for (const WindowCase& c : Cases()) {
      Array x = Rand(rng, c.shape, d, -3, 3);
      std::vector<std::pair<std::string, Array>> inputs = {{"", x}};
      if (c.shape.size() >= 2) inputs.push_back({" (transposed)", NonContiguousCopy(x)});
      for (auto& [tag, arg] : inputs) {
        for (bool generic : {false, true}) {
          if (generic && !tag.empty()) continue;
          Sample s;
          s.description = StrCat(Describe(c, d), tag, generic ? " (lax::reduce_window)" : "");
          s.args = {arg};
          s.op = [c, kind, generic](const std::vector<Array>& a) {
            if (generic) {
              return std::vector<Array>{lax::reduce_window(a[0], kind, c.window, c.strides, c.padding,
                                                           c.base_dilation, c.window_dilation)};
            }
            return std::vector<Array>{ByName(kind, a[0], c)};
          };
          s.reference = [c, kind, d](const std::vector<RefArray>& a) {
            RefArray r = RefByName(kind, a[0], c, d);
            for (double& v : r.data) v = Wrap(v, d);
            return std::vector<RefArray>{r};
          };
          s.out_dtypes = {d};
          // A max (min) window holding only padding or dilation holes is -inf (+inf): no finite
          // differences. Only floating samples reach them, so only theirs pay for a second
          // reference.
          s.derivatives_defined = IsFloating(d);
          if (s.derivatives_defined) {
            const std::vector<double> values = s.reference({ToRef(arg)})[0].data;
            s.derivatives_defined =
                std::all_of(values.begin(), values.end(), [](double v) { return std::isfinite(v); });
          }
          out.push_back(std::move(s));
        }
      }
    }
    return out;
  };
  return info;
}

JX_OPINFO(reduce_window_sum) {
  return WindowInfo("reduce_window_sum", lax::WindowReduction::kSum, Concat(kIntDTypes, kFloatDTypes));
}
JX_OPINFO(reduce_window_max) { return WindowInfo("reduce_window_max", lax::WindowReduction::kMax, kAllDTypes); }
JX_OPINFO(reduce_window_min) { return WindowInfo("reduce_window_min", lax::WindowReduction::kMin, kAllDTypes); }

}  // namespace
}  // namespace jx::opinfo::window_opinfo

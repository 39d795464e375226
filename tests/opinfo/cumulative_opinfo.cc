// opinfo records for the cumulative family: cumsum, cumprod, cummax, cummin, cumlogsumexp.
// References are naive float64 scans over [outer, axis, inner]; integer results wrap.
#include <algorithm>
#include <cmath>
#include <limits>

#include "opinfo.h"

namespace jx::opinfo::cumulative_opinfo {
namespace {

struct CumCase {
  Shape shape;
  int64_t axis;
};

const std::vector<CumCase>& Cases() {
  static const std::vector<CumCase> cases = {
      {{5}, 0},       {{1}, 0},          {{0}, 0},          {{3, 4}, 0},      {{3, 4}, 1},
      {{3, 4}, -1},   {{2, 0, 3}, 1},    {{2, 0, 3}, 0},    {{2, 3, 5}, 1},   {{2, 3, 5}, 0},
      {{2, 3, 5}, 2}, {{1000}, 0},       {{2, 700}, 1},     {{300, 257}, 0},  {{300, 257}, 1},
      {{40, 700, 3}, 1}, {{2, 270000}, 1},
  };
  return cases;
}

Array Rand(std::mt19937_64& rng, const Shape& shape, DType d, double lo, double hi) {
  if (IsUnsignedInt(d)) lo = std::max(lo, 0.0);
  return RandomArray(rng, shape, d, lo, hi);
}

// Replaces about one element in 20 by `value` (floats only).
Array WithValue(const Array& a, std::mt19937_64& rng, double value) {
  if (!IsFloating(a.dtype()) || a.size() == 0) return a;
  return WithValuesAtRandom(a, rng, std::max<int64_t>(1, a.size() / 20), [value](int64_t) { return value; });
}

// Integer results wrap to d's range (two's complement); the bounds are computed once per
// sample, not per element.
class Wrapper {
 public:
  explicit Wrapper(DType d) : is_int_(IsInteger(d)) {
    if (!is_int_) return;
    const int bits = static_cast<int>(ItemSize(d)) * 8;
    signed_ = IsSignedInt(d);
    lo_ = signed_ ? -std::ldexp(1.0, bits - 1) : 0.0;
    hi_ = signed_ ? std::ldexp(1.0, bits - 1) - 1 : std::ldexp(1.0, bits) - 1;
    mod_ = std::ldexp(1.0, bits);
  }
  double operator()(double v) const {
    if (!is_int_ || std::isnan(v) || (v >= lo_ && v <= hi_)) return v;
    double r = std::fmod(v, mod_);
    if (r < 0) r += mod_;
    if (signed_ && r >= mod_ / 2) r -= mod_;
    return r;
  }

 private:
  bool is_int_, signed_ = false;
  double lo_ = 0, hi_ = 0, mod_ = 0;
};

bool AllFinite(const std::vector<double>& v) {
  return std::all_of(v.begin(), v.end(), [](double e) { return std::isfinite(e); });
}

using Ext = long double;  // the running value: long f64 sums need more than f64 to be a reference
// Naive scan: out[o, j, i] = F(out[o, j -/+ 1, i], x[o, j, i]), starting from x itself, with
// the running value carried in extended precision. F is a template argument so the step
// inlines (it runs once per element of 540000-element samples).
template <Ext (*F)(Ext, Ext)>
RefArray RefScan(const RefArray& x, int64_t axis, bool reverse) {
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  int64_t O = 1, I = 1;
  const int64_t N = x.shape[static_cast<size_t>(axis)];
  for (int64_t i = 0; i < axis; ++i) O *= x.shape[static_cast<size_t>(i)];
  for (int64_t i = axis + 1; i < rank; ++i) I *= x.shape[static_cast<size_t>(i)];
  RefArray out = x;
  for (int64_t o = 0; o < O; ++o) {
    for (int64_t i = 0; i < I; ++i) {
      if (N == 0) continue;
      Ext run = out.data[static_cast<size_t>((o * N + (reverse ? N - 1 : 0)) * I + i)];
      for (int64_t j = 1; j < N; ++j) {
        double& y = out.data[static_cast<size_t>((o * N + (reverse ? N - 1 - j : j)) * I + i)];
        run = F(run, y);
        y = static_cast<double>(run);
      }
    }
  }
  return out;
}

Ext Add(Ext a, Ext b) { return a + b; }
Ext Mul(Ext a, Ext b) { return a * b; }
Ext NanMax(Ext a, Ext b) { return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b); }
Ext NanMin(Ext a, Ext b) { return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b); }
Ext LogAddExp(Ext a, Ext b) {
  if (std::isnan(a) || std::isnan(b)) return NAN;
  if (a == b && std::isinf(a)) return a;
  const Ext m = std::max(a, b);
  return m + std::log1p(std::exp(-std::fabs(a - b)));
}

using CumFn = Array (*)(const Array&, int64_t, bool);
using RefScanFn = RefArray (*)(const RefArray& x, int64_t axis, bool reverse);

struct CumSpec {
  std::string name;
  CumFn op;
  std::vector<DType> dtypes;
  RefScanFn scan;
  bool narrow_big = false;               // products: big shapes draw from a narrow range
  std::vector<double> specials;          // float values also injected (NaN, -inf, ...)
  bool wide_range = false;               // also sample values in [-200, 200] (stability)
};

OpInfo CumInfo(CumSpec spec) {
  OpInfo info;
  info.name = spec.name;
  info.dtypes = spec.dtypes;
  info.tolerance = DefaultTolerance;
  info.samples = [spec](DType d, std::mt19937_64& rng) {
    std::vector<Sample> out;
    for (const CumCase& c : Cases()) {
      const bool narrow = spec.narrow_big && c.shape.size() > 0 && NumElements(c.shape) > 20;
      const double lo = narrow ? (IsFloating(d) ? 0.7 : -1) : -3, hi = narrow ? (IsFloating(d) ? 1.3 : 1) : 3;
      Array x = Rand(rng, c.shape, d, lo, hi);
      std::vector<std::pair<std::string, Array>> inputs = {{"", x}};
      if (c.shape.size() >= 2) inputs.push_back({" (transposed)", NonContiguousCopy(x)});
      for (double v : spec.specials) {
        if (IsFloating(d) && x.size() > 0) inputs.push_back({StrCat(" (with ", v, ")"), WithValue(x, rng, v)});
      }
      if (spec.wide_range && IsFloating(d)) inputs.push_back({" (range 200)", Rand(rng, c.shape, d, -200, 200)});
      for (auto& [tag, arg] : inputs) {
        for (bool reverse : {false, true}) {
          Sample s;
          s.description = StrCat(ShapedArray{c.shape, d}.str(), " axis=", c.axis, " reverse=", reverse, tag);
          s.args = {arg};
          const CumFn op = spec.op;
          const int64_t axis = c.axis;
          s.op = [op, axis, reverse](const std::vector<Array>& a) { return std::vector<Array>{op(a[0], axis, reverse)}; };
          const RefScanFn scan = spec.scan;
          s.reference = [scan, axis, reverse, d](const std::vector<RefArray>& a) {
            const int64_t rank = static_cast<int64_t>(a[0].shape.size());
            RefArray r = scan(a[0], axis < 0 ? axis + rank : axis, reverse);
            const Wrapper wrap(d);
            for (double& v : r.data) v = wrap(v);
            return std::vector<RefArray>{r};
          };
          s.out_dtypes = {d};
          // Finite differences need finite inputs (not the injected NaN and infinities).
          s.derivatives_defined = AllFinite(arg.to_vector<double>());
          out.push_back(std::move(s));
        }
      }
    }
    return out;
  };
  return info;
}

const std::vector<DType> kNumeric = Concat(kIntDTypes, kFloatDTypes);
constexpr double kInf = std::numeric_limits<double>::infinity();

CumSpec Spec(std::string name, CumFn op, std::vector<DType> dtypes, RefScanFn scan) {
  CumSpec spec;
  spec.name = std::move(name);
  spec.op = op;
  spec.dtypes = std::move(dtypes);
  spec.scan = scan;
  return spec;
}

JX_OPINFO(cumsum) {
  CumSpec spec = Spec("cumsum", lax::cumsum, kNumeric, RefScan<Add>);
  spec.specials = {NAN};
  return CumInfo(spec);
}
JX_OPINFO(cumprod) {
  CumSpec spec = Spec("cumprod", lax::cumprod, kNumeric, RefScan<Mul>);
  spec.narrow_big = true;
  return CumInfo(spec);
}
JX_OPINFO(cummax) {
  CumSpec spec = Spec("cummax", lax::cummax, kNumeric, RefScan<NanMax>);
  spec.specials = {NAN, -kInf};
  return CumInfo(spec);
}
JX_OPINFO(cummin) {
  CumSpec spec = Spec("cummin", lax::cummin, kNumeric, RefScan<NanMin>);
  spec.specials = {NAN, kInf};
  return CumInfo(spec);
}
JX_OPINFO(cumlogsumexp) {
  CumSpec spec = Spec("cumlogsumexp", lax::cumlogsumexp, kFloatDTypes, RefScan<LogAddExp>);
  spec.specials = {NAN, -kInf, kInf};
  spec.wide_range = true;
  return CumInfo(spec);
}

}  // namespace
}  // namespace jx::opinfo::cumulative_opinfo

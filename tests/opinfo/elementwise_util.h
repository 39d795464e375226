// Helpers for the elementwise families' opinfo records (unary, binary, convert): references
// and input ranges that depend on the dtype (integer wrapping, unsigned ranges), float special
// values (NaN, +-inf, +-0) as an extra sample, and exact output dtypes.
#pragma once

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "opinfo.h"

namespace jx::opinfo::elementwise {

struct Range {
  double lo = -3, hi = 3;
};
using RangeFn = std::function<Range(DType)>;
using Ref1 = std::function<double(double)>;
using Ref2 = std::function<double(double, double)>;

// Default input range: [-3, 3], or [0, 6] for unsigned types.
inline Range DefaultRange(DType d) { return IsUnsignedInt(d) ? Range{0, 6} : Range{-3, 3}; }

// The value v reduced modulo 2^bits into d's range (integer wrapping; exact for |v| < 2^53).
inline double Wrap(DType d, double v) {
  if (!IsInteger(d)) return v;
  const double m = std::ldexp(1.0, static_cast<int>(ItemSize(d) * 8));
  const double lo = IsSignedInt(d) ? -m / 2 : 0, hi = IsSignedInt(d) ? m / 2 : m;
  if (v >= lo && v < hi) return v;  // in range: exact even for 64-bit types
  double r = std::fmod(v, m);
  if (r < 0) r += m;
  if (IsSignedInt(d) && r >= m / 2) r -= m;
  return r;
}

// Float special values exercised by every float record (as an extra 1-D sample).
inline std::vector<double> FloatSpecials() {
  const double inf = std::numeric_limits<double>::infinity();
  return {std::nan(""), inf, -inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, 1e-3, -1e-3, 10.0, -10.0, 100.0, -100.0};
}

inline Array FromDoubles(const std::vector<double>& v, DType d) {
  Array out = Array::Empty(Shape{static_cast<int64_t>(v.size())}, d);
  for (size_t i = 0; i < v.size(); ++i) StoreFromDouble(d, out.mutable_data(), static_cast<int64_t>(i), v[i]);
  return out;
}

struct UnarySpec {
  std::string name{};
  std::string tag{};  // prefixed to sample descriptions ("y=-3"), for merged records
  std::function<Array(const Array&)> op{};
  std::function<Ref1(DType)> ref{};  // reference for inputs of dtype d
  std::vector<DType> dtypes{};
  RangeFn range = DefaultRange;
  bool specials = true;             // add the float special values sample
  std::function<DType(DType)> out_dtype = [](DType d) { return d; };
  std::function<Tolerance(DType)> tolerance = DefaultTolerance;
};

inline OpInfo Unary(UnarySpec spec) {
  OpInfo info;
  info.name = spec.name;
  info.dtypes = spec.dtypes;
  info.tolerance = spec.tolerance;
  info.samples = [spec](DType d, std::mt19937_64& rng) {
    std::vector<Sample> out;
    const Range range = spec.range(d);
    const Ref1 ref = spec.ref(d);
    auto add = [&](Array x, std::string desc) {
      Sample s;
      s.description = spec.tag.empty() ? std::move(desc) : StrCat(spec.tag, " ", desc);
      s.args = {std::move(x)};
      s.op = [op = spec.op](const std::vector<Array>& a) { return std::vector<Array>{op(a[0])}; };
      s.reference = [ref](const std::vector<RefArray>& a) {
        RefArray r{a[0].shape, std::vector<double>(a[0].data.size())};
        for (size_t i = 0; i < r.data.size(); ++i) r.data[i] = ref(a[0].data[i]);
        return std::vector<RefArray>{r};
      };
      s.out_dtypes = {spec.out_dtype(d)};
      out.push_back(std::move(s));
    };
    for (const Shape& shape : ElementwiseShapes()) {
      Array x = RandomArray(rng, shape, d, range.lo, range.hi);
      add(x, ShapedArray{shape, d}.str());
      if (shape.size() >= 2) add(NonContiguousCopy(x), StrCat(ShapedArray{shape, d}.str(), " (transposed)"));
    }
    if (spec.specials && IsFloating(d)) {
      add(FromDoubles(FloatSpecials(), d), StrCat(dtype_name(d), " special values"));
      out.back().derivatives_defined = false;
    }
    return out;
  };
  return info;
}

struct BinarySpec {
  std::string name{};
  std::string tag{};
  std::function<Array(const Array&, const Array&)> op{};
  std::function<Ref2(DType)> ref{};
  std::vector<DType> dtypes{};
  RangeFn range_a = DefaultRange;
  RangeFn range_b = DefaultRange;
  bool specials = true;  // all pairs of float special values
  std::function<DType(DType)> out_dtype = [](DType d) { return d; };
  std::function<Tolerance(DType)> tolerance = DefaultTolerance;
};

inline OpInfo Binary(BinarySpec spec) {
  OpInfo info;
  info.name = spec.name;
  info.dtypes = spec.dtypes;
  info.tolerance = spec.tolerance;
  info.samples = [spec](DType d, std::mt19937_64& rng) {
    std::vector<Sample> out;
    const Range ra = spec.range_a(d), rb = spec.range_b(d);
    const Ref2 ref = spec.ref(d);
    auto add = [&](Array a, Array b, std::string desc) {
      Sample s;
      s.description = spec.tag.empty() ? std::move(desc) : StrCat(spec.tag, " ", desc);
      s.args = {std::move(a), std::move(b)};
      s.op = [op = spec.op](const std::vector<Array>& x) { return std::vector<Array>{op(x[0], x[1])}; };
      s.reference = [ref](const std::vector<RefArray>& x) {
        RefArray r{x[0].shape, std::vector<double>(x[0].data.size())};
        for (size_t i = 0; i < r.data.size(); ++i) r.data[i] = ref(x[0].data[i], x[1].data[i]);
        return std::vector<RefArray>{r};
      };
      s.out_dtypes = {spec.out_dtype(d)};
      out.push_back(std::move(s));
    };
    for (const Shape& shape : ElementwiseShapes()) {
      Array a = RandomArray(rng, shape, d, ra.lo, ra.hi), b = RandomArray(rng, shape, d, rb.lo, rb.hi);
      add(a, b, ShapedArray{shape, d}.str());
      if (shape.size() >= 2) {
        add(NonContiguousCopy(a), NonContiguousCopy(b), StrCat(ShapedArray{shape, d}.str(), " (transposed)"));
      }
    }
    if (spec.specials && IsFloating(d)) {
      const std::vector<double> sp = FloatSpecials();
      std::vector<double> xs, ys;
      for (double x : sp) {
        for (double y : sp) {
          xs.push_back(x);
          ys.push_back(y);
        }
      }
      add(FromDoubles(xs, d), FromDoubles(ys, d), StrCat(dtype_name(d), " special value pairs"));
      out.back().derivatives_defined = false;
    }
    return out;
  };
  return info;
}

// One record with the samples of both (same name and dtypes as a): a primitive's variants
// (parameters, input ranges) stay under its own name.
inline OpInfo Merge(OpInfo a, const OpInfo& b) {
  auto sa = a.samples, sb = b.samples;
  a.samples = [sa, sb](DType d, std::mt19937_64& rng) {
    std::vector<Sample> v = sa(d, rng);
    for (Sample& s : sb(d, rng)) v.push_back(std::move(s));
    return v;
  };
  return a;
}

}  // namespace jx::opinfo::elementwise

// opinfo records for the conversion family. The dtype axis is the source dtype; each sample
// converts to one destination dtype.
#include <cmath>
#include <cstring>
#include <limits>

#include "elementwise_util.h"
#include "opinfo.h"

namespace jx::opinfo::convert_opinfo {
namespace {

using elementwise::FromDoubles;
using elementwise::Wrap;

// Source values in range for the source dtype, wide enough to saturate small integer targets.
elementwise::Range SourceRange(DType d) {
  switch (d) {
    case DType::kInt8: return {-128, 127};
    case DType::kUInt8: return {0, 255};
    case DType::kInt16: return {-32768, 32767};
    case DType::kUInt16: return {0, 65535};
    case DType::kUInt32: case DType::kUInt64: return {0, 70000};
    case DType::kFloat16: return {-65000, 65000};
    default: return {-70000, 70000};
  }
}

// XLA's convert_element_type on one value (x already exact in the source dtype).
double RefConvert(double x, DType to) {
  if (IsBool(to)) return x != 0 ? 1.0 : 0.0;
  if (IsFloating(to)) return x;  // the harness rounds the reference to the output dtype
  if (std::isnan(x)) return 0;
  const double lo = IsSignedInt(to) ? -std::ldexp(1.0, static_cast<int>(ItemSize(to) * 8 - 1)) : 0.0;
  const double hi = IsSignedInt(to) ? std::ldexp(1.0, static_cast<int>(ItemSize(to) * 8 - 1)) - 1
                                    : std::ldexp(1.0, static_cast<int>(ItemSize(to) * 8)) - 1;
  return std::min(std::max(std::trunc(x), lo), hi);
}

JX_OPINFO(convert_element_type) {
  OpInfo info;
  info.name = "convert_element_type";
  info.dtypes = kAllDTypes;
  info.tolerance = DefaultTolerance;
  info.samples = [](DType from, std::mt19937_64& rng) {
    std::vector<Sample> out;
    const elementwise::Range r = SourceRange(from);
    for (DType to : kAllDTypes) {
      auto reference = [from, to](const std::vector<RefArray>& a) {
        RefArray res{a[0].shape, std::vector<double>(a[0].data.size())};
        for (size_t i = 0; i < res.data.size(); ++i) {
          const double x = a[0].data[i];
          // Integer -> integer wraps; float -> integer truncates and saturates.
          res.data[i] = IsInteger(to) && (IsInteger(from) || IsBool(from)) ? Wrap(to, x) : RefConvert(x, to);
        }
        return std::vector<RefArray>{res};
      };
      auto op = [to](const std::vector<Array>& a) { return std::vector<Array>{lax::convert_element_type(a[0], to)}; };
      // Rounding into a narrower float moves outputs by far more than finite differences (and
      // the dot-product identity, at 1e-9) can absorb: no derivative checks there.
      const bool rounds = IsFloating(from) && IsFloating(to) && from != to && ItemSize(to) <= ItemSize(from);
      for (const Shape& s : ElementwiseShapes()) {
        Sample sample;
        sample.description = StrCat(ShapedArray{s, from}.str(), " -> ", dtype_name(to));
        sample.args = {RandomArray(rng, s, from, r.lo, r.hi)};
        sample.op = op;
        sample.reference = reference;
        sample.out_dtypes = {to};
        sample.derivatives_defined = !rounds;
        out.push_back(std::move(sample));
      }
      if (IsFloating(from)) {
        std::vector<double> v = elementwise::FloatSpecials();
        for (double extra : {1e10, -1e10, 2.5, -2.5, 255.9, 256.0, -128.9, -129.0, 65504.0}) v.push_back(extra);
        Sample sample;
        sample.description = StrCat(dtype_name(from), " special values -> ", dtype_name(to));
        sample.args = {FromDoubles(v, from)};
        sample.op = op;
        sample.reference = reference;
        sample.out_dtypes = {to};
        sample.derivatives_defined = false;
        out.push_back(std::move(sample));
      }
    }
    if (IsFloating(from)) {
      // To the same dtype but weakly typed: the values pass through, yet the primitive is
      // bound (unlike a full no-op), so its jvp and transpose (back to a strong type) run.
      Sample sample;
      sample.description = StrCat(ShapedArray{{4, 3}, from}.str(), " -> weak ", dtype_name(from));
      sample.args = {RandomArray(rng, {4, 3}, from, -3, 3)};
      sample.op = [from](const std::vector<Array>& a) {
        return std::vector<Array>{lax::convert_element_type(a[0], from, /*weak_type=*/true)};
      };
      sample.reference = [](const std::vector<RefArray>& a) { return a; };
      sample.out_dtypes = {from};
      out.push_back(std::move(sample));
    }
    return out;
  };
  return info;
}

// bitcast_convert_type: same-width pairs, narrowing (adds a trailing dim) and widening
// (consumes it). The reference reinterprets the bytes of the source values.
JX_OPINFO(bitcast_convert_type) {
  OpInfo info;
  info.name = "bitcast_convert_type";
  info.dtypes = {int8, uint8, int16, uint16, float16, bfloat16, int32, uint32, float32, int64, uint64, float64};
  info.tolerance = [](DType) { return Tolerance{0, 0}; };
  info.samples = [dtypes = info.dtypes](DType from, std::mt19937_64& rng) {
    std::vector<Sample> out;
    for (DType to : dtypes) {
      const int64_t fs = ItemSize(from), ts = ItemSize(to);
      auto reference = [from, to, fs, ts](const std::vector<RefArray>& a) {
        std::vector<char> bytes(a[0].data.size() * static_cast<size_t>(fs));
        for (size_t i = 0; i < a[0].data.size(); ++i) StoreFromDouble(from, bytes.data(), static_cast<int64_t>(i), a[0].data[i]);
        Shape shape = a[0].shape;
        if (fs > ts) shape.push_back(fs / ts);
        if (fs < ts) shape.pop_back();
        RefArray res{shape, std::vector<double>(bytes.size() / static_cast<size_t>(ts))};
        for (size_t i = 0; i < res.data.size(); ++i) res.data[i] = LoadAsDouble(to, bytes.data(), static_cast<int64_t>(i));
        return std::vector<RefArray>{res};
      };
      auto op = [to](const std::vector<Array>& a) { return std::vector<Array>{lax::bitcast_convert_type(a[0], to)}; };
      std::vector<Shape> shapes = {{}, {0}, {5}, {3, 4}, {2, 3, 5}, {70000}};
      if (fs < ts) {
        for (Shape& s : shapes) s.push_back(ts / fs);  // widening needs the ratio as last dim
      }
      for (const Shape& s : shapes) {
        Sample sample;
        sample.description = StrCat(ShapedArray{s, from}.str(), " -> ", dtype_name(to));
        // Integer-valued, finite samples: every bit pattern survives the trip through double.
        sample.args = {RandomArray(rng, s, from, IsUnsignedInt(from) ? 0 : -100, 100)};
        sample.op = op;
        sample.reference = reference;
        sample.out_dtypes = {to};
        // Reinterpreting bits as another float type has no meaningful derivative (the jvp
        // rejects it); the same type is the identity, whose derivative is checked.
        sample.derivatives_defined = !(IsFloating(from) && IsFloating(to) && from != to);
        out.push_back(std::move(sample));
      }
    }
    return out;
  };
  return info;
}

// Reference ReducePrecision of x (a value of float dtype d), from the value: round the
// significand to m bits (nearest even; source subnormals round on the source's fixed grid, as
// XLA rounds raw mantissa bits), overflow to +-inf, and when the exponent narrows, flush
// values below the reduced normal range to +-0. NaN stays NaN (+inf with no mantissa bits).
double RefReducePrecision(double x, DType d, int e, int m) {
  const int src_e = d == float16 ? 5 : d == float64 ? 11 : 8;
  const int src_m = d == float16 ? 10 : d == bfloat16 ? 7 : d == float32 ? 23 : 52;
  e = std::min(e, src_e);
  m = std::min(m, src_m);
  const double inf = std::numeric_limits<double>::infinity();
  if (std::isnan(x)) return m > 0 ? x : inf;
  if (std::isinf(x) || x == 0) return x;
  const double a = std::fabs(x);
  const int src_emax = (1 << (src_e - 1)) - 1, src_emin = 1 - src_emax;
  double r;
  if (a < std::ldexp(1.0, src_emin)) {
    const double grid = std::ldexp(1.0, src_emin - m);
    r = std::nearbyint(a / grid) * grid;
  } else {
    int exp;
    const double frac = std::frexp(a, &exp);  // a = frac * 2^exp, frac in [0.5, 1)
    const double scaled = std::ldexp(frac, m + 1);
    if (m == 0 && scaled == 1.5) {
      // With no mantissa bits the encoding's last bit is the exponent's: ties go to the
      // candidate with an even biased exponent.
      const bool lower_even = ((exp - 1 + src_emax) % 2) == 0;
      r = std::ldexp(lower_even ? 1.0 : 2.0, exp - 1);
    } else {
      r = std::ldexp(std::nearbyint(scaled), exp - m - 1);
    }
  }
  if (r >= std::ldexp(1.0, src_emax + 1)) r = inf;
  if (e < src_e) {
    const int emax = (1 << (e - 1)) - 1;
    if (r >= std::ldexp(1.0, emax + 1)) r = inf;
    if (r < std::ldexp(1.0, 1 - emax)) r = 0;
  }
  return std::copysign(r, x);
}

JX_OPINFO(reduce_precision) {
  OpInfo info;
  info.name = "reduce_precision";
  info.dtypes = kFloatDTypes;
  info.tolerance = [](DType) { return Tolerance{0, 0}; };
  info.samples = [](DType d, std::mt19937_64& rng) {
    std::vector<Sample> out;
    const std::vector<std::pair<int, int>> formats = {{8, 7}, {5, 10}, {4, 3}, {5, 2}, {2, 1}, {8, 0}, {11, 52}, {3, 23}};
    for (auto [e, m] : formats) {
      // The jvp rounds the tangent like the primal (JAX's convention: reduce_precision is
      // treated as linear), while the op itself is piecewise constant wherever it rounds: finite
      // differences check only the formats that keep every value of d.
      const bool rounds = e < (d == float16 ? 5 : d == float64 ? 11 : 8) ||
                          m < (d == float16 ? 10 : d == bfloat16 ? 7 : d == float32 ? 23 : 52);
      auto reference = [e, m, d](const std::vector<RefArray>& a) {
        RefArray res{a[0].shape, a[0].data};
        for (double& v : res.data) v = RefReducePrecision(v, d, e, m);
        return std::vector<RefArray>{res};
      };
      auto op = [e, m](const std::vector<Array>& a) { return std::vector<Array>{lax::reduce_precision(a[0], e, m)}; };
      for (const Shape& s : ElementwiseShapes()) {
        Sample sample;
        sample.description = StrCat(ShapedArray{s, d}.str(), " exponent_bits=", e, " mantissa_bits=", m);
        sample.args = {RandomArray(rng, s, d, -300, 300)};
        sample.op = op;
        sample.reference = reference;
        sample.out_dtypes = {d};
        sample.derivatives_defined = !rounds;
        out.push_back(std::move(sample));
      }
      std::vector<double> v = elementwise::FloatSpecials();
      for (double extra : {1e-5, 3e-5, 6.1e-5, 65504.0, 65520.0, 1e5, 0.1, 1.0 / 3}) v.push_back(extra);
      Sample sample;
      sample.description = StrCat(dtype_name(d), " special values exponent_bits=", e, " mantissa_bits=", m);
      sample.args = {FromDoubles(v, d)};
      sample.op = op;
      sample.reference = reference;
      sample.out_dtypes = {d};
      sample.derivatives_defined = false;
      out.push_back(std::move(sample));
    }
    return out;
  };
  return info;
}

}  // namespace
}  // namespace jx::opinfo::convert_opinfo

// opinfo records for the binary elementwise family, comparisons, select_n and clamp. Integer
// references implement XLA's semantics (wrapping, x / 0 = -1, x % 0 = x, saturating shifts)
// in plain double arithmetic, exact for the small sample values.
#include <cmath>
#include <algorithm>
#include <cstring>
#include <limits>

#include "elementwise_util.h"
#include "opinfo.h"

namespace jx::opinfo::binary_opinfo {
namespace {

using elementwise::BinarySpec;
using elementwise::DefaultRange;
using elementwise::Range;
using elementwise::Ref2;
using elementwise::Wrap;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

const std::vector<DType> kNumericDTypes = Concat(kIntDTypes, kFloatDTypes);

double Bits(DType d) { return static_cast<double>(ItemSize(d) * 8); }

OpInfo Arith(std::string name, std::function<Array(const Array&, const Array&)> op,
             std::function<double(double, double)> f, std::vector<DType> dtypes = kNumericDTypes) {
  return elementwise::Binary({.name = std::move(name), .op = std::move(op), .ref = [f](DType d) -> Ref2 {
    return [f, d](double x, double y) { return Wrap(d, f(x, y)); };
  }, .dtypes = std::move(dtypes)});
}

OpInfo Compare(std::string name, std::function<Array(const Array&, const Array&)> op, std::function<bool(double, double)> f) {
  return elementwise::Binary({.name = std::move(name), .op = std::move(op), .ref = [f](DType) -> Ref2 {
    return [f](double x, double y) { return f(x, y) ? 1.0 : 0.0; };
  }, .dtypes = kAllDTypes, .out_dtype = [](DType) { return bool_; }});
}

// Integer bitwise ops through int64 (two's complement matches every narrower signed type).
OpInfo Bitwise(std::string name, std::function<Array(const Array&, const Array&)> op,
               std::function<int64_t(int64_t, int64_t)> f) {
  return elementwise::Binary({.name = std::move(name), .op = std::move(op), .ref = [f](DType d) -> Ref2 {
    return [f, d](double x, double y) {
      return Wrap(d, static_cast<double>(f(static_cast<int64_t>(x), static_cast<int64_t>(y))));
    };
  }, .dtypes = Concat({bool_}, kIntDTypes)});
}

// Shift amounts from -2 (signed types: read as huge unsigned) to past the bit width.
Range ShiftRange(DType d) { return Range{IsSignedInt(d) ? -2.0 : 0.0, Bits(d) + 3}; }

// Shift references in 64-bit integer arithmetic on the dtype's bits (exact for every width).
uint64_t ToBits(double x, DType d) {
  const uint64_t raw = x < 0 ? static_cast<uint64_t>(static_cast<int64_t>(x)) : static_cast<uint64_t>(x);
  return ItemSize(d) == 8 ? raw : raw & ((uint64_t{1} << (ItemSize(d) * 8)) - 1);
}
double FromBits(uint64_t b, DType d) {
  const int bits = static_cast<int>(ItemSize(d) * 8);
  if (IsUnsignedInt(d)) return static_cast<double>(b);
  const uint64_t sign = uint64_t{1} << (bits - 1);
  if (bits < 64 && (b & sign)) b |= ~((uint64_t{1} << bits) - 1);  // sign-extend
  return static_cast<double>(static_cast<int64_t>(b));
}
enum class Shift { kLeft, kRightLogical, kRightArithmetic };
double RefShift(Shift kind, DType d, double x, double y) {
  const uint64_t bits = ItemSize(d) * 8;
  const uint64_t xb = ToBits(x, d), s = ToBits(y, d);  // the amount is read as unsigned
  const bool negative = (xb >> (bits - 1)) & 1;
  uint64_t r = 0;  // every Shift sets it; GCC cannot tell
  switch (kind) {
    case Shift::kLeft: r = s >= bits ? 0 : xb << s; break;
    case Shift::kRightLogical: r = s >= bits ? 0 : xb >> s; break;
    case Shift::kRightArithmetic:
      r = s >= bits ? (negative ? ~uint64_t{0} : 0) : (xb >> s) | (negative && s > 0 ? ~uint64_t{0} << (bits - s) : 0);
      break;
  }
  return FromBits(bits == 64 ? r : r & ((uint64_t{1} << bits) - 1), d);
}

double RefMax(double x, double y) { return std::isnan(x) || std::isnan(y) ? kNaN : std::max(x, y); }
double RefMin(double x, double y) { return std::isnan(x) || std::isnan(y) ? kNaN : std::min(x, y); }

JX_OPINFO(add) { return Arith("add", lax::add, [](double x, double y) { return x + y; }); }
JX_OPINFO(sub) { return Arith("sub", lax::sub, [](double x, double y) { return x - y; }); }
JX_OPINFO(mul) { return Arith("mul", lax::mul, [](double x, double y) { return x * y; }); }
JX_OPINFO(div) {
  return elementwise::Binary({.name = "div", .op = lax::div, .ref = [](DType d) -> Ref2 {
    if (IsFloating(d)) return [](double x, double y) { return x / y; };
    return [d](double x, double y) { return Wrap(d, y == 0 ? -1.0 : std::trunc(x / y)); };
  }, .dtypes = kNumericDTypes});
}
JX_OPINFO(rem) {
  return elementwise::Binary({.name = "rem", .op = lax::rem, .ref = [](DType d) -> Ref2 {
    if (IsFloating(d)) return [](double x, double y) { return std::fmod(x, y); };
    return [](double x, double y) { return y == 0 ? x : std::fmod(x, y); };
  }, .dtypes = kNumericDTypes});
}
JX_OPINFO(pow) {
  return elementwise::Binary({.name = "pow", .op = lax::pow, .ref = [](DType d) -> Ref2 {
    if (IsFloating(d)) return [](double x, double y) { return std::pow(x, y); };
    // XLA: a negative exponent gives 1 for base 1 and 0 otherwise.
    return [d](double x, double y) { return y < 0 ? (x == 1 ? 1.0 : 0.0) : Wrap(d, std::pow(x, y)); };
  // Float bases are positive: x^y is NaN for x < 0 (non-integer y) and has no derivative
  // there (the special values sample still covers negative and zero bases).
  }, .dtypes = kNumericDTypes, .range_a = [](DType d) {
    return IsFloating(d) ? Range{0.1, 3} : DefaultRange(d);
  }, .range_b = [](DType d) {
    return IsFloating(d) ? Range{-3, 3} : DefaultRange(d);
  }});
}
JX_OPINFO(max) {
  return elementwise::Binary({.name = "max", .op = lax::max, .ref = [](DType) -> Ref2 { return RefMax; },
                              .dtypes = kAllDTypes});
}
JX_OPINFO(min) {
  return elementwise::Binary({.name = "min", .op = lax::min, .ref = [](DType) -> Ref2 { return RefMin; },
                              .dtypes = kAllDTypes});
}
JX_OPINFO(atan2) {
  return elementwise::Binary({.name = "atan2", .op = lax::atan2, .ref = [](DType) -> Ref2 {
    return [](double y, double x) { return std::atan2(y, x); };
  }, .dtypes = kFloatDTypes});
}
JX_OPINFO(and) { return Bitwise("and", lax::bitwise_and, [](int64_t x, int64_t y) { return x & y; }); }
JX_OPINFO(or) { return Bitwise("or", lax::bitwise_or, [](int64_t x, int64_t y) { return x | y; }); }
JX_OPINFO(xor) { return Bitwise("xor", lax::bitwise_xor, [](int64_t x, int64_t y) { return x ^ y; }); }

JX_OPINFO(shift_left) {
  return elementwise::Binary({.name = "shift_left", .op = lax::shift_left, .ref = [](DType d) -> Ref2 {
    return [d](double x, double y) { return RefShift(Shift::kLeft, d, x, y); };
  }, .dtypes = kIntDTypes, .range_b = ShiftRange});
}
JX_OPINFO(shift_right_logical) {
  return elementwise::Binary({.name = "shift_right_logical", .op = lax::shift_right_logical, .ref = [](DType d) -> Ref2 {
    return [d](double x, double y) { return RefShift(Shift::kRightLogical, d, x, y); };
  }, .dtypes = kIntDTypes, .range_b = ShiftRange});
}
JX_OPINFO(shift_right_arithmetic) {
  // Unsigned inputs span their whole range: the top bit is shifted as a sign bit.
  return elementwise::Binary({.name = "shift_right_arithmetic", .op = lax::shift_right_arithmetic,
                              .ref = [](DType d) -> Ref2 {
    return [d](double x, double y) { return RefShift(Shift::kRightArithmetic, d, x, y); };
  }, .dtypes = kIntDTypes, .range_a = [](DType d) {
    return IsUnsignedInt(d) ? Range{0, 0.99 * std::ldexp(1.0, static_cast<int>(Bits(d)))} : Range{-100, 100};
  }, .range_b = ShiftRange});
}

// Reference nextafter for 16-bit floats: every finite and infinite value of the dtype, sorted
// (decoded through jx's float16_t / bfloat16_t, independently of the kernel), then the
// neighbour of x in y's direction.
const std::vector<double>& SortedValues(DType d) {
  static const auto make = [](DType dt) {
    std::vector<double> v;
    for (uint32_t bits = 0; bits < 0x10000; ++bits) {
      double x;
      if (dt == float16) {
        float16_t h;
        h.bits = static_cast<uint16_t>(bits);
        x = static_cast<float>(h);
      } else {
        bfloat16_t h;
        h.bits = static_cast<uint16_t>(bits);
        x = static_cast<float>(h);
      }
      if (!std::isnan(x)) v.push_back(x);
    }
    std::sort(v.begin(), v.end());
    return v;
  };
  static const std::vector<double> f16 = make(float16), bf16 = make(bfloat16);
  return d == float16 ? f16 : bf16;
}

double RefNextAfter(DType d, double x, double y) {
  if (std::isnan(x) || std::isnan(y)) return kNaN;
  if (x == y) return y;
  if (d == float64) return std::nextafter(x, y);
  if (d == float32) return std::nextafter(static_cast<float>(x), static_cast<float>(y));
  const std::vector<double>& v = SortedValues(d);
  if (y > x) return *std::upper_bound(v.begin(), v.end(), x);
  return *(std::lower_bound(v.begin(), v.end(), x) - 1);
}

JX_OPINFO(nextafter) {
  return elementwise::Binary({.name = "nextafter", .op = lax::nextafter, .ref = [](DType d) -> Ref2 {
    return [d](double x, double y) { return RefNextAfter(d, x, y); };
  }, .dtypes = kFloatDTypes, .tolerance = [](DType) { return Tolerance{0, 0}; }});
}

JX_OPINFO(eq) { return Compare("eq", lax::eq, [](double x, double y) { return x == y; }); }
JX_OPINFO(ne) { return Compare("ne", lax::ne, [](double x, double y) { return x != y; }); }
JX_OPINFO(lt) { return Compare("lt", lax::lt, [](double x, double y) { return x < y; }); }
JX_OPINFO(le) { return Compare("le", lax::le, [](double x, double y) { return x <= y; }); }
JX_OPINFO(gt) { return Compare("gt", lax::gt, [](double x, double y) { return x > y; }); }
JX_OPINFO(ge) { return Compare("ge", lax::ge, [](double x, double y) { return x >= y; }); }

// select_n: bool `which` with 2 cases, int32 `which` with 3 cases (out-of-range values clamp),
// and a scalar `which`.
JX_OPINFO(select_n) {
  OpInfo info;
  info.name = "select_n";
  info.dtypes = kAllDTypes;
  info.tolerance = [](DType) { return Tolerance{0, 0}; };
  info.samples = [](DType d, std::mt19937_64& rng) {
    std::vector<Sample> out;
    auto reference = [](const std::vector<RefArray>& a) {
      RefArray r{a[1].shape, std::vector<double>(a[1].data.size())};
      const int64_t cases = static_cast<int64_t>(a.size()) - 1;
      for (size_t i = 0; i < r.data.size(); ++i) {
        const double w = a[0].data.size() == 1 && a[0].shape.empty() ? a[0].data[0] : a[0].data[i];
        const int64_t k = std::clamp<int64_t>(static_cast<int64_t>(w), 0, cases - 1);
        r.data[i] = a[static_cast<size_t>(1 + k)].data[i];
      }
      return std::vector<RefArray>{r};
    };
    auto op = [](const std::vector<Array>& a) {
      return std::vector<Array>{lax::select_n(a[0], std::vector<Array>(a.begin() + 1, a.end()))};
    };
    for (const Shape& s : ElementwiseShapes()) {
      Sample two;
      two.description = StrCat(ShapedArray{s, d}.str(), " bool which, 2 cases");
      two.args = {RandomArray(rng, s, bool_), RandomArray(rng, s, d, 0, 6), RandomArray(rng, s, d, 0, 6)};
      two.op = op;
      two.reference = reference;
      two.out_dtypes = {d};
      out.push_back(two);
      Sample three;
      three.description = StrCat(ShapedArray{s, d}.str(), " int32 which (-1..3), 3 cases");
      three.args = {RandomArray(rng, s, int32, -1, 3), RandomArray(rng, s, d, 0, 6), RandomArray(rng, s, d, 0, 6),
                    RandomArray(rng, s, d, 0, 6)};
      three.op = op;
      three.reference = reference;
      three.out_dtypes = {d};
      out.push_back(three);
      Sample scalar;
      scalar.description = StrCat(ShapedArray{s, d}.str(), " scalar which");
      scalar.args = {Array::Scalar(1, int32), RandomArray(rng, s, d, 0, 6), RandomArray(rng, s, d, 0, 6)};
      scalar.op = op;
      scalar.reference = reference;
      scalar.out_dtypes = {d};
      out.push_back(scalar);
    }
    return out;
  };
  return info;
}

// clamp(lo, x, hi) = min(hi, max(lo, x)) with NaN propagation; lo/hi as arrays or scalars.
JX_OPINFO(clamp) {
  OpInfo info;
  info.name = "clamp";
  info.dtypes = kAllDTypes;
  info.tolerance = DefaultTolerance;
  info.samples = [](DType d, std::mt19937_64& rng) {
    std::vector<Sample> out;
    const Range r = DefaultRange(d);
    auto reference = [](const std::vector<RefArray>& a) {
      RefArray res{a[1].shape, std::vector<double>(a[1].data.size())};
      for (size_t i = 0; i < res.data.size(); ++i) {
        const double lo = a[0].shape.empty() ? a[0].data[0] : a[0].data[i];
        const double hi = a[2].shape.empty() ? a[2].data[0] : a[2].data[i];
        res.data[i] = RefMin(hi, RefMax(lo, a[1].data[i]));
      }
      return std::vector<RefArray>{res};
    };
    auto op = [](const std::vector<Array>& a) { return std::vector<Array>{lax::clamp(a[0], a[1], a[2])}; };
    for (const Shape& s : ElementwiseShapes()) {
      Sample arrays;
      arrays.description = StrCat(ShapedArray{s, d}.str(), " array bounds");
      arrays.args = {RandomArray(rng, s, d, r.lo, r.hi), RandomArray(rng, s, d, r.lo, r.hi),
                     RandomArray(rng, s, d, r.lo, r.hi)};
      arrays.op = op;
      arrays.reference = reference;
      arrays.out_dtypes = {d};
      out.push_back(arrays);
      Sample scalars;
      scalars.description = StrCat(ShapedArray{s, d}.str(), " scalar bounds");
      scalars.args = {RandomArray(rng, {}, d, r.lo, (r.lo + r.hi) / 2), RandomArray(rng, s, d, r.lo, r.hi),
                      RandomArray(rng, {}, d, (r.lo + r.hi) / 2, r.hi)};
      scalars.op = op;
      scalars.reference = reference;
      scalars.out_dtypes = {d};
      out.push_back(scalars);
    }
    if (IsFloating(d)) {
      Sample special;
      special.description = StrCat(dtype_name(d), " NaN operand and bounds");
      special.args = {elementwise::FromDoubles({0, kNaN, 0, -1}, d), elementwise::FromDoubles({kNaN, 1, 2, -0.0}, d),
                      elementwise::FromDoubles({1, 1, kNaN, 1}, d)};
      special.derivatives_defined = false;
      special.op = op;
      special.reference = reference;
      special.out_dtypes = {d};
      out.push_back(special);
    }
    return out;
  };
  return info;
}

}  // namespace
}  // namespace jx::opinfo::binary_opinfo

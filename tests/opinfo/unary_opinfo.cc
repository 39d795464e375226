// opinfo records for the unary elementwise family: eager vs float64 references written with
// plain scalar math (integer results wrapped to the dtype), on random samples of every
// elementwise shape plus the float special values.
#include <cmath>
#include <limits>

#include "elementwise_util.h"
#include "opinfo.h"

namespace jx::opinfo::unary_opinfo {
namespace {

using elementwise::Range;
using elementwise::Ref1;
using elementwise::UnarySpec;
using elementwise::Wrap;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

const std::vector<DType> kNumericDTypes = Concat(kIntDTypes, kFloatDTypes);
const std::vector<DType> kSignedNumericDTypes = Concat(kSignedIntDTypes, kFloatDTypes);

// A record whose reference is the same scalar function for every dtype.
OpInfo Float1(std::string name, std::function<Array(const Array&)> op, Ref1 ref, Range range = {-3, 3},
              std::string tag = "") {
  return elementwise::Unary({.name = std::move(name),
                             .tag = std::move(tag),
                             .op = std::move(op),
                             .ref = [ref](DType) { return ref; },
                             .dtypes = kFloatDTypes,
                             .range = [range](DType) { return range; }});
}

// Reference digamma: recurrence up to x >= 10, then the asymptotic series; reflection below 0.
double RefDigamma(double x) {
  if (std::isnan(x) || x == -kInf) return kNaN;
  if (x <= 0 && x == std::floor(x)) return kNaN;
  // Reflection; tan(pi x) from the exact offset to the nearest integer keeps it accurate
  // near the poles.
  if (x < 0) return RefDigamma(1 - x) - M_PI / std::tan(M_PI * (x - std::nearbyint(x)));
  double acc = 0;
  while (x < 10) {
    acc -= 1 / x;
    x += 1;
  }
  const double z = 1 / (x * x);
  const double series = z * (1.0 / 12 - z * (1.0 / 120 - z * (1.0 / 252 - z * (1.0 / 240 - z * (1.0 / 132)))));
  return acc + std::log(x) - 0.5 / x - series;
}

// Reference erf_inv: bisection on erf (|x| < 0.5) or erfc (|x| >= 0.5, where 1 - |x| is exact).
double RefErfInv(double x) {
  const double a = std::fabs(x);
  if (std::isnan(x) || a > 1) return kNaN;
  if (a == 1) return std::copysign(kInf, x);
  double lo = 0, hi = 7;
  for (int i = 0; i < 100; ++i) {
    const double mid = 0.5 * (lo + hi);
    const bool below = a < 0.5 ? std::erf(mid) < a : std::erfc(mid) > 1 - a;
    (below ? lo : hi) = mid;
  }
  return std::copysign(0.5 * (lo + hi), x);
}

double RefSign(double x) { return std::isnan(x) ? x : (x > 0 ? 1.0 : (x < 0 ? -1.0 : x)); }

JX_OPINFO(neg) {
  return elementwise::Unary({.name = "neg", .op = lax::neg, .ref = [](DType d) -> Ref1 {
    return [d](double x) { return Wrap(d, -x); };
  }, .dtypes = kNumericDTypes});
}
JX_OPINFO(sign) {
  return elementwise::Unary({.name = "sign", .op = lax::sign, .ref = [](DType) -> Ref1 { return RefSign; },
                             .dtypes = kNumericDTypes});
}
JX_OPINFO(abs) {
  return elementwise::Unary({.name = "abs", .op = lax::abs, .ref = [](DType) -> Ref1 {
    return [](double x) { return std::fabs(x); };
  }, .dtypes = kSignedNumericDTypes});
}
JX_OPINFO(square) {
  return elementwise::Unary({.name = "square", .op = lax::square, .ref = [](DType d) -> Ref1 {
    return [d](double x) { return Wrap(d, x * x); };
  }, .dtypes = kNumericDTypes});
}
JX_OPINFO(integer_pow) {
  // x^5 wraps for int8 and uint8 inputs up to 6: the reference wraps too.
  OpInfo pos = elementwise::Unary({.name = "integer_pow", .tag = "y=5",
                                   .op = [](const Array& x) { return lax::integer_pow(x, 5); },
                                   .ref = [](DType d) -> Ref1 { return [d](double x) { return Wrap(d, std::pow(x, 5)); }; },
                                   .dtypes = kNumericDTypes});
  OpInfo zero = elementwise::Unary({.name = "integer_pow", .tag = "y=0",
                                    .op = [](const Array& x) { return lax::integer_pow(x, 0); },
                                    .ref = [](DType) -> Ref1 { return [](double) { return 1.0; }; },
                                    .dtypes = kNumericDTypes});
  OpInfo neg = Float1("integer_pow", [](const Array& x) { return lax::integer_pow(x, -3); },
                      [](double x) { return 1.0 / (x * x * x); }, {-3, 3}, "y=-3");
  // Negative exponents are float-only: only float dtypes draw those samples.
  auto neg_samples = neg.samples;
  neg.samples = [neg_samples](DType d, std::mt19937_64& rng) {
    return IsFloating(d) ? neg_samples(d, rng) : std::vector<Sample>{};
  };
  return elementwise::Merge(elementwise::Merge(pos, zero), neg);
}
JX_OPINFO(reciprocal) { return Float1("reciprocal", lax::reciprocal, [](double x) { return 1.0 / x; }); }
JX_OPINFO(not) {
  return elementwise::Unary({.name = "not", .op = lax::bitwise_not, .ref = [](DType d) -> Ref1 {
    if (IsBool(d)) return [](double x) { return x != 0 ? 0.0 : 1.0; };
    return [d](double x) { return Wrap(d, -x - 1); };  // ~x in two's complement
  }, .dtypes = Concat({bool_}, kIntDTypes)});
}

JX_OPINFO(floor) { return Float1("floor", lax::floor, [](double x) { return std::floor(x); }); }
JX_OPINFO(ceil) { return Float1("ceil", lax::ceil, [](double x) { return std::ceil(x); }); }
JX_OPINFO(round) {
  // Half-integers are common in f16/bf16 samples: both tie rules get exercised.
  return elementwise::Merge(
      Float1("round", [](const Array& x) { return lax::round(x); }, [](double x) { return std::round(x); }, {-3, 3},
             "rounding_method=0"),
      Float1("round", [](const Array& x) { return lax::round(x, 1); }, [](double x) { return std::nearbyint(x); },
             {-3, 3}, "rounding_method=1"));
}
JX_OPINFO(is_finite) {
  return elementwise::Unary({.name = "is_finite", .op = lax::is_finite, .ref = [](DType) -> Ref1 {
    return [](double x) { return std::isfinite(x) ? 1.0 : 0.0; };
  }, .dtypes = kFloatDTypes, .out_dtype = [](DType) { return bool_; }});
}

JX_OPINFO(exp) {
  // Also near the f32 overflow threshold (88.72), where Eigen's packet exp alone overflows early.
  return elementwise::Merge(Float1("exp", lax::exp, [](double x) { return std::exp(x); }),
                            Float1("exp", lax::exp, [](double x) { return std::exp(x); }, {80, 88.7}, "large"));
}
JX_OPINFO(exp2) { return Float1("exp2", lax::exp2, [](double x) { return std::exp2(x); }, {-20, 20}); }
JX_OPINFO(log) { return Float1("log", lax::log, [](double x) { return std::log(x); }, {0.01, 10}); }
JX_OPINFO(log1p) { return Float1("log1p", lax::log1p, [](double x) { return std::log1p(x); }, {-0.9, 3}); }
JX_OPINFO(expm1) { return Float1("expm1", lax::expm1, [](double x) { return std::expm1(x); }); }
JX_OPINFO(tanh) { return Float1("tanh", lax::tanh, [](double x) { return std::tanh(x); }); }
JX_OPINFO(logistic) {
  return Float1("logistic", lax::logistic, [](double x) { return 1.0 / (1.0 + std::exp(-x)); }, {-12, 12});
}
JX_OPINFO(sin) { return Float1("sin", lax::sin, [](double x) { return std::sin(x); }); }
JX_OPINFO(cos) { return Float1("cos", lax::cos, [](double x) { return std::cos(x); }); }
JX_OPINFO(tan) { return Float1("tan", lax::tan, [](double x) { return std::tan(x); }, {-1.5, 1.5}); }
JX_OPINFO(asin) { return Float1("asin", lax::asin, [](double x) { return std::asin(x); }, {-1, 1}); }
JX_OPINFO(acos) { return Float1("acos", lax::acos, [](double x) { return std::acos(x); }, {-1, 1}); }
JX_OPINFO(atan) { return Float1("atan", lax::atan, [](double x) { return std::atan(x); }); }
JX_OPINFO(sinh) { return Float1("sinh", lax::sinh, [](double x) { return std::sinh(x); }); }
JX_OPINFO(cosh) { return Float1("cosh", lax::cosh, [](double x) { return std::cosh(x); }); }
JX_OPINFO(asinh) { return Float1("asinh", lax::asinh, [](double x) { return std::asinh(x); }); }
JX_OPINFO(acosh) { return Float1("acosh", lax::acosh, [](double x) { return std::acosh(x); }, {1, 5}); }
JX_OPINFO(atanh) { return Float1("atanh", lax::atanh, [](double x) { return std::atanh(x); }, {-0.99, 0.99}); }
JX_OPINFO(sqrt) { return Float1("sqrt", lax::sqrt, [](double x) { return std::sqrt(x); }, {0, 10}); }
JX_OPINFO(rsqrt) { return Float1("rsqrt", lax::rsqrt, [](double x) { return 1.0 / std::sqrt(x); }, {0.01, 10}); }
JX_OPINFO(cbrt) { return Float1("cbrt", lax::cbrt, [](double x) { return std::cbrt(x); }, {-10, 10}); }
JX_OPINFO(erf) { return Float1("erf", lax::erf, [](double x) { return std::erf(x); }); }
JX_OPINFO(erfc) { return Float1("erfc", lax::erfc, [](double x) { return std::erfc(x); }); }
JX_OPINFO(erf_inv) { return Float1("erf_inv", lax::erf_inv, RefErfInv, {-1, 1}); }
JX_OPINFO(lgamma) { return Float1("lgamma", lax::lgamma, [](double x) { return std::lgamma(x); }, {-4.5, 6}); }
JX_OPINFO(digamma) { return Float1("digamma", lax::digamma, RefDigamma, {-4.5, 6}); }

}  // namespace
}  // namespace jx::opinfo::unary_opinfo

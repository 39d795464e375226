// opinfo records for the reduction family: reduce_{sum,prod,max,min,and,or}, the generic
// reduce (a logaddexp reducer), argmax, argmin.
// References are naive float64 loops over every input index; integer results wrap to the
// output dtype (two's complement), as XLA's do.
#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_join.h"
#include "opinfo.h"

namespace jx::opinfo::reduction_opinfo {
namespace {

struct ReduceCase {
  Shape shape;
  std::vector<int64_t> axes;  // as passed to the op (may be negative or unsorted)
};

// Shapes covering 0-d, no axes, empty operands and empty axes, all axes, size-1 axes, each
// kernel layout (rows, columns, [O,R,I], transposed) and the parallel paths.
std::vector<ReduceCase> Cases() {
  std::vector<ReduceCase> cases = {
      {{}, {}},           {{5}, {0}},           {{5}, {}},           {{0}, {0}},
      {{3, 4}, {0}},      {{3, 4}, {1}},        {{3, 4}, {0, 1}},    {{3, 4}, {-1}},
      {{2, 0, 3}, {1}},   {{2, 0, 3}, {0, 2}},  {{2, 3, 5}, {0, 2}}, {{2, 3, 5}, {1}},
      {{2, 3, 5}, {0, 1}}, {{2, 3, 5}, {1, 2}}, {{2, 3, 5}, {0, 1, 2}}, {{2, 3, 5}, {2, 0}},
      {{4, 1, 3, 1, 5}, {1, 3}}, {{4, 1, 3, 1, 5}, {0, 3, 4}}, {{3, 4, 2, 5}, {0, 2}},
      {{3, 4, 2, 5}, {1, 3}}, {{2, 3, 2, 3, 2}, {0, 2, 4}},
  };
  const std::vector<ReduceCase> big = {
      {{70000}, {0}},     {{300, 257}, {0}},   {{300, 257}, {1}},     {{40000, 3}, {0}},
      {{3, 40000}, {1}},  {{64, 40, 33}, {1}}, {{64, 40, 33}, {0, 2}}, {{2, 70000}, {0, 1}},
      {{700, 3, 40}, {1}}, {{5, 7000, 3}, {1}}, {{2, 270000}, {1}},
  };
  cases.insert(cases.end(), big.begin(), big.end());
  return cases;
}

// Random values with unsigned types kept non-negative.
Array Rand(std::mt19937_64& rng, const Shape& shape, DType d, double lo, double hi) {
  if (IsUnsignedInt(d)) lo = std::max(lo, 0.0);
  return RandomArray(rng, shape, d, lo, hi);
}

constexpr const char* kWithNaN = " (with NaN)";

// Replaces a few elements by NaN (floats only), spread over the array.
Array WithNaNs(const Array& a, std::mt19937_64& rng) {
  if (!IsFloating(a.dtype()) || a.size() == 0) return a;
  return WithValuesAtRandom(a, rng, std::max<int64_t>(1, a.size() / 20),
                            [](int64_t) { return std::numeric_limits<double>::quiet_NaN(); });
}

double Lowest(DType d);
double Highest(DType d);

bool AllFinite(const std::vector<double>& v) {
  return std::all_of(v.begin(), v.end(), [](double e) { return std::isfinite(e); });
}

// Integer results wrap modulo 2^bits into the dtype's range (values already in range are
// returned untouched: doubles near 2^64 cannot take the round trip).
double Wrap(double v, DType d) {
  if (!IsInteger(d) || std::isnan(v) || (v >= Lowest(d) && v <= Highest(d))) return v;
  const int bits = static_cast<int>(ItemSize(d)) * 8;
  const double mod = std::ldexp(1.0, bits);
  double r = std::fmod(v, mod);
  if (r < 0) r += mod;
  if (IsSignedInt(d) && r >= mod / 2) r -= mod;
  return r;
}

std::vector<int64_t> Canonical(const std::vector<int64_t>& axes, int64_t rank) {
  std::vector<int64_t> out;
  for (int64_t a : axes) out.push_back(a < 0 ? a + rank : a);
  return out;
}

// Naive reduction: every input index is mapped to its output index and combined.
RefArray RefReduce(const RefArray& x, const std::vector<int64_t>& axes, double init,
                   const std::function<double(double, double)>& f) {
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  std::vector<bool> reduced(static_cast<size_t>(rank), false);
  for (int64_t a : axes) reduced[static_cast<size_t>(a)] = true;
  RefArray out;
  for (int64_t i = 0; i < rank; ++i) {
    if (!reduced[static_cast<size_t>(i)]) out.shape.push_back(x.shape[static_cast<size_t>(i)]);
  }
  out.data.assign(static_cast<size_t>(NumElements(out.shape)), init);
  // Output stride of each input axis (0 for reduced axes).
  std::vector<int64_t> ostride(static_cast<size_t>(rank), 0);
  int64_t s = 1;
  for (int64_t d = rank - 1; d >= 0; --d) {
    if (reduced[static_cast<size_t>(d)]) continue;
    ostride[static_cast<size_t>(d)] = s;
    s *= x.shape[static_cast<size_t>(d)];
  }
  // Walks the input in row-major order with an index counter, moving the output offset by
  // each axis's output stride (division per element made this the suite's hottest loop).
  std::vector<int64_t> index(static_cast<size_t>(rank), 0);
  int64_t o = 0;
  for (int64_t flat = 0; flat < x.size(); ++flat) {
    double& v = out.data[static_cast<size_t>(o)];
    v = f(v, x.data[static_cast<size_t>(flat)]);
    for (int64_t d = rank - 1; d >= 0; --d) {
      const size_t u = static_cast<size_t>(d);
      o += ostride[u];
      if (++index[u] < x.shape[u]) break;
      o -= ostride[u] * x.shape[u];
      index[u] = 0;
    }
  }
  return out;
}

double Lowest(DType d) {
  if (IsBool(d)) return 0;
  if (IsFloating(d)) return -std::numeric_limits<double>::infinity();
  if (IsUnsignedInt(d)) return 0;
  return -std::ldexp(1.0, static_cast<int>(ItemSize(d)) * 8 - 1);
}
double Highest(DType d) {
  if (IsBool(d)) return 1;
  if (IsFloating(d)) return std::numeric_limits<double>::infinity();
  const int bits = static_cast<int>(ItemSize(d)) * 8;
  return IsUnsignedInt(d) ? std::ldexp(1.0, bits) - 1 : std::ldexp(1.0, bits - 1) - 1;
}

double NanMax(double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b); }
double NanMin(double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b); }
double BitAnd(double a, double b) {
  return static_cast<double>(static_cast<int64_t>(a) & static_cast<int64_t>(b));
}
double BitOr(double a, double b) {
  return static_cast<double>(static_cast<int64_t>(a) | static_cast<int64_t>(b));
}

using ReduceFn = std::function<Array(const Array&, const std::vector<int64_t>&)>;

struct ReduceSpec {
  std::string name;
  ReduceFn op;
  std::vector<DType> dtypes;
  std::function<double(DType)> init;
  std::function<double(double, double)> combine;
  bool narrow_big = false;  // products: big shapes draw from a narrow range (exact ints)
  double lo = -3, hi = 3;
  bool nans = false;        // also sample inputs holding NaNs
  bool differentiable = true;
};

OpInfo ReduceInfo(ReduceSpec spec) {
  OpInfo info;
  info.name = spec.name;
  info.dtypes = spec.dtypes;
  info.tolerance = DefaultTolerance;
  info.differentiable = spec.differentiable;
  info.samples = [spec](DType d, std::mt19937_64& rng) {
    std::vector<Sample> out;
    for (const ReduceCase& c : Cases()) {
      // Long products stay representable: ints in [-1, 1], floats in [0.5, 1.5].
      const bool narrow = spec.narrow_big && NumElements(c.shape) > 1000;
      const double lo = narrow ? (IsFloating(d) ? 0.5 : -1) : spec.lo;
      const double hi = narrow ? (IsFloating(d) ? 1.5 : 1) : spec.hi;
      Array x = Rand(rng, c.shape, d, lo, hi);
      std::vector<std::pair<std::string, Array>> inputs = {{"", x}};
      if (c.shape.size() >= 2) inputs.push_back({" (transposed)", NonContiguousCopy(x)});
      if (spec.nans && IsFloating(d) && x.size() > 0) inputs.push_back({kWithNaN, WithNaNs(x, rng)});
      for (auto& [tag, arg] : inputs) {
        Sample s;
        s.description = StrCat(ShapedArray{c.shape, d}.str(), " axes=(", absl::StrJoin(c.axes, ", "), ")", tag);
        s.args = {arg};
        const ReduceFn op = spec.op;
        const std::vector<int64_t> axes = c.axes;
        s.op = [op, axes](const std::vector<Array>& a) { return std::vector<Array>{op(a[0], axes)}; };
        const double init = spec.init(d);
        const auto combine = spec.combine;
        s.reference = [axes, init, combine, d](const std::vector<RefArray>& a) {
          RefArray r = RefReduce(a[0], Canonical(axes, static_cast<int64_t>(a[0].shape.size())), init, combine);
          for (double& v : r.data) v = Wrap(v, d);
          return std::vector<RefArray>{r};
        };
        s.out_dtypes = {d};
        // Finite differences need finite inputs and results (no NaN, nor the +-inf of an
        // empty max/min); only floating samples of a differentiable op reach them, so only
        // theirs pay for a second reference.
        s.derivatives_defined = spec.differentiable && IsFloating(d) && tag != kWithNaN &&  // no derivative through a NaN
                                AllFinite(arg.to_vector<double>()) &&
                                AllFinite(s.reference({ToRef(arg)})[0].data);
        out.push_back(std::move(s));
      }
    }
    return out;
  };
  return info;
}

const std::vector<DType> kNumeric = Concat(kIntDTypes, kFloatDTypes);
const std::vector<DType> kIntOrBool = Concat({bool_}, kIntDTypes);

JX_OPINFO(reduce_sum) {
  return ReduceInfo({"reduce_sum", lax::reduce_sum, kNumeric, [](DType) { return 0.0; },
                     [](double a, double b) { return a + b; }});
}
JX_OPINFO(reduce_prod) {
  ReduceSpec spec{"reduce_prod", lax::reduce_prod, kNumeric, [](DType) { return 1.0; },
                  [](double a, double b) { return a * b; }};
  spec.narrow_big = true;
  return ReduceInfo(spec);
}
JX_OPINFO(reduce_max) {
  ReduceSpec spec{"reduce_max", lax::reduce_max, kAllDTypes, Lowest, NanMax};
  spec.nans = true;
  return ReduceInfo(spec);
}
JX_OPINFO(reduce_min) {
  ReduceSpec spec{"reduce_min", lax::reduce_min, kAllDTypes, Highest, NanMin};
  spec.nans = true;
  return ReduceInfo(spec);
}
JX_OPINFO(reduce_and) {
  ReduceSpec spec{"reduce_and", lax::reduce_and, kIntOrBool, [](DType d) { return IsBool(d) ? 1.0 : -1.0; },
                  BitAnd};
  spec.lo = -8;
  spec.hi = 8;
  spec.differentiable = false;
  return ReduceInfo(spec);
}
JX_OPINFO(reduce_or) {
  ReduceSpec spec{"reduce_or", lax::reduce_or, kIntOrBool, [](DType) { return 0.0; }, BitOr};
  spec.lo = -8;
  spec.hi = 8;
  spec.differentiable = false;
  return ReduceInfo(spec);
}

// The generic reduce (JAX's reduce_p): lax.reduce(x, -inf, jnp.logaddexp, axes). logaddexp
// is no monoid primitive, so this binds one `reduce` equation with the reducer as its body
// jaxpr, evaluated as a tree eagerly and expanded into elementwise code under jit.
double LogAddExp(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return NAN;
  if (a == b && std::isinf(a)) return a;
  return std::max(a, b) + std::log1p(std::exp(-std::abs(a - b)));
}

Array ReduceLogAddExp(const Array& x, const std::vector<int64_t>& axes) {
  return lax::reduce(x, Array(-INFINITY), [](const Array& a, const Array& b) { return numpy::logaddexp(a, b); }, axes);
}

JX_OPINFO(reduce) {
  ReduceSpec spec{"reduce", ReduceLogAddExp, kFloatDTypes, Lowest, LogAddExp};
  spec.nans = true;
  return ReduceInfo(spec);
}

// ---------------------------------------------------------------------------------------
// argmax / argmin.

struct ArgCase {
  Shape shape;
  int64_t axis;
  DType index_dtype = int32;
};

template <bool kMax>
RefArray RefArg(const RefArray& x, int64_t axis) {
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  int64_t O = 1, I = 1;
  const int64_t R = x.shape[static_cast<size_t>(axis)];
  for (int64_t i = 0; i < axis; ++i) O *= x.shape[static_cast<size_t>(i)];
  for (int64_t i = axis + 1; i < rank; ++i) I *= x.shape[static_cast<size_t>(i)];
  RefArray out;
  out.shape = x.shape;
  out.shape.erase(out.shape.begin() + axis);
  out.data.assign(static_cast<size_t>(O * I), 0);
  for (int64_t o = 0; o < O; ++o) {
    for (int64_t i = 0; i < I; ++i) {
      int64_t best = 0;
      double bv = x.data[static_cast<size_t>(o * R * I + i)];
      for (int64_t r = 1; r < R; ++r) {
        const double v = x.data[static_cast<size_t>((o * R + r) * I + i)];
        if (std::isnan(bv)) break;  // the first NaN wins
        if (std::isnan(v) || (kMax ? v > bv : v < bv)) {
          best = r;
          bv = v;
        }
      }
      out.data[static_cast<size_t>(o * I + i)] = static_cast<double>(best);
    }
  }
  return out;
}

template <bool kMax>
OpInfo ArgInfo(std::string name, Array (*op)(const Array&, int64_t, DType)) {
  OpInfo info;
  info.name = name;
  info.dtypes = kAllDTypes;
  info.tolerance = DefaultTolerance;
  info.differentiable = false;
  info.samples = [op](DType d, std::mt19937_64& rng) {
    const std::vector<ArgCase> cases = {
        {{5}, 0},          {{1}, 0},          {{3, 4}, 0},       {{3, 4}, 1},           {{3, 4}, -1},
        {{2, 3, 5}, 1},    {{2, 3, 5}, 0},    {{2, 3, 5}, 2},    {{2, 0, 3}, 0},        {{2, 0, 3}, 2},
        {{3, 4}, 1, int64}, {{3, 4}, 0, uint8}, {{70000}, 0},    {{300, 257}, 0},       {{300, 257}, 1},
        {{40, 700, 3}, 1},  {{270000}, 0},
    };
    std::vector<Sample> out;
    for (const ArgCase& c : cases) {
      Array x = Rand(rng, c.shape, d, -3, 3);
      std::vector<std::pair<std::string, Array>> inputs = {{"", x}};
      if (c.shape.size() >= 2) inputs.push_back({" (transposed)", NonContiguousCopy(x)});
      if (IsFloating(d) && x.size() > 0) inputs.push_back({kWithNaN, WithNaNs(x, rng)});
      for (auto& [tag, arg] : inputs) {
        Sample s;
        s.description = StrCat(ShapedArray{c.shape, d}.str(), " axis=", c.axis, " index_dtype=",
                               dtype_name(c.index_dtype), tag);
        s.args = {arg};
        const int64_t axis = c.axis;
        const DType idt = c.index_dtype;
        s.op = [op, axis, idt](const std::vector<Array>& a) { return std::vector<Array>{op(a[0], axis, idt)}; };
        s.reference = [axis](const std::vector<RefArray>& a) {
          const int64_t rank = static_cast<int64_t>(a[0].shape.size());
          return std::vector<RefArray>{RefArg<kMax>(a[0], axis < 0 ? axis + rank : axis)};
        };
        s.out_dtypes = {c.index_dtype};
        out.push_back(std::move(s));
      }
    }
    return out;
  };
  return info;
}

JX_OPINFO(argmax) { return ArgInfo<true>("argmax", lax::argmax); }
JX_OPINFO(argmin) { return ArgInfo<false>("argmin", lax::argmin); }

}  // namespace
}  // namespace jx::opinfo::reduction_opinfo

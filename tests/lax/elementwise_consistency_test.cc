// One op, one value: an elementwise op's result must not depend on where an element sits in
// the array (a full SIMD packet, the tail, a chunk boundary) nor on whether eager or jit
// computes it. Both run the kernel library's functions (lax/kernels/elementwise.h), the tail
// of a span as a padded packet; these tests pin that down bit for bit, at lengths 1, 15, 16,
// 17 and 33 with special values (denormal results and inputs, +-0, +-inf, NaN, the edges of
// exp's range) in every position, for every floating dtype.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <jx/jx.h>
#include "jx/devices/cpu/cpu_compiler.h"

namespace jx::elementwise_consistency_test {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Inputs that stress range reductions and special cases. Each dtype rounds them on
// conversion (1e-40 is a denormal f32/bf16, 3e-6 a denormal f16, 1e-310 a denormal f64).
const std::vector<double>& SpecialValues() {
  static const std::vector<double> v = {
      -101.2, 0.0,   -0.0,  1e-40,  -1e-40, 3e-6,  1e-310, kInf,   -kInf, kNaN,  88.5,  -88.8,
      -87.5,  709.5, -740., 0.5,    -0.5,   1.5,   2.5,    -2.5,   1.0,   -1.0,  3.14159, 100.0,
      -9.5,   -20.0, 20.0,  1e-8,   0.999,  -0.999, 1e5,   -1e5,   0.75,  2.0,   -3.0,  7.0};
  return v;
}

// x[i] = values[(i * stride + shift) % size] as dtype.
Array Pattern(DType dtype, int64_t n, int64_t stride, int64_t shift) {
  const std::vector<double>& v = SpecialValues();
  std::vector<double> x(n);
  const int64_t size = static_cast<int64_t>(v.size());
  for (int64_t i = 0; i < n; ++i) x[i] = v[(i * stride + shift) % size];
  return Array::FromData(x.data(), {n}, float64).astype(dtype);
}

Array ValueAt(const Array& x, int64_t i) { return lax::slice(x, {i}, {i + 1}); }

bool SameBits(const Array& a, const Array& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.data(), b.data(), static_cast<size_t>(a.nbytes())) == 0;
}

std::string Describe(const Array& x, int64_t i) {
  return std::to_string(ValueAt(x, i).astype(float64).to_vector<double>()[0]);
}

const std::vector<DType> kFloatDTypes = {float16, bfloat16, float32, float64};
const std::vector<int64_t> kLengths = {1, 15, 16, 17, 33};

using UnaryFn = std::function<Array(const Array&)>;
using BinaryFn = std::function<Array(const Array&, const Array&)>;

struct NamedUnary {
  std::string name;
  UnaryFn fn;
};
struct NamedBinary {
  std::string name;
  BinaryFn fn;
};

const std::vector<NamedUnary>& UnaryOps() {
  static const std::vector<NamedUnary> ops = {
      {"neg", [](const Array& x) { return lax::neg(x); }},
      {"abs", [](const Array& x) { return lax::abs(x); }},
      {"sign", [](const Array& x) { return lax::sign(x); }},
      {"floor", [](const Array& x) { return lax::floor(x); }},
      {"ceil", [](const Array& x) { return lax::ceil(x); }},
      {"round_afz", [](const Array& x) { return lax::round(x, 0); }},
      {"round_even", [](const Array& x) { return lax::round(x, 1); }},
      {"exp", [](const Array& x) { return lax::exp(x); }},
      {"exp2", [](const Array& x) { return lax::exp2(x); }},
      {"log", [](const Array& x) { return lax::log(x); }},
      {"log1p", [](const Array& x) { return lax::log1p(x); }},
      {"expm1", [](const Array& x) { return lax::expm1(x); }},
      {"tanh", [](const Array& x) { return lax::tanh(x); }},
      {"logistic", [](const Array& x) { return lax::logistic(x); }},
      {"sin", [](const Array& x) { return lax::sin(x); }},
      {"cos", [](const Array& x) { return lax::cos(x); }},
      {"tan", [](const Array& x) { return lax::tan(x); }},
      {"atan", [](const Array& x) { return lax::atan(x); }},
      {"sqrt", [](const Array& x) { return lax::sqrt(x); }},
      {"rsqrt", [](const Array& x) { return lax::rsqrt(x); }},
      {"cbrt", [](const Array& x) { return lax::cbrt(x); }},
      {"erf", [](const Array& x) { return lax::erf(x); }},
      {"square", [](const Array& x) { return lax::square(x); }},
      {"reciprocal", [](const Array& x) { return lax::reciprocal(x); }},
      {"integer_pow_3", [](const Array& x) { return lax::integer_pow(x, 3); }},
      {"integer_pow_-2", [](const Array& x) { return lax::integer_pow(x, -2); }},
      {"is_finite", [](const Array& x) { return lax::is_finite(x); }},
  };
  return ops;
}

const std::vector<NamedBinary>& BinaryOps() {
  static const std::vector<NamedBinary> ops = {
      {"add", [](const Array& x, const Array& y) { return lax::add(x, y); }},
      {"sub", [](const Array& x, const Array& y) { return lax::sub(x, y); }},
      {"mul", [](const Array& x, const Array& y) { return lax::mul(x, y); }},
      {"div", [](const Array& x, const Array& y) { return lax::div(x, y); }},
      {"rem", [](const Array& x, const Array& y) { return lax::rem(x, y); }},
      {"pow", [](const Array& x, const Array& y) { return lax::pow(x, y); }},
      {"max", [](const Array& x, const Array& y) { return lax::max(x, y); }},
      {"min", [](const Array& x, const Array& y) { return lax::min(x, y); }},
      {"atan2", [](const Array& x, const Array& y) { return lax::atan2(x, y); }},
  };
  return ops;
}

// Turns any evaluator fallback under jit into a compile error: the ops must run natively.
class ElementwiseConsistencyTest : public ::testing::Test {
 protected:
  void SetUp() override { setenv("JX_CPU_FALLBACK", "error", 1); }
  void TearDown() override { unsetenv("JX_CPU_FALLBACK"); }
};

// The example from the random-program differential test: exp(-101.2f) is the denormal
// 1.1e-44 wherever the element sits (it was 0 inside a full 16-lane packet).
TEST_F(ElementwiseConsistencyTest, ExpGivesTheDenormalInPacketAndTail) {
  for (int64_t n : {1, 15, 16, 17, 33, 4096 + 3}) {
    std::vector<float> x(n, -101.2f);
    const std::vector<float> got = lax::exp(Array::FromData(x.data(), {n}, float32)).to_vector<float>();
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(got[i], std::exp(-101.2f)) << "n=" << n << " i=" << i;
      ASSERT_GT(got[i], 0.0f);
    }
  }
  EXPECT_EQ(lax::log(Array::Scalar(1e-40, float32)).to_vector<float>()[0], std::log(1e-40f));
}

// -(+0) is -0 in every position, eager and jit (a packet negate computed as 0 - x gave +0).
TEST_F(ElementwiseConsistencyTest, NegateFlipsTheSignOfZero) {
  // Three negates (one loop kernel) rather than one, so that this test's compiles are not
  // the lone-op programs UnaryJitEqualsEagerBitForBit counts.
  auto jitted = jit([](const Array& x) { return lax::neg(lax::neg(lax::neg(x))); });
  for (DType dtype : kFloatDTypes) {
    for (int64_t n : kLengths) {
      const Array zeros = Array::FromData(std::vector<double>(n, 0.0).data(), {n}, float64).astype(dtype);
      for (const Array& y : {lax::neg(zeros), jitted(zeros)}) {
        const std::vector<double> v = y.astype(float64).to_vector<double>();
        for (int64_t i = 0; i < n; ++i) {
          ASSERT_TRUE(std::signbit(v[i])) << dtype_name(dtype) << " n=" << n << " i=" << i;
        }
      }
    }
  }
}

// Every element of a long array equals the op on that element alone (a length-1 array is all
// tail): for each length, patterns put each special value in packet and tail positions.
TEST_F(ElementwiseConsistencyTest, UnaryValueIndependentOfPosition) {
  for (const NamedUnary& op : UnaryOps()) {
    for (DType dtype : kFloatDTypes) {
      for (int64_t n : kLengths) {
        for (int64_t shift = 0; shift < 7; ++shift) {
          const Array x = Pattern(dtype, n, 5, shift);
          const Array y = op.fn(x);
          for (int64_t i = 0; i < n; ++i) {
            ASSERT_TRUE(SameBits(ValueAt(y, i), op.fn(ValueAt(x, i))))
                << op.name << " " << dtype_name(dtype) << " n=" << n << " i=" << i << " x=" << Describe(x, i);
          }
        }
      }
    }
  }
}

TEST_F(ElementwiseConsistencyTest, BinaryValueIndependentOfPosition) {
  for (const NamedBinary& op : BinaryOps()) {
    for (DType dtype : kFloatDTypes) {
      for (int64_t n : {15, 17, 33}) {
        const Array x = Pattern(dtype, n, 1, 0), y = Pattern(dtype, n, 7, 3);
        const Array z = op.fn(x, y);
        for (int64_t i = 0; i < n; ++i) {
          ASSERT_TRUE(SameBits(ValueAt(z, i), op.fn(ValueAt(x, i), ValueAt(y, i))))
              << op.name << " " << dtype_name(dtype) << " n=" << n << " i=" << i << " x=" << Describe(x, i)
              << " y=" << Describe(y, i);
        }
        // A 0-d operand (read with stride 0) gives what the broadcast array gives.
        const Array s = ValueAt(y, 2).reshape({});
        EXPECT_TRUE(SameBits(op.fn(x, s), op.fn(x, lax::broadcast_in_dim(s, {n}, {}))))
            << op.name << " " << dtype_name(dtype) << " scalar rhs";
        EXPECT_TRUE(SameBits(op.fn(s, x), op.fn(lax::broadcast_in_dim(s, {n}, {}), x)))
            << op.name << " " << dtype_name(dtype) << " scalar lhs";
      }
    }
  }
}

// Two NaN operands of opposite signs: the result is the first operand's NaN in every
// position, eager and jit. (The compiler may swap the operands of a commutative vector add
// or multiply, and did so differently for full packets and padded tails in the -O1
// sanitizer build: the sign of log(x) + y's NaN depended on where the element sat.)
TEST_F(ElementwiseConsistencyTest, NaNOperandsGiveTheFirstOperandsNaN) {
  for (const char* name : {"add", "sub", "mul", "div"}) {
    BinaryFn fn;
    for (const NamedBinary& op : BinaryOps()) {
      if (op.name == name) fn = op.fn;
    }
    auto jitted = jit([fn](const Array& x, const Array& y) { return fn(x, y); });
    for (DType dtype : kFloatDTypes) {
      for (int64_t n : kLengths) {
        std::vector<double> xs(n), ys(n);
        for (int64_t i = 0; i < n; ++i) {
          xs[i] = std::copysign(kNaN, i % 3 == 0 ? -1.0 : 1.0);
          ys[i] = std::copysign(kNaN, i % 3 == 0 ? 1.0 : -1.0);
        }
        const Array x = Array::FromData(xs.data(), {n}, float64).astype(dtype);
        const Array y = Array::FromData(ys.data(), {n}, float64).astype(dtype);
        for (const Array& z : {fn(x, y), jitted(x, y)}) {
          const std::vector<double> v = z.astype(float64).to_vector<double>();
          for (int64_t i = 0; i < n; ++i) {
            ASSERT_TRUE(std::isnan(v[i]));
            ASSERT_EQ(std::signbit(v[i]), std::signbit(xs[i]))
                << name << " " << dtype_name(dtype) << " n=" << n << " i=" << i;
          }
        }
        for (int64_t i = 0; i < n; ++i) {
          ASSERT_TRUE(SameBits(ValueAt(fn(x, y), i), fn(ValueAt(x, i), ValueAt(y, i))))
              << name << " " << dtype_name(dtype) << " n=" << n << " i=" << i;
        }
      }
    }
  }
}

// erf_inv is one op sequence per type (lax/kernels/erf_inv.h) for eager and jit: equal bits
// over (-1, 1), at +-1 (+-inf), beyond (NaN), near +-1 and 0, and in every packet position.
TEST_F(ElementwiseConsistencyTest, ErfInvJitEqualsEagerBitForBit) {
  auto jitted = jit([](const Array& x) { return lax::erf_inv(x); });
  std::vector<double> values = {-1.0,   1.0,        0.0,   -0.0,   1.5,         -2.0,   kNaN,
                                1e-40,  1e-310,     -3e-8, 0.999999, -0.9999999, 1 - 1e-12,
                                -1 + 1e-15, 0.9990343066500631 /* w = 6.25 */, -0.9999999437324111 /* w = 16 */,
                                std::nextafter(1.0, 0.0), std::numeric_limits<double>::infinity()};
  for (int i = -999; i <= 999; ++i) values.push_back(i / 1000.0 + 0.00037);
  const int64_t n = static_cast<int64_t>(values.size());
  for (DType dtype : {float64, float32, float16, bfloat16}) {
    const Array x = Array::FromData(values.data(), {n}, float64).astype(dtype);
    ASSERT_TRUE(SameBits(jitted(x), lax::erf_inv(x))) << dtype_name(dtype);
    for (int64_t len : kLengths) {
      // Special values first: each lands in a padded tail packet at some length.
      const Array head = lax::slice(x, {0}, {len});
      EXPECT_TRUE(SameBits(jitted(head), lax::erf_inv(head))) << dtype_name(dtype) << " n=" << len;
      const Array tail = lax::slice(x, {n - len}, {n});
      EXPECT_TRUE(SameBits(jitted(tail), lax::erf_inv(tail))) << dtype_name(dtype) << " n=" << len;
    }
  }
  // f64: Giles' double-precision polynomials, within 4 ulps of erfinv (erf of the result
  // gives x back to an ulp of x, or of erf's slope times the result's ulp).
  const Array x64 = Array::FromData(values.data(), {n}, float64);
  const std::vector<double> y64 = lax::erf_inv(x64).to_vector<double>();
  for (int64_t i = 0; i < n; ++i) {
    const double x = values[i], y = y64[i];
    if (!(std::fabs(x) <= 1)) {
      EXPECT_TRUE(std::isnan(y)) << "x=" << x;
    } else if (std::fabs(x) == 1) {
      EXPECT_EQ(y, std::copysign(std::numeric_limits<double>::infinity(), x));
    } else {
      const double slope = 2 / std::sqrt(M_PI) * std::exp(-y * y);
      const double ulp_y = std::nextafter(std::fabs(y), 1e300) - std::fabs(y);
      const double ulp_x = std::nextafter(std::fabs(x), 1e300) - std::fabs(x);
      EXPECT_NEAR(std::erf(y), x, 2 * ulp_x + 4 * slope * ulp_y) << "x=" << x;
    }
  }
  // f32: Giles' single-precision approximation, within a few f32 ulps of the f64 kernel.
  const std::vector<float> got = lax::erf_inv(x64.astype(float32)).to_vector<float>();
  const std::vector<double> want = lax::erf_inv(x64.astype(float32).astype(float64)).to_vector<double>();
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(want[i])) continue;
    EXPECT_NEAR(got[i], want[i], 8e-7 * std::max(1.0, std::fabs(want[i]))) << "x=" << values[i];
  }
}

// A lone op under jit runs the same kernel as eager: equal bits.
TEST_F(ElementwiseConsistencyTest, UnaryJitEqualsEagerBitForBit) {
  const int64_t compiles = GetCpuJitStats().compiles;
  for (const NamedUnary& op : UnaryOps()) {
    auto jitted = jit([&op](const Array& x) { return op.fn(x); });
    for (DType dtype : kFloatDTypes) {
      for (int64_t n : kLengths) {
        for (int64_t shift : {0, 4}) {
          const Array x = Pattern(dtype, n, 5, shift);
          Array got;
          try {
            got = jitted(x);
          } catch (const std::exception& e) {
            ADD_FAILURE() << op.name << " " << dtype_name(dtype) << " jit threw: " << e.what();
            continue;
          }
          const Array want = op.fn(x);
          if (SameBits(got, want)) continue;
          for (int64_t i = 0; i < n; ++i) {
            EXPECT_TRUE(SameBits(ValueAt(got, i), ValueAt(want, i)))
                << op.name << " " << dtype_name(dtype) << " n=" << n << " i=" << i << " x=" << Describe(x, i)
                << " jit " << Describe(got, i) << " eager " << Describe(want, i);
          }
        }
      }
    }
  }
  // Each (op, dtype, length) compiled once: the CPU backend ran them, not an eager fallback.
  EXPECT_GE(GetCpuJitStats().compiles - compiles,
            static_cast<int64_t>(UnaryOps().size() * kFloatDTypes.size() * kLengths.size()));
}

TEST_F(ElementwiseConsistencyTest, BinaryJitEqualsEagerBitForBit) {
  for (const NamedBinary& op : BinaryOps()) {
    auto jitted = jit([&op](const Array& x, const Array& y) { return op.fn(x, y); });
    for (DType dtype : kFloatDTypes) {
      for (int64_t n : kLengths) {
        const Array x = Pattern(dtype, n, 1, 0), y = Pattern(dtype, n, 7, 3);
        for (const auto& [a, b] : {std::pair{x, y}, std::pair{x, ValueAt(y, 0).reshape({})},
                                   std::pair{ValueAt(x, n - 1).reshape({}), y}}) {
          Array got;
          try {
            got = jitted(a, b);
          } catch (const std::exception& e) {
            ADD_FAILURE() << op.name << " " << dtype_name(dtype) << " jit threw: " << e.what();
            continue;
          }
          const Array want = op.fn(a, b);
          EXPECT_TRUE(SameBits(got, want)) << op.name << " " << dtype_name(dtype) << " n=" << n << " "
                                           << a.aval().str() << ", " << b.aval().str();
        }
      }
    }
  }
}

// clamp: eager and jit share one kernel (XLA's max/min: -0 < +0, NaN propagates), with array
// and scalar bounds.
TEST_F(ElementwiseConsistencyTest, ClampJitEqualsEagerBitForBit) {
  auto jitted = jit([](const Array& lo, const Array& x, const Array& hi) { return lax::clamp(lo, x, hi); });
  for (DType dtype : kFloatDTypes) {
    for (int64_t n : kLengths) {
      const Array lo = Pattern(dtype, n, 1, 1), x = Pattern(dtype, n, 5, 2), hi = Pattern(dtype, n, 7, 0);
      const Array zero = Array::Scalar(0.0, dtype), neg_zero = Array::Scalar(-0.0, dtype);
      for (const auto& [l, h] : {std::pair{lo, hi}, std::pair{neg_zero, zero}, std::pair{zero, hi}}) {
        const Array want = lax::clamp(l, x, h);
        EXPECT_TRUE(SameBits(jitted(l, x, h), want)) << dtype_name(dtype) << " n=" << n << " " << l.aval().str();
        for (int64_t i = 0; i < n; ++i) {
          const Array li = l.ndim() == 0 ? l : ValueAt(l, i), hi_i = h.ndim() == 0 ? h : ValueAt(h, i);
          ASSERT_TRUE(SameBits(ValueAt(want, i), lax::clamp(li, ValueAt(x, i), hi_i)))
              << dtype_name(dtype) << " n=" << n << " i=" << i;
        }
      }
    }
  }
}

// convert_element_type between every pair of dtypes: one kernel for eager and jit.
TEST_F(ElementwiseConsistencyTest, ConvertJitEqualsEagerBitForBit) {
  const std::vector<DType> all = {bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
                                  float16, bfloat16, float32, float64};
  for (DType from : all) {
    for (DType to : all) {
      if (from == to) continue;
      auto jitted = jit([to](const Array& x) { return lax::convert_element_type(x, to); });
      for (int64_t n : {17, 33}) {
        // Special values reach integer sources through float64 -> integer conversion.
        const Array x = lax::convert_element_type(Pattern(float64, n, 5, 1), from);
        const Array want = lax::convert_element_type(x, to);
        EXPECT_TRUE(SameBits(jitted(x), want)) << dtype_name(from) << " -> " << dtype_name(to) << " n=" << n;
        for (int64_t i = 0; i < n; ++i) {
          ASSERT_TRUE(SameBits(ValueAt(want, i), lax::convert_element_type(ValueAt(x, i), to)))
              << dtype_name(from) << " -> " << dtype_name(to) << " i=" << i;
        }
      }
    }
  }
}

// Integer and bool ops and comparisons of every dtype: eager and jit run one kernel (XLA's
// wrapping arithmetic, x / 0 = -1, x % 0 = x, saturating shifts), natively under jit.
TEST_F(ElementwiseConsistencyTest, IntegerAndCompareJitEqualsEagerBitForBit) {
  const std::vector<DType> ints = {int8, int16, int32, int64, uint8, uint16, uint32, uint64};
  const std::vector<NamedBinary> int_ops = {
      {"add", [](const Array& x, const Array& y) { return lax::add(x, y); }},
      {"sub", [](const Array& x, const Array& y) { return lax::sub(x, y); }},
      {"mul", [](const Array& x, const Array& y) { return lax::mul(x, y); }},
      {"div", [](const Array& x, const Array& y) { return lax::div(x, y); }},
      {"rem", [](const Array& x, const Array& y) { return lax::rem(x, y); }},
      {"pow", [](const Array& x, const Array& y) { return lax::pow(x, y); }},
      {"max", [](const Array& x, const Array& y) { return lax::max(x, y); }},
      {"min", [](const Array& x, const Array& y) { return lax::min(x, y); }},
      {"and", [](const Array& x, const Array& y) { return lax::bitwise_and(x, y); }},
      {"or", [](const Array& x, const Array& y) { return lax::bitwise_or(x, y); }},
      {"xor", [](const Array& x, const Array& y) { return lax::bitwise_xor(x, y); }},
      {"shift_left", [](const Array& x, const Array& y) { return lax::shift_left(x, y); }},
      {"shift_right_logical", [](const Array& x, const Array& y) { return lax::shift_right_logical(x, y); }},
      {"shift_right_arithmetic", [](const Array& x, const Array& y) { return lax::shift_right_arithmetic(x, y); }},
      {"lt", [](const Array& x, const Array& y) { return lax::lt(x, y); }},
      {"eq", [](const Array& x, const Array& y) { return lax::eq(x, y); }},
      {"ge", [](const Array& x, const Array& y) { return lax::ge(x, y); }},
  };
  const std::vector<NamedUnary> int_unary = {
      {"neg", [](const Array& x) { return lax::neg(x); }},
      {"sign", [](const Array& x) { return lax::sign(x); }},
      {"not", [](const Array& x) { return lax::bitwise_not(x); }},
  };
  const int64_t compiles = GetCpuJitStats().compiles;
  for (DType dtype : ints) {
    for (int64_t n : {17, 33}) {
      const Array x = lax::convert_element_type(Pattern(float64, n, 1, 0), dtype);
      const Array y = lax::convert_element_type(lax::rem(Pattern(float64, n, 7, 3), Array::Scalar(70.0, float64)), dtype);
      for (const NamedBinary& op : int_ops) {
        auto jitted = jit([&op](const Array& a, const Array& b) { return op.fn(a, b); });
        for (const auto& [a, b] : {std::pair{x, y}, std::pair{x, ValueAt(y, 1).reshape({})}}) {
          EXPECT_TRUE(SameBits(jitted(a, b), op.fn(a, b))) << op.name << " " << dtype_name(dtype) << " n=" << n;
        }
      }
      for (const NamedUnary& op : int_unary) {
        EXPECT_TRUE(SameBits(jit(op.fn)(x), op.fn(x))) << op.name << " " << dtype_name(dtype) << " n=" << n;
      }
    }
  }
  // Comparisons of floats (NaN unordered, -0 == +0) and bool logic.
  for (DType dtype : {float16, bfloat16, float32, float64, bool_}) {
    const Array x = lax::convert_element_type(Pattern(float64, 33, 1, 0), dtype);
    const Array y = lax::convert_element_type(Pattern(float64, 33, 7, 3), dtype);
    for (const NamedBinary& op : int_ops) {
      const bool logic = op.name == "and" || op.name == "or" || op.name == "xor" || op.name == "max";
      const bool compare = op.name == "lt" || op.name == "eq" || op.name == "ge";
      if (!compare && !(logic && dtype == bool_)) continue;
      EXPECT_TRUE(SameBits(jit(op.fn)(x, y), op.fn(x, y))) << op.name << " " << dtype_name(dtype);
    }
    if (dtype == bool_) {
      EXPECT_TRUE(SameBits(jit(lax::bitwise_not)(x), lax::bitwise_not(x)));
    }
  }
  EXPECT_GT(GetCpuJitStats().compiles, compiles);
}

}  // namespace
}  // namespace jx::elementwise_consistency_test

// Focused tests of the elementwise families (unary, binary, comparisons, select_n, clamp,
// conversions): XLA's integer and float edge semantics, weak scalars in the lax wrappers, and
// bad inputs (exception type, message naming the op and avals, the next call still works).
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include <gtest/gtest.h>

#include <jx/jx.h>

namespace jx::elementwise_test {
namespace {

template <typename T>
Array Make(std::vector<T> v, Shape shape = {}) {
  if (shape.empty() && v.size() != 1) shape = {static_cast<int64_t>(v.size())};
  return Array::FromData(v.data(), std::move(shape), DTypeOf<T>());
}
Array MakeBool(std::vector<bool> v) {
  std::unique_ptr<bool[]> flags(new bool[v.size()]);
  for (size_t i = 0; i < v.size(); ++i) flags[i] = v[i];
  return Array::FromData(flags.get(), {static_cast<int64_t>(v.size())}, bool_);
}

constexpr float kNaNf = std::numeric_limits<float>::quiet_NaN();
constexpr float kInff = std::numeric_limits<float>::infinity();

// Expects fn to throw E whose message names the op and contains every fragment.
template <typename E, typename F>
void ExpectError(F fn, const std::vector<std::string>& fragments) {
  try {
    fn();
    ADD_FAILURE() << "expected an exception";
  } catch (const E& e) {
    const std::string msg = e.what();
    for (const std::string& f : fragments) EXPECT_NE(msg.find(f), std::string::npos) << "'" << f << "' not in: " << msg;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
}

// ---- Weak scalars in the lax wrappers.

TEST(WeakScalarTest, ScalarTakesTheArrayDtypeAndShape) {
  Array x = Make<float>({1, 2, 3});
  Array y = lax::add(x, 2.0);
  EXPECT_EQ(y.dtype(), float32);
  EXPECT_FALSE(y.weak_type());
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{3, 4, 5}));
  EXPECT_EQ(lax::sub(2.0, x).to_vector<float>(), (std::vector<float>{1, 0, -1}));

  Array h = lax::mul(Make<float>({1.5f, -2}).astype(bfloat16), 2);
  EXPECT_EQ(h.dtype(), bfloat16);
  EXPECT_EQ(h.to_vector<float>(), (std::vector<float>{3, -4}));

  Array u = lax::shift_left(Make<uint8_t>({1, 3}), 2);
  EXPECT_EQ(u.dtype(), uint8);
  EXPECT_EQ(u.to_vector<int>(), (std::vector<int>{4, 12}));

  Array b = lax::lt(x, 2.5);
  EXPECT_EQ(b.dtype(), bool_);
  EXPECT_EQ(b.to_vector<bool>(), (std::vector<bool>{true, true, false}));
}

TEST(WeakScalarTest, TwoWeakScalarsPromoteAndStayWeak) {
  Array z = lax::add(Array(2), Array(0.5));
  EXPECT_EQ(z.dtype(), float32);
  EXPECT_TRUE(z.weak_type());
  EXPECT_EQ(z.item<float>(), 2.5f);
}

TEST(WeakScalarTest, StrongMismatchesStayErrors) {
  Array x = Make<float>({1, 2, 3});
  ExpectError<TypeError>([&] { lax::add(x, Array::Scalar(2, float64)); }, {"[add]", "f32[3]", "f64[]"});
  // A weak float does not fit an integer operand (JAX's lax raises too).
  ExpectError<TypeError>([&] { lax::add(Make<int32_t>({1, 2}), 2.5); }, {"[add]", "i32[2]"});
  EXPECT_EQ(lax::add(x, 1.0).to_vector<float>()[0], 2.0f);
}

// ---- 0-d operands broadcast against shaped ones (JAX's broadcasting_shape_rule).

TEST(ScalarOperandTest, ZeroDOperandsBroadcastOnEitherSide) {
  Array x = Make<float>({1, 2, 3});
  Array two = Array::Scalar(2, float32);
  Array y = lax::sub(x, two);
  EXPECT_EQ(y.shape(), (Shape{3}));
  EXPECT_FALSE(y.weak_type());
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{-1, 0, 1}));
  EXPECT_EQ(lax::sub(two, x).to_vector<float>(), (std::vector<float>{1, 0, -1}));
  EXPECT_EQ(lax::pow(x, two).to_vector<float>(), (std::vector<float>{1, 4, 9}));
  EXPECT_EQ(lax::pow(two, x).to_vector<float>(), (std::vector<float>{2, 4, 8}));
  EXPECT_EQ(lax::pow(x, Array::Scalar(3, int32)).to_vector<float>(), (std::vector<float>{1, 8, 27}));
  EXPECT_EQ(lax::max(Make<int32_t>({1, 5}), Array::Scalar(3, int32)).to_vector<int>(), (std::vector<int>{3, 5}));
  EXPECT_EQ(lax::lt(two, x).to_vector<bool>(), (std::vector<bool>{false, false, true}));
  EXPECT_EQ(lax::ge(x, two).to_vector<bool>(), (std::vector<bool>{false, true, true}));
  Array m = lax::mul(Make<float>({1, 2, 3, 4, 5, 6}, {2, 3}), two);
  EXPECT_EQ(m.shape(), (Shape{2, 3}));
  EXPECT_EQ(m.to_vector<float>(), (std::vector<float>{2, 4, 6, 8, 10, 12}));
  // Both 0-d: a 0-d result.
  EXPECT_EQ(lax::add(two, two).shape(), Shape{});
}

TEST(ScalarOperandTest, ParallelAndHalfPrecisionPathsReadTheScalarEverywhere) {
  const int64_t n = 100003;  // several parallel chunks, and a ragged last block
  Array big = Make<float>(std::vector<float>(n, 1.5f));
  for (float v : lax::add(big, Array::Scalar(2, float32)).to_vector<float>()) ASSERT_EQ(v, 3.5f);
  for (float v : lax::div(Array::Scalar(3, float32), big).to_vector<float>()) ASSERT_EQ(v, 2.0f);
  Array half = big.astype(bfloat16);
  for (float v : lax::mul(Array::Scalar(2, bfloat16), half).to_vector<float>()) ASSERT_EQ(v, 3.0f);
  Array ints = Make<int32_t>(std::vector<int32_t>(n, 7));
  for (int v : lax::rem(ints, Array::Scalar(4, int32)).to_vector<int>()) ASSERT_EQ(v, 3);
  for (bool v : lax::eq(ints, Array::Scalar(7, int32)).to_vector<bool>()) ASSERT_TRUE(v);
}

TEST(ScalarOperandTest, WeakScalarsStayZeroD) {
  // A C++ scalar is bound as a 0-d operand, not materialized to the other operand's shape.
  ClosedJaxpr j = make_jaxpr([](const Array& x) { return lax::add(x, 1.0); })(Make<float>({1, 2, 3}));
  EXPECT_EQ(j.ToString(), "{ lambda ; a:f32[3]. let b:f32[3] = add a 1.0:f32[] in (b,) }");
}

TEST(ScalarOperandTest, TransformsOfZeroDOperands) {
  const Array s = Array::Scalar(2, float32);
  const Array v = Make<float>({1, 2, 4});
  auto call = [](Array (*op)(const Array&, const Array&)) {
    return [op](absl::Span<const Array> a) { return Arrays{op(a[0], a[1])}; };
  };
  // Reverse mode: a broadcast 0-d operand's cotangent is summed back to shape ().
  auto [outs, pullback] = VjpCall(call(lax::mul), {s, v});
  Arrays cts = pullback({Make<float>({1, 1, 1})});
  EXPECT_EQ(cts[0].shape(), Shape{});
  EXPECT_EQ(cts[0].item<float>(), 7.0f);
  EXPECT_EQ(cts[1].to_vector<float>(), (std::vector<float>{2, 2, 2}));
  auto [outs2, pullback2] = VjpCall(call(lax::sub), {v, s});
  cts = pullback2({Make<float>({1, 1, 1})});
  EXPECT_EQ(cts[1].shape(), Shape{});
  EXPECT_EQ(cts[1].item<float>(), -3.0f);
  auto [outs3, pullback3] = VjpCall(call(lax::div), {s, v});
  EXPECT_EQ(pullback3({Make<float>({1, 1, 1})})[0].item<float>(), 1.75f);
  // Forward mode: the 0-d operand's tangent alone spreads over the output's shape.
  auto [ys, ts] = JvpCall(call(lax::add), {s, v}, {Array::Scalar(1, float32), Array()});
  EXPECT_EQ(ts[0].to_vector<float>(), (std::vector<float>{1, 1, 1}));
  // vmap: a batched 0-d operand against an unbatched shaped one, and the reverse.
  Arrays b = VmapCall(call(lax::mul), {Make<float>({1, 2}), v}, {0, kNotMapped}, {0});
  EXPECT_EQ(b[0].shape(), (Shape{2, 3}));
  EXPECT_EQ(b[0].to_vector<float>(), (std::vector<float>{1, 2, 4, 2, 4, 8}));
  b = VmapCall(call(lax::sub), {s, Make<float>({1, 2, 3, 4, 5, 6}, {3, 2})}, {kNotMapped, 1}, {0});
  EXPECT_EQ(b[0].to_vector<float>(), (std::vector<float>{1, -1, -3, 0, -2, -4}));
}

TEST(ScalarOperandTest, NonZeroDShapesMustStillBeEqual) {
  Array x = Make<float>({1, 2, 3});
  Array m = Make<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  // No rank broadcasting beyond 0-d: [3] against [2,3] is an error naming both shapes.
  ExpectError<ShapeError>([&] { lax::add(x, m); }, {"[add]", "f32[3]", "f32[2,3]", "argument 1"});
  ExpectError<ShapeError>([&] { lax::lt(m, x); }, {"[lt]", "f32[2,3]", "f32[3]"});
  ExpectError<ShapeError>([&] { lax::pow(m, x); }, {"[pow]", "f32[2,3]", "f32[3]"});
  // select_n's cases still need equal shapes (JAX's rule); a strong 0-d case is an error.
  ExpectError<ShapeError>([&] { lax::select(lax::lt(x, 2.0), x, Array::Scalar(0, float32)); },
                          {"[select_n]", "f32[3]", "f32[]"});
}

// ---- Integer semantics (XLA).

TEST(IntegerSemanticsTest, DivisionAndRemainderNeverCrash) {
  const int32_t kMin = std::numeric_limits<int32_t>::min();
  Array a = Make<int32_t>({7, -7, 7, kMin, kMin, 5});
  Array b = Make<int32_t>({2, 2, 0, -1, 0, -3});
  EXPECT_EQ(lax::div(a, b).to_vector<int32_t>(), (std::vector<int32_t>{3, -3, -1, kMin, -1, -1}));
  EXPECT_EQ(lax::rem(a, b).to_vector<int32_t>(), (std::vector<int32_t>{1, -1, 7, 0, kMin, 2}));
  Array ua = Make<uint32_t>({7, 9}), ub = Make<uint32_t>({0, 4});
  EXPECT_EQ(lax::div(ua, ub).to_vector<uint32_t>(), (std::vector<uint32_t>{0xffffffffu, 2}));
  EXPECT_EQ(lax::rem(ua, ub).to_vector<uint32_t>(), (std::vector<uint32_t>{7, 1}));
  const int64_t kMin64 = std::numeric_limits<int64_t>::min();
  EXPECT_EQ(lax::div(Make<int64_t>({kMin64}), Make<int64_t>({-1})).item<int64_t>(), kMin64);
  EXPECT_EQ(lax::div(Make<int8_t>({-128}), Make<int8_t>({-1})).item<int>(), -128);
}

TEST(IntegerSemanticsTest, ArithmeticWraps) {
  const int32_t kMax = std::numeric_limits<int32_t>::max(), kMin = std::numeric_limits<int32_t>::min();
  EXPECT_EQ(lax::add(Make<int32_t>({kMax}), Make<int32_t>({1})).item<int32_t>(), kMin);
  EXPECT_EQ(lax::sub(Make<int32_t>({kMin}), Make<int32_t>({1})).item<int32_t>(), kMax);
  EXPECT_EQ(lax::mul(Make<uint16_t>({65535}), Make<uint16_t>({65535})).item<int>(), 1);
  EXPECT_EQ(lax::mul(Make<int64_t>({int64_t{1} << 62}), Make<int64_t>({4})).item<int64_t>(), 0);
  EXPECT_EQ(lax::neg(Make<int32_t>({kMin})).item<int32_t>(), kMin);
  EXPECT_EQ(lax::abs(Make<int32_t>({kMin})).item<int32_t>(), kMin);
  EXPECT_EQ(lax::neg(Make<uint8_t>({3})).item<int>(), 253);
  EXPECT_EQ(lax::square(Make<int16_t>({300})).item<int>(), static_cast<int16_t>(90000));
  EXPECT_EQ(lax::integer_pow(Make<int32_t>({3}), 21).item<int64_t>(),
            static_cast<int32_t>(static_cast<uint32_t>(10460353203LL)));
  EXPECT_EQ(lax::sign(Make<int8_t>({-5, 0, 7})).to_vector<int>(), (std::vector<int>{-1, 0, 1}));
  EXPECT_EQ(lax::sign(Make<uint8_t>({0, 7})).to_vector<int>(), (std::vector<int>{0, 1}));
  EXPECT_EQ(lax::bitwise_not(Make<uint8_t>({0, 0xf0})).to_vector<int>(), (std::vector<int>{255, 15}));
  EXPECT_EQ(lax::bitwise_not(MakeBool({true, false})).to_vector<bool>(), (std::vector<bool>{false, true}));
}

TEST(IntegerSemanticsTest, ShiftsSaturateAtTheBitWidth) {
  Array x = Make<int32_t>({1, 1, 1, -8, -8, -8, -8});
  Array s = Make<int32_t>({31, 32, -1, 1, 31, 32, 100});
  EXPECT_EQ(lax::shift_left(x, s).to_vector<int64_t>(),
            (std::vector<int64_t>{std::numeric_limits<int32_t>::min(), 0, 0, -16, 0, 0, 0}));
  EXPECT_EQ(lax::shift_right_arithmetic(x, s).to_vector<int32_t>(), (std::vector<int32_t>{0, 0, 0, -4, -1, -1, -1}));
  EXPECT_EQ(lax::shift_right_logical(x, s).to_vector<int64_t>(),
            (std::vector<int64_t>{0, 0, 0, 0x7ffffffc, 1, 0, 0}));
  // Unsigned arithmetic shifts treat the bits as signed (XLA's AShr).
  EXPECT_EQ(lax::shift_right_arithmetic(Make<uint32_t>({0x80000000u}), Make<uint32_t>({1})).item<uint32_t>(),
            0xc0000000u);
  EXPECT_EQ(lax::shift_right_logical(Make<int8_t>({-1}), Make<int8_t>({1})).item<int>(), 127);
}

TEST(IntegerSemanticsTest, PowFollowsXla) {
  Array b = Make<int32_t>({2, 1, -1, 5, -3, 2});
  Array e = Make<int32_t>({10, -5, -1, -1, 3, 0});
  EXPECT_EQ(lax::pow(b, e).to_vector<int32_t>(), (std::vector<int32_t>{1024, 1, 0, 0, -27, 1}));
  // XLA squares over the exponent's low 6 bits only.
  EXPECT_EQ(lax::pow(Make<int64_t>({3}), Make<int64_t>({65})).item<int64_t>(), 3);
  // Float base with an integer exponent.
  Array f = lax::pow(Make<float>({2, 9, -2}), Make<int32_t>({-2, 2, 3}));
  EXPECT_EQ(f.dtype(), float32);
  const std::vector<float> fv = f.to_vector<float>();
  EXPECT_FLOAT_EQ(fv[0], 0.25f);
  EXPECT_FLOAT_EQ(fv[1], 81);
  EXPECT_FLOAT_EQ(fv[2], -8);
  ExpectError<TypeError>([&] { lax::pow(Make<int32_t>({2}), Make<float>({2})); }, {"[pow]", "i32[]", "f32[]"});
}

// ---- Float semantics.

TEST(FloatSemanticsTest, MaxMinPropagateNaNAndOrderZeros) {
  Array a = Make<float>({kNaNf, 1, -0.0f, 0.0f, 3});
  Array b = Make<float>({1, kNaNf, 0.0f, -0.0f, -kInff});
  auto mx = lax::max(a, b).to_vector<float>();
  auto mn = lax::min(a, b).to_vector<float>();
  EXPECT_TRUE(std::isnan(mx[0]) && std::isnan(mx[1]) && std::isnan(mn[0]) && std::isnan(mn[1]));
  EXPECT_FALSE(std::signbit(mx[2]));
  EXPECT_FALSE(std::signbit(mx[3]));
  EXPECT_TRUE(std::signbit(mn[2]));
  EXPECT_TRUE(std::signbit(mn[3]));
  EXPECT_EQ(mx[4], 3);
  EXPECT_EQ(mn[4], -kInff);
  EXPECT_EQ(lax::max(MakeBool({true, false}), MakeBool({false, false})).to_vector<bool>(),
            (std::vector<bool>{true, false}));
  // Large arrays take the packet path: NaN still propagates from either side.
  std::vector<float> big(100000, 1.0f), other(100000, 2.0f);
  big[77777] = kNaNf;
  other[12345] = kNaNf;
  auto r = lax::max(Make<float>(big), Make<float>(other)).to_vector<float>();
  EXPECT_TRUE(std::isnan(r[77777]));
  EXPECT_TRUE(std::isnan(r[12345]));
  EXPECT_EQ(r[0], 2.0f);
}

TEST(FloatSemanticsTest, SignRoundAndIsFinite) {
  auto s = lax::sign(Make<float>({-0.0f, 0.0f, kNaNf, -3, 2})).to_vector<float>();
  EXPECT_TRUE(std::signbit(s[0]) && s[0] == 0);
  EXPECT_TRUE(!std::signbit(s[1]) && s[1] == 0);
  EXPECT_TRUE(std::isnan(s[2]));
  EXPECT_EQ(s[3], -1);
  EXPECT_EQ(s[4], 1);
  Array x = Make<float>({2.5f, -2.5f, 0.5f, 1.5f});
  EXPECT_EQ(lax::round(x).to_vector<float>(), (std::vector<float>{3, -3, 1, 2}));
  EXPECT_EQ(lax::round(x, 1).to_vector<float>(), (std::vector<float>{2, -2, 0, 2}));
  Array f = lax::is_finite(Make<double>({1, kInff, -kInff, kNaNf}));
  EXPECT_EQ(f.dtype(), bool_);
  EXPECT_EQ(f.to_vector<bool>(), (std::vector<bool>{true, false, false, false}));
  EXPECT_EQ(lax::is_finite(Make<float>({1, kNaNf}).astype(float16)).to_vector<bool>(), (std::vector<bool>{true, false}));
}

TEST(FloatSemanticsTest, ExpNearOverflowAndExp2) {
  auto e = lax::exp(Make<float>({88.7f, 89.0f, -kInff, kNaNf})).to_vector<float>();
  EXPECT_NEAR(e[0] / std::exp(88.7f), 1.0f, 1e-6f);
  EXPECT_EQ(e[1], kInff);
  EXPECT_EQ(e[2], 0);
  EXPECT_TRUE(std::isnan(e[3]));
  auto p = lax::exp2(Make<float>({10, -3, 127.5f, 128, -kInff, kInff, kNaNf, 0.5f})).to_vector<float>();
  EXPECT_EQ(p[0], 1024);
  EXPECT_EQ(p[1], 0.125f);
  EXPECT_NEAR(p[2] / std::exp2(127.5f), 1.0f, 1e-6f);
  EXPECT_EQ(p[3], kInff);
  EXPECT_EQ(p[4], 0);
  EXPECT_EQ(p[5], kInff);
  EXPECT_TRUE(std::isnan(p[6]));
  EXPECT_NEAR(p[7], std::sqrt(2.0f), 2e-7f);
}

TEST(FloatSemanticsTest, SpecialFunctions) {
  // erf_inv inverts erf, with +-inf at +-1 and NaN outside.
  std::vector<double> xs = {-0.999999, -0.9, -0.3, 0, 1e-8, 0.2, 0.7, 0.99, 0.9999999999};
  auto y = lax::erf_inv(Make<double>(xs)).to_vector<double>();
  for (size_t i = 0; i < xs.size(); ++i) EXPECT_NEAR(std::erf(y[i]), xs[i], 1e-15 + 1e-14 * std::fabs(xs[i])) << xs[i];
  auto yf = lax::erf_inv(Make<float>({-1, 1, 1.5f, 0.5f})).to_vector<float>();
  EXPECT_EQ(yf[0], -kInff);
  EXPECT_EQ(yf[1], kInff);
  EXPECT_TRUE(std::isnan(yf[2]));
  EXPECT_NEAR(yf[3], 0.4769362762044699f, 1e-6f);
  auto lg = lax::lgamma(Make<double>({-0.5, 0, -2, 10})).to_vector<double>();
  EXPECT_NEAR(lg[0], std::lgamma(-0.5), 1e-14);
  EXPECT_EQ(lg[1], std::numeric_limits<double>::infinity());
  EXPECT_EQ(lg[2], std::numeric_limits<double>::infinity());
  EXPECT_NEAR(lg[3], std::log(362880.0), 1e-12);
  auto dg = lax::digamma(Make<double>({1, 0, -3, -0.5})).to_vector<double>();
  EXPECT_NEAR(dg[0], -0.5772156649015329, 1e-15);
  EXPECT_TRUE(std::isnan(dg[1]));
  EXPECT_TRUE(std::isnan(dg[2]));
  EXPECT_NEAR(dg[3], 0.03648997397857652, 1e-14);
}

TEST(FloatSemanticsTest, NextafterStepsInTheDtype) {
  EXPECT_EQ(lax::nextafter(Make<float>({1}), Make<float>({2})).item<float>(), std::nextafter(1.0f, 2.0f));
  EXPECT_EQ(lax::nextafter(Make<float>({0}), Make<float>({-1})).item<float>(), -std::numeric_limits<float>::denorm_min());
  Array one = Make<float>({1}).astype(bfloat16), two = Make<float>({2}).astype(bfloat16);
  EXPECT_EQ(lax::nextafter(one, two).item<float>(), 1.0f + 1.0f / 128);
  Array h1 = Make<float>({1}).astype(float16), h0 = Make<float>({0}).astype(float16);
  EXPECT_EQ(lax::nextafter(h1, h0).item<float>(), 1.0f - 1.0f / 2048);
}

TEST(FloatSemanticsTest, IntegerPowOnFloats) {
  EXPECT_EQ(lax::integer_pow(Make<float>({2, -3}), 3).to_vector<float>(), (std::vector<float>{8, -27}));
  EXPECT_EQ(lax::integer_pow(Make<float>({2, kNaNf}), 0).to_vector<float>(), (std::vector<float>{1, 1}));
  EXPECT_EQ(lax::integer_pow(Make<double>({2, -4}), -2).to_vector<double>(), (std::vector<double>{0.25, 0.0625}));
  ExpectError<TypeError>([] { lax::integer_pow(Make<int32_t>({2}), -1); }, {"[integer_pow]", "i32[]", "negative"});
}

// ---- Conversions.

TEST(ConvertTest, FloatToIntTruncatesSaturatesAndZeroesNaN) {
  Array x = Make<float>({1.7f, -1.7f, 3e9f, -3e9f, kNaNf, kInff, -kInff});
  EXPECT_EQ(lax::convert_element_type(x, int32).to_vector<int64_t>(),
            (std::vector<int64_t>{1, -1, 2147483647, -2147483648LL, 0, 2147483647, -2147483648LL}));
  EXPECT_EQ(lax::convert_element_type(x, uint8).to_vector<int>(), (std::vector<int>{1, 0, 255, 0, 0, 255, 0}));
  EXPECT_EQ(lax::convert_element_type(Make<double>({1e300, -1e300}), int64).to_vector<int64_t>(),
            (std::vector<int64_t>{std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min()}));
  EXPECT_EQ(lax::convert_element_type(Make<float>({1e30f}), uint64).item<uint64_t>(),
            std::numeric_limits<uint64_t>::max());
}

TEST(ConvertTest, IntegersWrapAndBoolIsNonzero) {
  EXPECT_EQ(lax::convert_element_type(Make<int32_t>({300, -129}), int8).to_vector<int>(), (std::vector<int>{44, 127}));
  EXPECT_EQ(lax::convert_element_type(Make<uint8_t>({200}), int8).item<int>(), -56);
  EXPECT_EQ(lax::convert_element_type(Make<float>({0.5f, 0, -0.0f, kNaNf}), bool_).to_vector<bool>(),
            (std::vector<bool>{true, false, false, true}));
  EXPECT_EQ(lax::convert_element_type(MakeBool({true, false}), float32).to_vector<float>(),
            (std::vector<float>{1, 0}));
}

TEST(ConvertTest, F64ToF16RoundsOnce) {
  // Just above the midpoint between 1 and 1 + 2^-10: through f32 it becomes the midpoint and
  // ties to 1; rounded once it goes up.
  const double d = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  EXPECT_EQ(lax::convert_element_type(Make<double>({d}), float16).item<float>(), 1.0f + std::ldexp(1.0f, -10));
  EXPECT_EQ(lax::convert_element_type(Make<double>({1e6, -1e-9}), float16).to_vector<float>()[0], kInff);
}

TEST(ConvertTest, WeakTypeParamAndIdentity) {
  Array x = Make<float>({1, 2});
  Array w = lax::convert_element_type(x, float32, /*weak_type=*/true);
  EXPECT_TRUE(w.weak_type());
  EXPECT_EQ(w.dtype(), float32);
  Array same = lax::convert_element_type(x, float32);
  EXPECT_EQ(same.buffer().get(), x.buffer().get());  // identity, as JAX
  Array i = lax::convert_element_type(Array(2.0), int32, true);
  EXPECT_TRUE(i.weak_type());
  EXPECT_EQ(i.item<int>(), 2);
}

TEST(ConvertTest, BitcastConvertType) {
  EXPECT_EQ(lax::bitcast_convert_type(Make<float>({1.0f}), uint32).item<uint32_t>(), 0x3f800000u);
  Array bytes = lax::bitcast_convert_type(Make<float>({1.0f, -2.0f}), uint8);
  EXPECT_EQ(bytes.shape(), (Shape{2, 4}));
  EXPECT_EQ(bytes.to_vector<int>(), (std::vector<int>{0, 0, 0x80, 0x3f, 0, 0, 0, 0xc0}));
  Array back = lax::bitcast_convert_type(bytes, float32);
  EXPECT_EQ(back.shape(), (Shape{2}));
  EXPECT_EQ(back.to_vector<float>(), (std::vector<float>{1.0f, -2.0f}));
  EXPECT_EQ(lax::bitcast_convert_type(Make<uint16_t>({0x3f80}), bfloat16).item<float>(), 1.0f);
  ExpectError<ShapeError>([] { lax::bitcast_convert_type(Make<uint8_t>({1, 2, 3}), float32); },
                          {"[bitcast_convert_type]", "u8[3]", "float32"});
  ExpectError<TypeError>([] { lax::bitcast_convert_type(MakeBool({true}), uint8); }, {"[bitcast_convert_type]", "bool"});
}

TEST(ConvertTest, ReducePrecisionMatchesRoundTrips) {
  std::vector<float> v;
  for (int i = -2000; i < 2000; ++i) v.push_back(static_cast<float>(i) * 0.01234567f + 1e-3f * static_cast<float>(i % 7));
  Array x = Make<float>(v);
  EXPECT_EQ(lax::reduce_precision(x, 8, 7).to_vector<float>(), x.astype(bfloat16).astype(float32).to_vector<float>());
  EXPECT_EQ(lax::reduce_precision(x, 5, 10).to_vector<float>(), x.astype(float16).astype(float32).to_vector<float>());
  auto r = lax::reduce_precision(Make<float>({1e5f, 1e-6f, kNaNf, -kInff}), 5, 10).to_vector<float>();
  EXPECT_EQ(r[0], kInff);  // overflows f16's range
  EXPECT_EQ(r[1], 0);      // below f16's normal range: flushed
  EXPECT_TRUE(std::isnan(r[2]));
  EXPECT_EQ(r[3], -kInff);
  ExpectError<ValueError>([] { lax::reduce_precision(Make<float>({1}), 0, 3); }, {"[reduce_precision]", "f32[]"});
}

// ---- select_n and clamp.

TEST(SelectTest, SelectNAndSelect) {
  Array x = Make<float>({1, 2, 3}), y = Make<float>({10, 20, 30});
  EXPECT_EQ(lax::select(MakeBool({true, false, true}), x, y).to_vector<float>(), (std::vector<float>{1, 20, 3}));
  EXPECT_EQ(lax::select(MakeBool({true, false, true}), x, 0.0).to_vector<float>(), (std::vector<float>{1, 0, 3}));
  Array which = Make<int32_t>({2, 0, 1});
  EXPECT_EQ(lax::select_n(which, {x, y, lax::neg(x)}).to_vector<float>(), (std::vector<float>{-1, 2, 30}));
  EXPECT_EQ(lax::select_n(Array::Scalar(1, int32), {x, y}).to_vector<float>(), (std::vector<float>{10, 20, 30}));
  ExpectError<TypeError>([&] { lax::select_n(MakeBool({true, false, true}), {x, y, x}); }, {"[select_n]", "3 cases"});
  ExpectError<ShapeError>([&] { lax::select_n(MakeBool({true, false}), {x, y}); }, {"[select_n]", "bool[2]", "f32[3]"});
  ExpectError<TypeError>([&] { lax::select_n(x, {x, y}); }, {"[select_n]", "f32[3]"});
  ExpectError<TypeError>([&] { lax::select_n(MakeBool({true, false, true}), {x, which}); },
                         {"[select_n]", "f32[3]", "i32[3]"});
  EXPECT_EQ(lax::select_n(MakeBool({false, false, true}), {x, y}).to_vector<float>(), (std::vector<float>{1, 2, 30}));
  // A single case is returned whatever `which` says.
  EXPECT_EQ(lax::select_n(Array(true), {x}).to_vector<float>(), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(lax::select_n(MakeBool({true, false, true}), {y}).to_vector<float>(), (std::vector<float>{10, 20, 30}));
}

TEST(SelectTest, Clamp) {
  Array x = Make<float>({-5, 0.5f, 5});
  EXPECT_EQ(lax::clamp(0.0, x, 1.0).to_vector<float>(), (std::vector<float>{0, 0.5f, 1}));
  EXPECT_EQ(lax::clamp(Make<float>({-6, 1, 2}), x, Make<float>({-5.5f, 2, 3})).to_vector<float>(),
            (std::vector<float>{-5.5f, 1, 3}));
  EXPECT_EQ(lax::clamp(Make<int8_t>({-1}), Make<int8_t>({-100, 0, 100}), Make<int8_t>({5})).to_vector<int>(),
            (std::vector<int>{-1, 0, 5}));
  ExpectError<ShapeError>([&] { lax::clamp(Make<float>({0, 1}), x, 1.0); }, {"[clamp]", "f32[2]", "f32[3]"});
  ExpectError<TypeError>([&] { lax::clamp(Make<int32_t>({0}), x, 1.0); }, {"[clamp]", "i32[]", "f32[3]"});
}

// ---- Bad inputs: the op, the avals and the argument are named; the next call works.

TEST(BadInputTest, ErrorsNameTheOpAndAvals) {
  Array x = Make<float>({1, 2, 3}), y = Make<float>({1, 2, 3, 4});
  ExpectError<ShapeError>([&] { lax::add(x, y); }, {"[add]", "f32[3]", "f32[4]", "argument 1"});
  ExpectError<TypeError>([&] { lax::mul(x, Make<int32_t>({1, 2, 3})); }, {"[mul]", "f32[3]", "i32[3]", "int32"});
  ExpectError<TypeError>([] { lax::sin(Make<int32_t>({1})); }, {"[sin]", "int32", "i32[]"});
  ExpectError<TypeError>([] { lax::add(MakeBool({true}), MakeBool({true})); }, {"[add]", "bool"});
  ExpectError<TypeError>([&] { lax::shift_left(x, x); }, {"[shift_left]", "float32"});
  ExpectError<TypeError>([&] { lax::bitwise_not(x); }, {"[not]", "float32"});
  ExpectError<TypeError>([] { lax::abs(Make<uint32_t>({1})); }, {"[abs]", "uint32"});
  ExpectError<TypeError>([&] { lax::lt(x, Make<double>({1, 2, 3})); }, {"[lt]", "f32[3]", "f64[3]"});
  ExpectError<ValueError>([&] { lax::round(x, 2); }, {"[round]", "rounding_method", "f32[3]"});
  ExpectError<ValueError>([] { lax::neg(Array()); }, {"neg"});
  // The process keeps working.
  EXPECT_EQ(lax::add(x, x).to_vector<float>(), (std::vector<float>{2, 4, 6}));
  EXPECT_EQ(lax::sin(Make<float>({0})).item<float>(), 0);
}

// ---- 16-bit floats compute in f32 and round once; large arrays take the parallel path.

TEST(HalfPrecisionTest, ComputesInF32AndRoundsOnce) {
  Array a = Make<float>({2048, 1, 3}).astype(float16), b = Make<float>({1, 3, 7}).astype(float16);
  EXPECT_EQ(lax::add(a, b).to_vector<float>(), (std::vector<float>{2048, 4, 10}));
  EXPECT_EQ(lax::div(b, a).astype(float32).to_vector<float>()[2], static_cast<float>(float16_t(7.0f / 3.0f)));
  Array big = lax::tanh(Make<float>(std::vector<float>(200000, 0.5f)).astype(bfloat16));
  for (float v : big.to_vector<float>()) ASSERT_EQ(v, static_cast<float>(bfloat16_t(std::tanh(0.5f))));
}

}  // namespace
}  // namespace jx::elementwise_test

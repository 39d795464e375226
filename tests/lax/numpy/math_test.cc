// jnp elementwise math and Array operators: JAX promotion (weak C++ scalars), broadcasting,
// NumPy semantics of the compound functions, and bad input.
#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include <gtest/gtest.h>

#include <jx/jx.h>

namespace jx::math_test {
namespace {

namespace jnp = jx::numpy;
const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

void ExpectMessageHas(const std::exception& e, std::initializer_list<std::string> parts) {
  for (const std::string& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
}

TEST(JnpPromotionTest, WeakScalarsKeepArrayDtype) {
  Array f32 = jnp::array({1.f, 2.f});
  EXPECT_EQ((f32 * 2.0).dtype(), float32);
  EXPECT_EQ((2.0 * f32).dtype(), float32);
  EXPECT_EQ((f32 + 1).dtype(), float32);
  EXPECT_FALSE((f32 * 2.0).weak_type());
  Array bf = jnp::ones({2}, bfloat16);
  EXPECT_EQ((bf * 2.0).dtype(), bfloat16);
  Array h = jnp::ones({2}, float16);
  EXPECT_EQ((h - 1).dtype(), float16);
  Array i8 = jnp::ones({2}, int8);
  EXPECT_EQ((i8 + 1).dtype(), int8);
  EXPECT_EQ((i8 * 3).to_vector<int>(), (std::vector<int>{3, 3}));
  // A weak float against an integer array: float32, still weak (JAX: int32 + 2.5).
  Array i32 = jnp::arange(3);
  Array r = i32 + 2.5;
  EXPECT_EQ(r.dtype(), float32);
  EXPECT_TRUE(r.weak_type());
  EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{2.5f, 3.5f, 4.5f}));
  EXPECT_EQ((jnp::ones({2}, uint8) + 300).dtype(), uint8);
  EXPECT_EQ((jnp::ones({2}, int64) * 2).dtype(), int64);
}

TEST(JnpPromotionTest, ScalarGoesStraightToTheResultDtype) {
  // 0.1 multiplies a float64 array as the double 0.1, not float32(0.1).
  Array x = jnp::array({1.0, 3.0});
  EXPECT_EQ((x * 0.1).to_vector<double>(), (std::vector<double>{0.1, 3.0 * 0.1}));
  EXPECT_EQ(jnp::multiply(x, 0.1).to_vector<double>()[0], 0.1);
  EXPECT_EQ((0.1 + x).to_vector<double>()[0], 1.1);
  // Large int64 scalars stay exact.
  Array big = jnp::zeros({1}, int64);
  EXPECT_EQ((big + int64_t{9007199254740993}).to_vector<int64_t>()[0], 9007199254740993);
}

TEST(JnpPromotionTest, StrongLattice) {
  Array u8 = jnp::ones({2}, uint8), i8 = jnp::ones({2}, int8);
  EXPECT_EQ((u8 + i8).dtype(), int16);
  EXPECT_EQ((jnp::ones({2}, bfloat16) + jnp::ones({2}, float16)).dtype(), float32);
  EXPECT_EQ((jnp::ones({2}, int32) + jnp::ones({2}, float16)).dtype(), float16);
  EXPECT_EQ((jnp::ones({2}, uint32) + jnp::ones({2}, int32)).dtype(), int64);
  EXPECT_EQ((jnp::ones({2}, float32) + jnp::ones({2}, float64)).dtype(), float64);
  EXPECT_EQ(jnp::result_type({u8, i8, 1.0}), float32);
  EXPECT_EQ(jnp::result_type({jnp::ones({1}, bfloat16), 1.0}), bfloat16);
  EXPECT_EQ((jnp::array({true}) + jnp::array({true})).dtype(), bool_);
  EXPECT_EQ((jnp::array({true}) + 1).dtype(), int32);
}

TEST(JnpPromotionTest, TrueDivideOfIntsIsFloat32) {
  Array q = jnp::true_divide(jnp::arange(4), 2);
  EXPECT_EQ(q.dtype(), float32);
  EXPECT_EQ(q.to_vector<float>(), (std::vector<float>{0, 0.5f, 1, 1.5f}));
  EXPECT_EQ((jnp::arange(4) / jnp::arange(1, 5)).dtype(), float32);
  EXPECT_EQ((jnp::ones({1}, int64) / 2).dtype(), float32);
  EXPECT_EQ((jnp::ones({1}, float64) / 2).dtype(), float64);
  EXPECT_EQ(jnp::sqrt(jnp::array({4, 9})).to_vector<float>(), (std::vector<float>{2, 3}));
  EXPECT_EQ(jnp::sqrt(jnp::array({4, 9})).dtype(), float32);
}

TEST(BroadcastTest, NumPyRules) {
  Array a = jnp::arange(3).reshape({3, 1});
  Array b = jnp::arange(4);
  Array c = a * 10 + b;
  EXPECT_EQ(c.shape(), (Shape{3, 4}));
  EXPECT_EQ(c.to_vector<int>(), (std::vector<int>{0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23}));
  EXPECT_EQ(jnp::broadcast_shapes({2, 1, 3}, {4, 1}), (Shape{2, 4, 3}));
  EXPECT_EQ(jnp::broadcast_to(jnp::arange(3), {2, 3}).to_vector<int>(), (std::vector<int>{0, 1, 2, 0, 1, 2}));
  try {
    jnp::add(jnp::zeros({3}), jnp::zeros({4}));
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    ExpectMessageHas(e, {"add", "(3,)", "(4,)"});
  }
  EXPECT_THROW(jnp::broadcast_to(jnp::zeros({3}), {4}), ShapeError);
  EXPECT_EQ((jnp::zeros({3}) + jnp::ones({3})).to_vector<float>(), std::vector<float>(3, 1.f));
}

TEST(OperatorsTest, AllOperators) {
  Array x = jnp::array({-3, -1, 0, 2, 5});
  EXPECT_EQ((-x).to_vector<int>(), (std::vector<int>{3, 1, 0, -2, -5}));
  EXPECT_EQ((+x).to_vector<int>(), x.to_vector<int>());
  EXPECT_EQ((x - 1).to_vector<int>(), (std::vector<int>{-4, -2, -1, 1, 4}));
  EXPECT_EQ((1 - x).to_vector<int>(), (std::vector<int>{4, 2, 1, -1, -4}));
  EXPECT_EQ((x % 3).to_vector<int>(), (std::vector<int>{0, 2, 0, 2, 2}));  // Python's sign rule
  EXPECT_EQ((x == 0).to_vector<bool>(), (std::vector<bool>{false, false, true, false, false}));
  EXPECT_EQ((x != 0).dtype(), bool_);
  EXPECT_EQ((x < 0).to_vector<bool>(), (std::vector<bool>{true, true, false, false, false}));
  EXPECT_EQ((x <= 0).to_vector<bool>(), (std::vector<bool>{true, true, true, false, false}));
  EXPECT_EQ((x > 0).to_vector<bool>(), (std::vector<bool>{false, false, false, true, true}));
  EXPECT_EQ((0 >= x).to_vector<bool>(), (std::vector<bool>{true, true, true, false, false}));
  EXPECT_EQ((x == x).to_vector<bool>(), std::vector<bool>(5, true));
  Array m = (x > -2) & (x < 3);
  EXPECT_EQ(m.to_vector<bool>(), (std::vector<bool>{false, true, true, true, false}));
  EXPECT_EQ(((x < -2) | (x > 3)).to_vector<bool>(), (std::vector<bool>{true, false, false, false, true}));
  EXPECT_EQ((~m).to_vector<bool>(), (std::vector<bool>{true, false, false, false, true}));
  EXPECT_EQ((jnp::array({6}) ^ 3).to_vector<int>(), (std::vector<int>{5}));
  EXPECT_EQ((jnp::array({1}) << 4).to_vector<int>(), (std::vector<int>{16}));
  EXPECT_EQ((jnp::array({-16}) >> 2).to_vector<int>(), (std::vector<int>{-4}));
  EXPECT_EQ((jnp::array({0xF0u}) >> 4u).to_vector<uint32_t>(), (std::vector<uint32_t>{0xFu}));
  Array y = jnp::array({1.f, 2.f});
  y += 1.0;
  y *= 2;
  y -= jnp::array({1.f, 1.f});
  y /= 2.0;
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{1.5f, 2.5f}));
  EXPECT_EQ(y.dtype(), float32);
}

TEST(MathTest, FloorDivideAndRemainderFollowPython) {
  Array a = jnp::array({-7, 7, -7, 7, 0});
  Array b = jnp::array({2, -2, -2, 2, 3});
  EXPECT_EQ(jnp::floor_divide(a, b).to_vector<int>(), (std::vector<int>{-4, -4, 3, 3, 0}));
  EXPECT_EQ(jnp::remainder(a, b).to_vector<int>(), (std::vector<int>{1, -1, -1, 1, 0}));
  EXPECT_EQ(jnp::fmod(a, b).to_vector<int>(), (std::vector<int>{-1, 1, -1, 1, 0}));
  Array fa = jnp::array({-7.5, 7.5, -7.5, 7.5});
  Array fb = jnp::array({2.0, -2.0, -2.0, 2.0});
  EXPECT_EQ(jnp::floor_divide(fa, fb).to_vector<double>(), (std::vector<double>{-4, -4, 3, 3}));
  EXPECT_EQ(jnp::remainder(fa, fb).to_vector<double>(), (std::vector<double>{0.5, -0.5, -1.5, 1.5}));
  EXPECT_EQ(jnp::mod(fa, 2.0).to_vector<double>(), (std::vector<double>{0.5, 1.5, 0.5, 1.5}));
  EXPECT_EQ(jnp::floor_divide(jnp::array({7u, 8u}), 2u).to_vector<uint32_t>(), (std::vector<uint32_t>{3u, 4u}));
  EXPECT_EQ(jnp::remainder(jnp::array({5}), 0).to_vector<int>(), (std::vector<int>{0}));  // jnp: x % 0 = 0
}

TEST(MathTest, Power) {
  Array i = jnp::array({-2, 0, 3});
  EXPECT_EQ(jnp::power(i, 3).to_vector<int>(), (std::vector<int>{-8, 0, 27}));
  EXPECT_EQ(jnp::power(i, 3).dtype(), int32);
  EXPECT_EQ(jnp::power(i, jnp::array({2, 0, 4})).to_vector<int>(), (std::vector<int>{4, 1, 81}));
  EXPECT_EQ(jnp::power(jnp::array({2.f, 9.f}), 0.5).to_vector<float>()[1], 3.f);
  EXPECT_EQ(jnp::power(jnp::array({2.0}), 10).to_vector<double>(), (std::vector<double>{1024}));
  EXPECT_EQ(jnp::pow(2, jnp::array({3})).to_vector<int>(), (std::vector<int>{8}));
}

TEST(MathTest, UnaryAndRounding) {
  Array x = jnp::array({-2.5f, -1.5f, -0.5f, 0.5f, 1.5f, 2.5f});
  EXPECT_EQ(jnp::round(x).to_vector<float>(), (std::vector<float>{-2, -2, -0, 0, 2, 2}));  // half to even
  EXPECT_EQ(jnp::rint(x).to_vector<float>(), jnp::round(x).to_vector<float>());
  EXPECT_EQ(jnp::floor(x).to_vector<float>(), (std::vector<float>{-3, -2, -1, 0, 1, 2}));
  EXPECT_EQ(jnp::ceil(x).to_vector<float>(), (std::vector<float>{-2, -1, -0, 1, 2, 3}));
  EXPECT_EQ(jnp::trunc(x).to_vector<float>(), (std::vector<float>{-2, -1, -0, 0, 1, 2}));
  EXPECT_EQ(jnp::round(jnp::array({1.2345}), 2).to_vector<double>(), (std::vector<double>{1.23}));
  EXPECT_EQ(jnp::floor(jnp::array({3})).dtype(), int32);
  EXPECT_EQ(jnp::abs(jnp::array({-1, 2})).to_vector<int>(), (std::vector<int>{1, 2}));
  EXPECT_EQ(jnp::abs(jnp::array({3u})).to_vector<uint32_t>(), (std::vector<uint32_t>{3u}));
  EXPECT_EQ(jnp::sign(jnp::array({-2.0, 0.0, 3.0})).to_vector<double>(), (std::vector<double>{-1, 0, 1}));
  EXPECT_EQ(jnp::sign(jnp::array({0u, 5u})).to_vector<uint32_t>(), (std::vector<uint32_t>{0u, 1u}));
  EXPECT_EQ(jnp::square(jnp::array({-3})).to_vector<int>(), (std::vector<int>{9}));
  EXPECT_EQ(jnp::reciprocal(jnp::array({4.f})).to_vector<float>(), (std::vector<float>{0.25f}));
  EXPECT_EQ(jnp::reciprocal(jnp::array({4})).dtype(), float32);
  EXPECT_NEAR(jnp::exp(1.0).item<double>(), std::exp(1.0f), 1e-6);
  EXPECT_EQ(jnp::exp(1.0).dtype(), float32);
  EXPECT_NEAR(jnp::log2(jnp::array({8.0})).item<double>(), 3.0, 1e-15);
  EXPECT_NEAR(jnp::log10(jnp::array({1000.0})).item<double>(), 3.0, 1e-15);
  EXPECT_NEAR(jnp::arctan2(jnp::array({1.0}), jnp::array({-1.0})).item<double>(), 3 * M_PI / 4, 1e-15);
  EXPECT_NEAR(jnp::hypot(jnp::array({3e200}), jnp::array({4e200})).item<double>(), 5e200, 1e186);
  EXPECT_EQ(jnp::hypot(jnp::array({kInf}), jnp::array({kNaN})).item<double>(), kInf);
  EXPECT_NEAR(jnp::logaddexp(jnp::array({1000.0}), jnp::array({1000.0})).item<double>(), 1000 + std::log(2.0), 1e-12);
  EXPECT_EQ(jnp::logaddexp(jnp::array({-kInf}), jnp::array({-kInf})).item<double>(), -kInf);
  EXPECT_NEAR(jnp::deg2rad(jnp::array({180.0})).item<double>(), M_PI, 1e-15);
  EXPECT_NEAR(jnp::rad2deg(jnp::array({M_PI})).item<double>(), 180.0, 1e-12);
  EXPECT_NEAR(jnp::cbrt(jnp::array({27.0})).item<double>(), 3.0, 1e-14);
  EXPECT_NEAR(jnp::tanh(jnp::array({0.5})).item<double>(), std::tanh(0.5), 1e-15);
  EXPECT_NEAR(jnp::arcsinh(jnp::array({0.5})).item<double>(), std::asinh(0.5), 1e-15);
  EXPECT_NEAR(jnp::expm1(jnp::array({1e-10})).item<double>(), std::expm1(1e-10), 1e-25);
  EXPECT_EQ(jnp::negative(jnp::array({1.5f})).to_vector<float>(), (std::vector<float>{-1.5f}));
}

TEST(MathTest, PredicatesAndClose) {
  Array x = jnp::array({1.0, kNaN, kInf, -kInf});
  EXPECT_EQ(jnp::isnan(x).to_vector<bool>(), (std::vector<bool>{false, true, false, false}));
  EXPECT_EQ(jnp::isinf(x).to_vector<bool>(), (std::vector<bool>{false, false, true, true}));
  EXPECT_EQ(jnp::isfinite(x).to_vector<bool>(), (std::vector<bool>{true, false, false, false}));
  EXPECT_EQ(jnp::isposinf(x).to_vector<bool>(), (std::vector<bool>{false, false, true, false}));
  EXPECT_EQ(jnp::isneginf(x).to_vector<bool>(), (std::vector<bool>{false, false, false, true}));
  EXPECT_EQ(jnp::isfinite(jnp::array({1, 2})).to_vector<bool>(), (std::vector<bool>{true, true}));
  EXPECT_EQ(jnp::isnan(jnp::array({1})).to_vector<bool>(), (std::vector<bool>{false}));
  EXPECT_EQ(jnp::signbit(jnp::array({-0.0f, 0.0f, -2.f})).to_vector<bool>(), (std::vector<bool>{true, false, true}));
  EXPECT_EQ(jnp::signbit(jnp::array({-1, 1})).to_vector<bool>(), (std::vector<bool>{true, false}));
  Array a = jnp::array({1.0, kNaN, kInf, kInf, 1e10});
  Array b = jnp::array({1.0 + 1e-9, kNaN, kInf, -kInf, 1.00001e10});
  EXPECT_EQ(jnp::isclose(a, b).to_vector<bool>(), (std::vector<bool>{true, false, true, false, true}));
  EXPECT_EQ(jnp::isclose(a, b, 1e-5, 1e-8, true).to_vector<bool>(), (std::vector<bool>{true, true, true, false, true}));
  EXPECT_TRUE(jnp::allclose(jnp::array({1.f, 2.f}), jnp::array({1.f, 2.000001f})));
  EXPECT_FALSE(jnp::allclose(jnp::array({1.f, 2.f}), jnp::array({1.f, 2.1f})));
  EXPECT_TRUE(jnp::allclose(jnp::array({1, 2}), jnp::array({1, 2})));
  EXPECT_TRUE(jnp::array_equal(jnp::array({1, 2}), jnp::array({1.0, 2.0})));
  EXPECT_FALSE(jnp::array_equal(jnp::array({1, 2}), jnp::array({1, 2, 3})));
  EXPECT_TRUE(jnp::array_equal(jnp::array({kNaN}), jnp::array({kNaN}), true));
}

TEST(MathTest, LogicalBitwiseWhereClip) {
  Array a = jnp::array({0, 1, 2, 0});
  Array b = jnp::array({0.0, 0.0, 3.0, 1.0});
  EXPECT_EQ(jnp::logical_and(a, b).to_vector<bool>(), (std::vector<bool>{false, false, true, false}));
  EXPECT_EQ(jnp::logical_or(a, b).to_vector<bool>(), (std::vector<bool>{false, true, true, true}));
  EXPECT_EQ(jnp::logical_xor(a, b).to_vector<bool>(), (std::vector<bool>{false, true, false, true}));
  EXPECT_EQ(jnp::logical_not(a).to_vector<bool>(), (std::vector<bool>{true, false, false, true}));
  EXPECT_EQ(jnp::bitwise_and(jnp::array({12}), 10).to_vector<int>(), (std::vector<int>{8}));
  EXPECT_EQ(jnp::bitwise_or(jnp::array({12}), 3).to_vector<int>(), (std::vector<int>{15}));
  EXPECT_EQ(jnp::invert(jnp::array({uint8_t{0}})).to_vector<int>(), (std::vector<int>{255}));
  Array w = jnp::where(jnp::array({true, false, true}), jnp::array({1.f, 2.f, 3.f}), 0.0);
  EXPECT_EQ(w.dtype(), float32);
  EXPECT_EQ(w.to_vector<float>(), (std::vector<float>{1, 0, 3}));
  Array wb = jnp::where(jnp::array({{1}, {0}}), jnp::arange(3), -1);
  EXPECT_EQ(wb.shape(), (Shape{2, 3}));
  EXPECT_EQ(wb.to_vector<int>(), (std::vector<int>{0, 1, 2, -1, -1, -1}));
  Array x = jnp::array({-2.f, 0.5f, 3.f});
  EXPECT_EQ(jnp::clip(x, -1.0, 1.0).to_vector<float>(), (std::vector<float>{-1, 0.5f, 1}));
  EXPECT_EQ(jnp::clip(x, std::nullopt, 1.0).to_vector<float>(), (std::vector<float>{-2, 0.5f, 1}));
  EXPECT_EQ(jnp::clip(x, 0.0, std::nullopt).to_vector<float>(), (std::vector<float>{0, 0.5f, 3}));
  EXPECT_EQ(jnp::maximum(jnp::array({1.0, kNaN}), 2.0).to_vector<double>()[0], 2.0);
  EXPECT_TRUE(std::isnan(jnp::maximum(jnp::array({1.0, kNaN}), 2.0).to_vector<double>()[1]));
  EXPECT_EQ(jnp::fmax(jnp::array({1.0, kNaN}), 2.0).to_vector<double>(), (std::vector<double>{2, 2}));
  EXPECT_EQ(jnp::fmin(jnp::array({kNaN}), jnp::array({kNaN})).to_vector<double>().size(), 1u);
  EXPECT_EQ(jnp::minimum(jnp::array({3, 1}), jnp::array({2, 2})).to_vector<int>(), (std::vector<int>{2, 1}));
  EXPECT_EQ(jnp::nan_to_num(jnp::array({kNaN, kInf, -kInf, 1.0})).to_vector<double>(),
            (std::vector<double>{0, std::numeric_limits<double>::max(), std::numeric_limits<double>::lowest(), 1}));
}

TEST(MathTest, BadInputs) {
  try {
    jnp::bitwise_and(jnp::array({1.f}), jnp::array({2.f}));
    FAIL() << "expected TypeError";
  } catch (const TypeError& e) {
    ExpectMessageHas(e, {"bitwise_and", "f32[1]"});
  }
  try {
    jnp::subtract(jnp::array({true}), jnp::array({false}));
    FAIL() << "expected TypeError";
  } catch (const TypeError& e) {
    ExpectMessageHas(e, {"subtract", "bool[1]"});
  }
  EXPECT_THROW(jnp::left_shift(jnp::array({1.0}), 2), TypeError);
  EXPECT_THROW(jnp::negative(jnp::array({true})), TypeError);
  EXPECT_THROW(jnp::where(jnp::zeros({2}), jnp::zeros({3}), 1.0), ShapeError);
  EXPECT_EQ((jnp::array({1.f}) + 1.0).to_vector<float>(), (std::vector<float>{2.f}));
}

// Compound functions stage a C++ scalar, and their own constants, as literals that lax's
// scalar promotion broadcasts inside the op (JAX's _promote_shapes leaves 0-d operands to
// lax; _lax_const is 0-d): `max a 0.0:f32[]`, `eq b inf:f32[]`. Only select's cases are
// broadcast, as JAX's _where does (select_n takes no 0-d case).
TEST(MathTest, CompoundFunctionsStageScalarLiterals) {
  const Array x = jnp::ones({3});
  auto text = [&x](const std::function<Array(const Array&)>& f) { return make_jaxpr(f)(x).ToString(); };
  EXPECT_EQ(text([](const Array& v) { return jnp::logaddexp(v, 0.0f); }),
            "{ lambda ; a:f32[3]. let\n"
            "    b:f32[3] = max a 0.0:f32[]\n"
            "    c:f32[3] = sub a 0.0:f32[]\n"
            "    d:f32[3] = abs c\n"
            "    e:f32[3] = neg d\n"
            "    f:f32[3] = exp e\n"
            "    g:f32[3] = log1p f\n"
            "    h:f32[3] = add b g\n"
            "    i:f32[3] = add a 0.0:f32[]\n"
            "    j:bool[3] = ne c c\n"
            "    k:f32[3] = select_n j h i\n"
            "  in (k,) }");
  EXPECT_EQ(text([](const Array& v) { return jnp::hypot(v, 2.0f); }),
            "{ lambda ; a:f32[3]. let\n"
            "    b:f32[3] = abs a\n"
            "    c:f32[] = abs 2.0:f32[]\n"
            "    d:bool[] = eq c inf:f32[]\n"
            "    e:bool[3] = eq b inf:f32[]\n"
            "    f:bool[3] = or e d\n"
            "    g:f32[3] = max b c\n"
            "    h:f32[3] = min b c\n"
            "    i:bool[3] = eq g 0.0:f32[]\n"
            "    j:f32[3] = broadcast_in_dim[broadcast_dimensions=() shape=(3,) sharding=None] 1.0:f32[]\n"
            "    k:f32[3] = select_n i g j\n"
            "    l:f32[3] = div h k\n"
            "    m:f32[3] = square l\n"
            "    n:f32[3] = add 1.0:f32[] m\n"
            "    o:f32[3] = sqrt n\n"
            "    p:f32[3] = mul g o\n"
            "    q:f32[3] = select_n i p g\n"
            "    r:f32[3] = broadcast_in_dim[broadcast_dimensions=() shape=(3,) sharding=None] inf:f32[]\n"
            "    s:f32[3] = select_n f q r\n"
            "  in (s,) }");
  EXPECT_EQ(text([](const Array& v) { return jnp::where(v > 0.0f, v, 0.0f); }),
            "{ lambda ; a:f32[3]. let\n"
            "    b:bool[3] = gt a 0.0:f32[]\n"
            "    c:f32[3] = broadcast_in_dim[broadcast_dimensions=() shape=(3,) sharding=None] 0.0:f32[]\n"
            "    d:f32[3] = select_n b c a\n"
            "  in (d,) }");
  EXPECT_EQ(text([](const Array& v) { return jnp::isinf(v); }),
            "{ lambda ; a:f32[3]. let b:f32[3] = abs a; c:bool[3] = eq b inf:f32[] in (c,) }");
  EXPECT_EQ(text([](const Array& v) { return jnp::deg2rad(v); }),
            "{ lambda ; a:f32[3]. let b:f32[3] = mul a 0.017453292:f32[] in (b,) }");
  EXPECT_EQ(text([](const Array& v) { return jnp::remainder(v, 2.0f); }),
            "{ lambda ; a:f32[3]. let\n"
            "    b:f32[3] = rem a 2.0:f32[]\n"
            "    c:bool[3] = ne b 0.0:f32[]\n"
            "    d:bool[] = lt 2.0:f32[] 0.0:f32[]\n"
            "    e:bool[3] = lt b 0.0:f32[]\n"
            "    f:bool[3] = ne e d\n"
            "    g:bool[3] = and f c\n"
            "    h:f32[3] = add b 2.0:f32[]\n"
            "    i:f32[3] = select_n g b h\n"
            "  in (i,) }");
  // Values are unchanged, broadcasting included.
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(jnp::hypot(jnp::array({3.f, 0.f, inf}), 4.0f).to_vector<float>(), (std::vector<float>{5, 4, inf}));
  EXPECT_EQ(jnp::hypot(0.0f, jnp::array({0.f, -2.f})).to_vector<float>(), (std::vector<float>{0, 2}));
  EXPECT_NEAR(jnp::logaddexp(jnp::array({0.f, 1000.f}), 0.0f).to_vector<float>()[0], std::log(2.0f), 1e-6);
  EXPECT_EQ(jnp::logaddexp(jnp::array({0.f, 1000.f}), 0.0f).to_vector<float>()[1], 1000.f);
  EXPECT_EQ(jnp::logaddexp(-inf, jnp::array({-inf})).to_vector<float>()[0], -inf);
}

}  // namespace
}  // namespace jx::math_test

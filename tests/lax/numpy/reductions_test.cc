// jnp reductions: values against naive loops, JAX's accumulation dtypes, axes/keepdims, and
// bad input.
#include <cmath>
#include <limits>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include <jx/jx.h>

namespace jx::reductions_test {
namespace {

namespace jnp = jx::numpy;
const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

// x[i, j, k] = values of a 2x3x4 array, and naive sums along each axis.
std::vector<double> Values(int n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> d(-2, 2);
  std::vector<double> v(static_cast<size_t>(n));
  for (double& x : v) x = d(rng);
  return v;
}

TEST(ReductionsTest, SumAlongAxesMatchesLoops) {
  const std::vector<double> v = Values(24, 1);
  Array x = jnp::array(v, {2, 3, 4});
  // Axis 1.
  std::vector<double> want(8, 0.0);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) want[static_cast<size_t>(i * 4 + k)] += v[static_cast<size_t>(i * 12 + j * 4 + k)];
  Array s1 = jnp::sum(x, 1);
  EXPECT_EQ(s1.shape(), (Shape{2, 4}));
  const std::vector<double> g = s1.to_vector<double>();
  for (size_t i = 0; i < 8; ++i) EXPECT_NEAR(g[i], want[i], 1e-12);
  EXPECT_EQ(jnp::sum(x, 1, true).shape(), (Shape{2, 1, 4}));
  // Axes {0, 2} and all.
  double total = 0;
  for (double d : v) total += d;
  EXPECT_NEAR(jnp::sum(x).item<double>(), total, 1e-12);
  EXPECT_EQ(jnp::sum(x).shape(), Shape{});
  EXPECT_EQ(jnp::sum(x, {}, true).shape(), (Shape{1, 1, 1}));
  EXPECT_NEAR(jnp::sum(jnp::sum(x, {0, 2})).item<double>(), total, 1e-12);
  EXPECT_EQ(jnp::sum(x, {0, -1}).shape(), Shape{3});
  EXPECT_NEAR(jnp::mean(x).item<double>(), total / 24, 1e-12);
  EXPECT_EQ(jnp::mean(x, {0, 2}, true).shape(), (Shape{1, 3, 1}));
}

TEST(ReductionsTest, AccumulationDtypesFollowJax) {
  EXPECT_EQ(jnp::sum(jnp::ones({300}, int8)).dtype(), int32);
  EXPECT_EQ(jnp::sum(jnp::ones({300}, int8)).item<int>(), 300);  // no int8 overflow
  EXPECT_EQ(jnp::sum(jnp::ones({3}, uint16)).dtype(), uint32);
  EXPECT_EQ(jnp::sum(jnp::array({true, true, false})).dtype(), int32);
  EXPECT_EQ(jnp::sum(jnp::array({true, true, false})).item<int>(), 2);
  EXPECT_EQ(jnp::sum(jnp::ones({3}, int64)).dtype(), int64);
  EXPECT_EQ(jnp::prod(jnp::ones({3}, int16)).dtype(), int32);
  EXPECT_EQ(jnp::sum(jnp::ones({3}, float16)).dtype(), float16);
  // float16 accumulates in float32: 4096 + 1 + 1 ... would stall at 2048 in float16.
  EXPECT_EQ(jnp::sum(jnp::ones({3000}, float16)).item<float>(), 3000.f);
  EXPECT_EQ(jnp::sum(jnp::ones({3}, int8), {}, false, int8).dtype(), int8);
  EXPECT_EQ(jnp::mean(jnp::array({1, 2})).dtype(), float32);
  EXPECT_EQ(jnp::mean(jnp::array({1, 2})).item<float>(), 1.5f);
  EXPECT_EQ(jnp::mean(jnp::ones({4}, bfloat16)).dtype(), bfloat16);
  EXPECT_EQ(jnp::max(jnp::array({int8_t{3}, int8_t{-4}})).dtype(), int8);
  EXPECT_EQ(jnp::var(jnp::array({1, 2, 3, 4})).dtype(), float32);
}

TEST(ReductionsTest, MaxMinProdAllAny) {
  Array x = jnp::array({{3.f, -1.f, 7.f}, {2.f, 9.f, -5.f}});
  EXPECT_EQ(jnp::max(x).item<float>(), 9.f);
  EXPECT_EQ(jnp::min(x, 0).to_vector<float>(), (std::vector<float>{2, -1, -5}));
  EXPECT_EQ(jnp::max(x, 1, true).to_vector<float>(), (std::vector<float>{7, 9}));
  EXPECT_EQ(jnp::amax(x, 1).shape(), Shape{2});
  EXPECT_EQ(jnp::ptp(x, 1).to_vector<float>(), (std::vector<float>{8, 14}));
  EXPECT_EQ(jnp::prod(x, 1).to_vector<float>(), (std::vector<float>{-21, -90}));
  EXPECT_TRUE(std::isnan(jnp::max(jnp::array({1.0, kNaN})).item<double>()));
  Array b = jnp::array({{1, 0}, {1, 1}});
  EXPECT_EQ(jnp::all(b, 1).to_vector<bool>(), (std::vector<bool>{false, true}));
  EXPECT_EQ(jnp::any(b, 0).to_vector<bool>(), (std::vector<bool>{true, true}));
  EXPECT_TRUE(jnp::all(jnp::zeros({0})).item<bool>());
  EXPECT_FALSE(jnp::any(jnp::zeros({0})).item<bool>());
  EXPECT_EQ(jnp::count_nonzero(b).item<int>(), 3);
  EXPECT_EQ(jnp::sum(jnp::zeros({0, 3}), 0).to_vector<float>(), std::vector<float>(3, 0.f));
}

// jnp.mean divides by the count as a 0-d literal (JAX's lax.div(sum, normalizer)), not by a
// broadcast of it; f16 sums in f32 and converts back, as JAX's.
TEST(ReductionsTest, MeanDividesByALiteral) {
  EXPECT_EQ(make_jaxpr([](const Array& x) { return jnp::mean(x, 1); })(jnp::ones({2, 4})).ToString(),
            "{ lambda ; a:f32[2,4]. let\n"
            "    b:f32[2] = reduce_sum[axes=(1,)] a\n"
            "    c:f32[2] = div b 4.0:f32[]\n"
            "  in (c,) }");
  EXPECT_EQ(make_jaxpr([](const Array& x) { return jnp::mean(x); })(jnp::ones({3}, float16)).ToString(),
            "{ lambda ; a:f16[3]. let\n"
            "    b:f32[3] = convert_element_type[new_dtype=float32 sharding=None weak_type=False] a\n"
            "    c:f32[] = reduce_sum[axes=(0,)] b\n"
            "    d:f32[] = div c 3.0:f32[]\n"
            "    e:f16[] = convert_element_type[new_dtype=float16 sharding=None weak_type=False] d\n"
            "  in (e,) }");
  EXPECT_EQ(jnp::mean(jnp::array({1.f, 2.f, 4.f, 5.f})).item<float>(), 3.f);
  EXPECT_EQ(jnp::mean(jnp::ones({2, 4}), 1).to_vector<float>(), (std::vector<float>{1, 1}));
}

TEST(ReductionsTest, VarStdDdof) {
  Array x = jnp::array({1.0, 2.0, 3.0, 4.0});
  EXPECT_NEAR(jnp::var(x).item<double>(), 1.25, 1e-15);
  EXPECT_NEAR(jnp::var(x, {}, false, 1).item<double>(), 5.0 / 3.0, 1e-15);
  EXPECT_NEAR(jnp::std(x).item<double>(), std::sqrt(1.25), 1e-15);
  Array m = jnp::array({{1.0, 3.0}, {2.0, 6.0}});
  EXPECT_EQ(jnp::var(m, 0).to_vector<double>(), (std::vector<double>{0.25, 2.25}));
  EXPECT_EQ(jnp::std(m, 1, true).shape(), (Shape{2, 1}));
}

TEST(ReductionsTest, ArgmaxArgmin) {
  Array x = jnp::array({{1.f, 5.f, 5.f}, {7.f, 0.f, -2.f}});
  EXPECT_EQ(jnp::argmax(x).dtype(), int32);
  EXPECT_EQ(jnp::argmax(x).item<int>(), 3);  // flattened
  EXPECT_EQ(jnp::argmax(x, 1).to_vector<int>(), (std::vector<int>{1, 0}));  // first of ties
  EXPECT_EQ(jnp::argmin(x, 0).to_vector<int>(), (std::vector<int>{0, 1, 1}));
  EXPECT_EQ(jnp::argmin(x, -1, true).shape(), (Shape{2, 1}));
  EXPECT_EQ(jnp::argmax(x, std::nullopt, true).shape(), (Shape{1, 1}));
  EXPECT_EQ(jnp::argmax(jnp::array({1.0, kNaN, 3.0})).item<int>(), 1);  // NaN counts as the max
}

TEST(ReductionsTest, CumulativeOps) {
  Array x = jnp::array({{1, 2, 3}, {4, 5, 6}});
  EXPECT_EQ(jnp::cumsum(x).to_vector<int>(), (std::vector<int>{1, 3, 6, 10, 15, 21}));
  EXPECT_EQ(jnp::cumsum(x).shape(), Shape{6});
  EXPECT_EQ(jnp::cumsum(x, 0).to_vector<int>(), (std::vector<int>{1, 2, 3, 5, 7, 9}));
  EXPECT_EQ(jnp::cumprod(x, 1).to_vector<int>(), (std::vector<int>{1, 2, 6, 4, 20, 120}));
  EXPECT_EQ(jnp::cumsum(jnp::ones({3}, int8)).dtype(), int32);
  EXPECT_EQ(jnp::cumsum(jnp::array({true, true})).to_vector<int>(), (std::vector<int>{1, 2}));
  EXPECT_EQ(jnp::cummax(jnp::array({1, 3, 2, 5})).to_vector<int>(), (std::vector<int>{1, 3, 3, 5}));
  EXPECT_EQ(jnp::cummin(jnp::array({4, 3, 5, 1})).to_vector<int>(), (std::vector<int>{4, 3, 3, 1}));
}

TEST(ReductionsTest, Logsumexp) {
  const std::vector<double> v = Values(12, 3);
  Array x = jnp::array(v, {3, 4});
  const std::vector<double> g = jnp::logsumexp(x, 1).to_vector<double>();
  for (int i = 0; i < 3; ++i) {
    double s = 0;
    for (int j = 0; j < 4; ++j) s += std::exp(v[static_cast<size_t>(i * 4 + j)]);
    EXPECT_NEAR(g[static_cast<size_t>(i)], std::log(s), 1e-12);
  }
  // Stable for large values, and an all -inf row gives -inf (not NaN).
  EXPECT_NEAR(jnp::logsumexp(jnp::array({1000.0, 1000.0})).item<double>(), 1000 + std::log(2.0), 1e-12);
  EXPECT_EQ(jnp::logsumexp(jnp::array({-kInf, -kInf})).item<double>(), -kInf);
  EXPECT_EQ(jnp::logsumexp(x, 1, true).shape(), (Shape{3, 1}));
  EXPECT_EQ(jnp::logsumexp(jnp::array({0, 0})).dtype(), float32);
}

TEST(ReductionsTest, BadInputs) {
  try {
    jnp::max(jnp::zeros({0}));
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("max"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("f32[0]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(jnp::argmax(jnp::zeros({0})), ValueError);
  EXPECT_THROW(jnp::sum(jnp::zeros({2, 3}), 2), ValueError);
  EXPECT_THROW(jnp::sum(jnp::zeros({2, 3}), {0, 0}), ValueError);
  EXPECT_EQ(jnp::sum(jnp::ones({2, 3}), 1).to_vector<float>(), (std::vector<float>{3, 3}));
}

}  // namespace
}  // namespace jx::reductions_test

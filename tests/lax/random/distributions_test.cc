// jx::random's choice, gamma family, poisson and closed-form samplers: JAX's printed values
// (tests/random_lax_test.py _RANDOM_VALUES_CASES, threefry2x32 with the original counter
// scheme the test runs under; seeds zlib.adler32(name + "threefry2x32"), compared as its
// assertAllClose at float32's 1e-6), moments of large samples, the gamma sampler's implicit
// derivative against Boost's incomplete gamma function, jit and vmap.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <set>
#include <vector>

#include <boost/math/special_functions/gamma.hpp>
#include <gtest/gtest.h>

#include <jx/jx.h>

namespace jx::distributions_test {
namespace {

namespace jnp = jx::numpy;

void ExpectAllClose(const Array& got, const std::vector<double>& want, double tol = 1e-6) {
  const std::vector<double> g = got.to_vector<double>();
  ASSERT_EQ(g.size(), want.size());
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], want[i], tol + tol * std::fabs(want[i])) << "element " << i;
}

std::pair<double, double> MeanVar(const Array& x) {
  const std::vector<double> v = x.to_vector<double>();
  const double n = static_cast<double>(v.size());
  const double mean = std::accumulate(v.begin(), v.end(), 0.0) / n;
  double var = 0;
  for (double d : v) var += (d - mean) * (d - mean);
  return {mean, var / n};
}

TEST(RandomDistributionValuesTest, JaxRandomValuesCases) {
  ThreefryPartitionableScope original(false);
  ExpectAllClose(random::gamma(random::key(1038747260), 0.8, Shape{5}),
                 {0.332641, 0.10187, 1.816109, 0.023457, 0.487853});
  ExpectAllClose(random::loggamma(random::key(1440221118), 0.8, Shape{5}),
                 {-0.899633, -0.424083, 0.631593, 0.102374, -1.07189});
  ExpectAllClose(random::beta(random::key(923534869), 0.8, 0.9, Shape{5}),
                 {0.533685, 0.843179, 0.063495, 0.573444, 0.459514});
  Array d = random::dirichlet(random::key(1590822961), jnp::array({0.5f, 0.6f, 0.7f}), Shape{2});
  EXPECT_EQ(d.shape(), (Shape{2, 3}));
  ExpectAllClose(d, {0.556287, 0.304219, 0.139494, 0.15221, 0.632251, 0.21554});
  ExpectAllClose(random::cauchy(random::key(1175914230), {5}), {-0.088416, -10.169713, 3.49677, -1.18056, 0.34556},
                 1e-5);
  ExpectAllClose(random::exponential(random::key(1942292768), {5}), {0.526067, 0.043046, 0.039932, 0.46427, 0.123886});
  ExpectAllClose(random::laplace(random::key(1291781963), {5}), {0.578939, -0.204902, 0.555733, 0.911053, -0.96456});
  ExpectAllClose(random::logistic(random::key(1466238935), {5}),
                 {0.19611, -1.709053, -0.274093, -0.208322, -1.675489});
  ExpectAllClose(random::truncated_normal(random::key(2846034731), 0.0, 2.0, {5}),
                 {0.582807, 1.709771, 0.159513, 0.861376, 0.36148});
  Array p = random::poisson(random::key(1349191556), 5, Shape{5});
  EXPECT_EQ(p.dtype(), int32);
  EXPECT_EQ(p.to_vector<int32_t>(), (std::vector<int32_t>{7, 3, 6, 11, 6}));
}

TEST(RandomGammaTest, MomentsAcrossShapes) {
  // Gamma(a): mean a, variance a; both branches (a < 1 boosted, a >= 1) and float64.
  for (double a : {0.3, 1.0, 4.5}) {
    for (DType dt : {float32, float64}) {
      Array x = random::gamma(random::key(7), a, Shape{20000}, dt);
      EXPECT_EQ(x.dtype(), dt);
      auto [mean, var] = MeanVar(x);
      EXPECT_NEAR(mean, a, 0.04 * std::max(a, 1.0)) << a;
      EXPECT_NEAR(var, a, 0.1 * std::max(a, 1.0)) << a;
      EXPECT_GT(jnp::min(x).item<double>(), 0.0);
    }
  }
  // An array of shapes, broadcast against `shape`.
  Array xs = random::gamma(random::key(3), jnp::array({0.5f, 2.f, 8.f}), Shape{4000, 3});
  Array m = jnp::mean(xs, 0);
  ExpectAllClose(m, {0.5, 2.0, 8.0}, 0.06);
  EXPECT_EQ(random::gamma(random::key(3), jnp::ones({2, 3})).shape(), (Shape{2, 3}));
  EXPECT_THROW(random::gamma(random::key(3), 1.0, Shape{2}, int32), ValueError);
  EXPECT_THROW(random::gamma(random::key(3), jnp::ones({3}), Shape{2}), ShapeError);
  // loggamma is log(gamma) for the same key.
  Array g = random::gamma(random::key(5), 0.7, Shape{50}, float64);
  Array lg = random::loggamma(random::key(5), 0.7, Shape{50}, float64);
  EXPECT_TRUE(jnp::allclose(jnp::exp(lg), g, 1e-10));
}

TEST(RandomGammaTest, JitAndVmap) {
  Array key = random::key(11);
  Array a = jnp::array({0.4f, 1.5f, 3.f, 9.f});
  Array eager = random::gamma(key, a);
  auto f = jx::jit([](const Array& k, const Array& a) { return random::gamma(k, a); });
  // Bit-equal: jit's erf_inv (inside normal) is the eager kernel's op sequence (it differed
  // in the last bits, 0.28016248 vs 0.28016254, which the rejection loop carried on).
  EXPECT_TRUE(jnp::array_equal(f(key, a), eager));
  EXPECT_TRUE(jnp::array_equal(jx::jit([](const Array& k) { return random::normal(k, {1000}); })(key),
                               random::normal(key, {1000})));
  // vmap over keys: row i is gamma(keys[i], a).
  Array keys = random::split(key, 3);
  Array rows = jx::vmap([&a](const Array& k) { return random::gamma(k, a); })(keys);
  for (int64_t i = 0; i < 3; ++i) EXPECT_TRUE(jnp::array_equal(rows[i], random::gamma(keys[i], a))) << i;
}

// dx/da of a sample against the implicit-function derivative from Boost's regularized lower
// incomplete gamma P(a, x): -(dP/da) / (dP/dx), dP/da by central differences.
double BoostGammaGrad(double a, double x) {
  const double h = 1e-6 * std::max(1.0, a);
  const double dp_da = (boost::math::gamma_p(a + h, x) - boost::math::gamma_p(a - h, x)) / (2 * h);
  return -dp_da / boost::math::gamma_p_derivative(a, x);
}

TEST(RandomGammaTest, ImplicitReparameterizationGradient) {
  Array key = random::key(2);
  for (double a : {0.2, 0.9, 1.0, 3.0, 25.0, 400.0}) {
    Array alpha = jnp::full({6}, a, float64);
    Array x = random::gamma(key, alpha);
    auto [y, dy] = jx::jvp([&key](const Array& al) { return random::gamma(key, al); }, std::tuple{alpha},
                           std::tuple{jnp::ones({6}, float64)});
    EXPECT_TRUE(jnp::array_equal(y, x));
    const std::vector<double> xs = x.to_vector<double>(), ds = dy.to_vector<double>();
    for (size_t i = 0; i < xs.size(); ++i) {
      const double want = BoostGammaGrad(a, xs[i]);
      EXPECT_NEAR(ds[i], want, 1e-5 * std::max(1.0, std::fabs(want))) << "a=" << a << " x=" << xs[i];
    }
  }
  // Reverse mode: grad of the sum is the same derivative; float32 follows float64 closely.
  Array a32 = jnp::array({0.5f, 2.f, 7.f});
  Array g = jx::grad([&key](const Array& a) { return jnp::sum(random::gamma(key, a)); })(a32);
  const std::vector<float> xs = random::gamma(key, a32).to_vector<float>();
  const std::vector<float> gs = g.to_vector<float>();
  const std::vector<double> as = {0.5, 2.0, 7.0};
  for (size_t i = 0; i < 3; ++i) EXPECT_NEAR(gs[i], BoostGammaGrad(as[i], xs[i]), 1e-3 * std::max(1.0, std::fabs(static_cast<double>(gs[i]))));
  // loggamma's derivative is d log x / da = (dx/da) / x.
  auto [ly, ldy] = jx::jvp([&key](const Array& al) { return random::loggamma(key, al); },
                           std::tuple{jnp::array({0.6, 3.0})}, std::tuple{jnp::ones({2}, float64)});
  const std::vector<double> lx = ly.to_vector<double>(), ld = ldy.to_vector<double>();
  EXPECT_NEAR(ld[0], BoostGammaGrad(0.6, std::exp(lx[0])) / std::exp(lx[0]), 1e-5 * std::fabs(ld[0]) + 1e-8);
  EXPECT_NEAR(ld[1], BoostGammaGrad(3.0, std::exp(lx[1])) / std::exp(lx[1]), 1e-5 * std::fabs(ld[1]) + 1e-8);
}

TEST(RandomGammaTest, NonFiniteParametersTerminate) {
  // The sampler and its derivative series stop on inf/NaN shapes instead of looping.
  auto [y, dy] = jx::jvp([](const Array& al) { return random::gamma(random::key(1), al); },
                         std::tuple{jnp::array({std::numeric_limits<double>::infinity(), std::nan(""), 2.0})},
                         std::tuple{jnp::ones({3}, float64)});
  const std::vector<double> v = y.to_vector<double>(), d = dy.to_vector<double>();
  EXPECT_TRUE(std::isinf(v[0]));
  EXPECT_TRUE(std::isnan(v[1]));
  EXPECT_TRUE(std::isfinite(v[2]) && std::isfinite(d[2]));
}

TEST(RandomTruncatedNormalTest, ArrayBoundsBroadcast) {
  // Bounds per column; the default shape is their broadcast shape.
  Array lo = jnp::array({-1.f, 0.f, 2.f});
  Array hi = jnp::array({1.f, 0.5f, 3.f});
  Array x = random::truncated_normal(random::key(3), lo, hi, Shape{2000, 3});
  EXPECT_EQ(x.shape(), (Shape{2000, 3}));
  EXPECT_TRUE(jnp::all(x > lo).item<bool>());
  EXPECT_TRUE(jnp::all(x < hi).item<bool>());
  EXPECT_EQ(random::truncated_normal(random::key(3), lo, 4.0).shape(), Shape{3});
  // Symmetric bounds: mean 0; (2, 3) is skewed toward 2.
  Array m = jnp::mean(x, 0);
  EXPECT_NEAR(m[0].item<double>(), 0.0, 0.03);
  EXPECT_LT(m[2].item<double>(), 2.5);
  EXPECT_THROW(random::truncated_normal(random::key(3), lo, hi, Shape{2}), ShapeError);
}

TEST(RandomBetaDirichletTest, MomentsAndGradients) {
  auto [mean, var] = MeanVar(random::beta(random::key(4), 2.0, 5.0, Shape{20000}, float64));
  EXPECT_NEAR(mean, 2.0 / 7.0, 0.005);
  EXPECT_NEAR(var, 10.0 / (49.0 * 8.0), 0.002);
  Array d = random::dirichlet(random::key(4), jnp::array({1.0, 2.0, 7.0}), Shape{10000}, float64);
  EXPECT_EQ(d.shape(), (Shape{10000, 3}));
  EXPECT_TRUE(jnp::allclose(jnp::sum(d, 1), jnp::ones({10000}, float64), 1e-12));
  ExpectAllClose(jnp::mean(d, 0), {0.1, 0.2, 0.7}, 0.01);
  EXPECT_THROW(random::dirichlet(random::key(4), jnp::array(1.0)), ValueError);
  // Differentiable in the concentration parameters (through the gamma draws).
  Array key = random::key(9);
  Array g = jx::grad([&key](const Array& a) { return jnp::sum(random::beta(key, a, 2.0, Shape{3}, float64)); })(
      jnp::array({1.0, 2.0, 3.0}));
  for (double v : g.to_vector<double>()) EXPECT_TRUE(std::isfinite(v));
}

TEST(RandomPoissonTest, MomentsForBothAlgorithms) {
  for (double lam : {0.5, 3.0, 12.0, 100.0}) {
    Array k = random::poisson(random::key(8), lam, Shape{20000});
    auto [mean, var] = MeanVar(k);
    EXPECT_NEAR(mean, lam, 0.03 * std::max(lam, 1.0)) << lam;
    EXPECT_NEAR(var, lam, 0.08 * std::max(lam, 1.0)) << lam;
  }
  EXPECT_EQ(random::poisson(random::key(8), 0.0, Shape{4}).to_vector<int32_t>(), (std::vector<int32_t>{0, 0, 0, 0}));
  // vmap over keys: each row is the unbatched draw (the loops' lanes finish independently).
  Array keys = random::split(random::key(8), 3);
  Array lam = jnp::array({2.f, 30.f});
  Array rows = jx::vmap([&lam](const Array& k) { return random::poisson(k, lam, Shape{50, 2}); })(keys);
  for (int64_t i = 0; i < 3; ++i) {
    EXPECT_TRUE(jnp::array_equal(rows[i], random::poisson(keys[i], lam, Shape{50, 2}))) << i;
  }
  EXPECT_EQ(random::poisson(random::key(8), jnp::array({1.f, 20.f}), Shape{3, 2}, int64).dtype(), int64);
}

TEST(RandomClosedFormTest, MedianAndScale) {
  // Laplace(0, 1): E|x| = 1; logistic: var pi^2 / 3; Cauchy: median 0, quartiles -1 and 1.
  Array l = random::laplace(random::key(1), {40000}, float64);
  EXPECT_NEAR(jnp::mean(jnp::abs(l)).item<double>(), 1.0, 0.02);
  EXPECT_NEAR(MeanVar(random::logistic(random::key(1), {40000}, float64)).second, M_PI * M_PI / 3, 0.08);
  Array c = random::cauchy(random::key(1), {40000}, float64);
  ExpectAllClose(jnp::quantile(c, jnp::array({0.25, 0.5, 0.75})), {-1.0, 0.0, 1.0}, 0.03);
  EXPECT_THROW(random::laplace(random::key(1), {2}, int32), ValueError);
}

TEST(RandomRandintTest, ArrayBoundsMatchScalarBounds) {
  // The traced path (array bounds) gives the scalar path's bits, including the JAX value case
  // and the wrapped span of uint8 [0, 256).
  ThreefryPartitionableScope original(false);
  Array k = random::key(1319372649);  // adler32("randintthreefry2x32")
  Array arr = random::randint(k, {5}, jnp::array(int32_t{0}), jnp::array(int32_t{10}));
  EXPECT_EQ(arr.to_vector<int32_t>(), (std::vector<int32_t>{0, 5, 7, 7, 5}));
  for (DType d : {int8, uint8, int16, uint32, int64, uint64}) {
    for (auto [lo, hi] : {std::pair<int64_t, int64_t>{0, 256}, {-5, 7}, {3, 3}, {-300, 70000}}) {
      Array want = random::randint(k, {64}, lo, hi, d);
      Array got = random::randint(k, {64}, jnp::array(lo), jnp::array(hi), d);
      EXPECT_TRUE(jnp::array_equal(got, want)) << dtype_name(d) << " [" << lo << ", " << hi << ")";
      Array mixed = random::randint(k, {64}, lo, jnp::array(static_cast<int32_t>(hi)), d);
      EXPECT_TRUE(jnp::array_equal(mixed, want)) << dtype_name(d) << " [" << lo << ", " << hi << ")";
    }
  }
}

TEST(RandomRandintTest, PerElementBoundsUnderJitAndVmap) {
  Array lo = jnp::array({0, 100, -50});
  Array hi = jnp::array({2, 105, -40});
  auto f = jx::jit([](const Array& k, const Array& lo, const Array& hi) { return random::randint(k, {3000, 3}, lo, hi); });
  Array x = f(random::key(4), lo, hi);
  EXPECT_TRUE(jnp::all(x >= lo).item<bool>());
  EXPECT_TRUE(jnp::all(x < hi).item<bool>());
  EXPECT_TRUE(jnp::array_equal(jnp::max(x, 0), hi - 1));
  EXPECT_TRUE(jnp::array_equal(jnp::min(x, 0), lo));
  // Float bounds truncate (JAX's astype(int)).
  EXPECT_TRUE(jnp::array_equal(random::randint(random::key(4), {8}, jnp::array(1.9f), 4.2),
                               random::randint(random::key(4), {8}, 1, 4)));
  Array keys = random::split(random::key(4), 2);
  Array rows = jx::vmap([](const Array& k, const Array& hi) { return random::randint(k, {4}, 0, hi); })(
      keys, jnp::array({3, 1000}));
  EXPECT_EQ(rows.shape(), (Shape{2, 4}));
  EXPECT_LT(jnp::max(rows[0]).item<int32_t>(), 3);
  EXPECT_THROW(random::randint(random::key(4), {2}, jnp::zeros({3}, int32), 5), ShapeError);
}

TEST(RandomChoiceTest, ShapesReplacementAndWeights) {
  Array key = random::key(0);
  Array x = jnp::arange(100);
  // JAX's testChoice: shapes (), (5,), (4, 5); without replacement the draws are distinct.
  for (const Shape& s : {Shape{}, Shape{5}, Shape{4, 5}}) {
    for (bool replace : {true, false}) {
      for (bool weighted : {false, true}) {
        std::optional<Array> p;
        if (weighted) p = jnp::arange(100, std::optional<DType>(float32));
        Array r = random::choice(key, x, s, replace, p);
        EXPECT_EQ(r.shape(), s);
        EXPECT_EQ(r.dtype(), int32);
        auto f = jx::jit([&](const Array& k) { return random::choice(k, x, s, replace, p); });
        EXPECT_TRUE(jnp::array_equal(f(key), r));
        const std::vector<int32_t> v = r.to_vector<int32_t>();
        if (!replace) {
          EXPECT_EQ(std::set<int32_t>(v.begin(), v.end()).size(), v.size());
        }
        if (weighted) {
          for (int32_t i : v) EXPECT_NE(i, 0);  // p[0] = 0
        }
      }
    }
  }
  // The integer form is arange(n); rows of a 2-D array along axis 1.
  EXPECT_EQ(random::choice(key, 10, {3}).dtype(), int32);
  Array m = jnp::arange(12).reshape({3, 4});
  Array cols = random::choice(key, m, {2}, false, std::nullopt, 1);
  EXPECT_EQ(cols.shape(), (Shape{3, 2}));
  const std::vector<int32_t> cv = cols.to_vector<int32_t>();
  for (int i = 0; i < 2; ++i) EXPECT_EQ(cv[static_cast<size_t>(2 + i)], cv[static_cast<size_t>(i)] + 4);  // same columns
  // Weighted frequencies with replacement.
  Array w = jnp::array({0.1f, 0.2f, 0.7f});
  Array draws = random::choice(key, 3, {30000}, true, w);
  ExpectAllClose(jnp::bincount(draws, std::nullopt, 3, 3).astype(float32) / 30000.f, {0.1, 0.2, 0.7}, 0.02);
  EXPECT_THROW(random::choice(key, x, {101}, false), ValueError);
  EXPECT_THROW(random::choice(key, x, {2}, true, jnp::ones({3})), ValueError);
  EXPECT_EQ(random::choice(key, x, {0}).shape(), Shape{0});
  Array keys = random::split(key, 2);
  Array picks = jx::vmap([&x, &w](const Array& k) {
    return random::choice(k, x, {4}, false, jnp::pad(w, {0, 97}, "constant", 0.01f));
  })(keys);
  for (int64_t i = 0; i < 2; ++i) {
    EXPECT_TRUE(jnp::array_equal(picks[i], random::choice(keys[i], x, {4}, false, jnp::pad(w, {0, 97}, "constant", 0.01f))))
        << i;
  }
}

}  // namespace
}  // namespace jx::distributions_test

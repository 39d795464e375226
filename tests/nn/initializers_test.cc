#include "jx/nn/initializers.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "jx/jx.h"

namespace jx::nn::initializers::initializers_test {
namespace {

namespace jnp = jx::numpy;
namespace jrandom = jx::random;

// The stddev of N(0, 1) truncated to [-2, 2].
constexpr double kTruncatedStddev = 0.87962566103423978;

struct Moments {
  double mean, var, min, max;
  int64_t n;
};

Moments MomentsOf(const Array& x) {
  const Array d = x.astype(float64);
  return {jnp::mean(d).item<double>(), jnp::var(d).item<double>(), jnp::min(d).item<double>(),
          jnp::max(d).item<double>(), d.size()};
}

// Sample mean and variance within 5 standard errors of the expected values: the mean's is
// sigma / sqrt(n), the variance's sigma^2 sqrt((kurtosis - 1) / n) <= sigma^2 sqrt(2 / n) for the
// normal (kurtosis 3), truncated normal (2.36) and uniform (1.8) distributions.
void ExpectMoments(const Array& x, double mean, double var) {
  const Moments m = MomentsOf(x);
  const double n = static_cast<double>(m.n);
  EXPECT_NEAR(m.mean, mean, 5 * std::sqrt(var / n)) << "sample mean of " << m.n;
  EXPECT_NEAR(m.var, var, 5 * var * std::sqrt(2 / n)) << "sample variance of " << m.n;
}

TEST(InitializersTest, Constants) {
  const Array key = jrandom::key(0);
  EXPECT_EQ(zeros(key, {2, 3}).to_vector<float>(), std::vector<float>(6, 0.f));
  EXPECT_EQ(ones(key, {2}, float64).to_vector<double>(), (std::vector<double>{1.0, 1.0}));
  const Array c = constant(0.25)(key, {3});
  EXPECT_EQ(c.dtype(), float32);
  EXPECT_EQ(c.to_vector<float>(), std::vector<float>(3, 0.25f));
  EXPECT_EQ(constant(2.0, int32)(key, {2}).dtype(), int32);
  // zeros and ones are initializers themselves.
  Initializer z = zeros;
  EXPECT_EQ(z(key, {4}).shape(), (Shape{4}));
}

TEST(InitializersTest, NormalUniformTruncatedNormal) {
  const Array key = jrandom::key(1);
  const Shape shape{400, 250};
  ExpectMoments(normal(0.5)(key, shape), 0.0, 0.25);
  const Array u = uniform(2.0)(key, shape);
  ExpectMoments(u, 1.0, 4.0 / 12);
  EXPECT_GE(MomentsOf(u).min, 0.0);
  EXPECT_LT(MomentsOf(u).max, 2.0);
  // No variance correction in the plain truncated_normal: stddev * N(0,1) cut at +-2.
  const Array t = truncated_normal(0.5)(key, shape);
  ExpectMoments(t, 0.0, std::pow(0.5 * kTruncatedStddev, 2));
  EXPECT_GE(MomentsOf(t).min, -1.0);
  EXPECT_LE(MomentsOf(t).max, 1.0);
  const Array t01 = truncated_normal(1.0, float32, 0.0, 1.0)(key, {1000});
  EXPECT_GE(MomentsOf(t01).min, 0.0);
  EXPECT_LE(MomentsOf(t01).max, 1.0);
}

TEST(InitializersTest, DtypeDefaultsToTheFactorysAndCanBeOverridden) {
  const Array key = jrandom::key(2);
  EXPECT_EQ(normal()(key, {2}).dtype(), float32);
  EXPECT_EQ(normal(1.0, float64)(key, {2}).dtype(), float64);
  EXPECT_EQ(normal(1.0, float64)(key, {2}, bfloat16).dtype(), bfloat16);
  EXPECT_EQ(glorot_uniform()(key, {2, 3}, float64).dtype(), float64);
  EXPECT_EQ(he_normal(-2, -1, {}, float16)(key, {2, 3}).dtype(), float16);
  // Same key, same numbers; another key, others.
  EXPECT_EQ(lecun_normal()(key, {8, 8}).to_vector<float>(), lecun_normal()(key, {8, 8}).to_vector<float>());
  EXPECT_NE(lecun_normal()(key, {8, 8}).to_vector<float>(), lecun_normal()(jrandom::key(3), {8, 8}).to_vector<float>());
}

TEST(InitializersTest, ComputeFans) {
  EXPECT_EQ(compute_fans({200, 500}), (std::pair<double, double>{200, 500}));
  // An HWIO conv kernel: the receptive field 3 * 3 multiplies both fans.
  EXPECT_EQ(compute_fans({3, 3, 16, 32}), (std::pair<double, double>{144, 288}));
  // OIHW: in_axis 1, out_axis 0.
  EXPECT_EQ(compute_fans({32, 16, 3, 3}, 1, 0), (std::pair<double, double>{144, 288}));
  // A batch axis is excluded from the receptive field.
  EXPECT_EQ(compute_fans({4, 10, 20}, -2, -1, {0}), (std::pair<double, double>{10, 20}));
  EXPECT_EQ(compute_fans({4, 10, 20}), (std::pair<double, double>{40, 80}));
}

TEST(InitializersTest, VarianceScalingModesAndDistributions) {
  const Shape shape{200, 500};
  const double fan_in = 200, fan_out = 500;
  struct Mode {
    std::string name;
    double fan;
  };
  const std::vector<Mode> modes = {{"fan_in", fan_in},
                                   {"fan_out", fan_out},
                                   {"fan_avg", (fan_in + fan_out) / 2},
                                   {"fan_geo_avg", std::sqrt(fan_in * fan_out)}};
  uint32_t seed = 10;
  for (const Mode& mode : modes) {
    for (const std::string dist : {"truncated_normal", "normal", "uniform"}) {
      SCOPED_TRACE(mode.name + " " + dist);
      const double scale = 2.0;
      const double var = scale / mode.fan;
      const Array w = variance_scaling(scale, mode.name, dist)(jrandom::key(seed++), shape);
      EXPECT_EQ(w.shape(), shape);
      ExpectMoments(w, 0.0, var);
      const Moments m = MomentsOf(w);
      if (dist == "uniform") {
        EXPECT_LE(std::max(-m.min, m.max), std::sqrt(3 * var));
        EXPECT_GT(std::max(-m.min, m.max), 0.99 * std::sqrt(3 * var));
      } else if (dist == "truncated_normal") {
        EXPECT_LE(std::max(-m.min, m.max), 2 * std::sqrt(var) / kTruncatedStddev + 1e-6);
      }
    }
  }
}

TEST(InitializersTest, NamedSchemes) {
  const Shape shape{250, 400};
  const double fan_in = 250, fan_out = 400, fan_avg = (fan_in + fan_out) / 2;
  struct Scheme {
    std::string name;
    Initializer init;
    double var;
    bool uniform;
  };
  const std::vector<Scheme> schemes = {
      {"glorot_uniform", glorot_uniform(), 1 / fan_avg, true},  {"glorot_normal", glorot_normal(), 1 / fan_avg, false},
      {"xavier_uniform", xavier_uniform(), 1 / fan_avg, true},  {"xavier_normal", xavier_normal(), 1 / fan_avg, false},
      {"lecun_uniform", lecun_uniform(), 1 / fan_in, true},     {"lecun_normal", lecun_normal(), 1 / fan_in, false},
      {"he_uniform", he_uniform(), 2 / fan_in, true},           {"he_normal", he_normal(), 2 / fan_in, false},
      {"kaiming_uniform", kaiming_uniform(), 2 / fan_in, true}, {"kaiming_normal", kaiming_normal(), 2 / fan_in, false},
  };
  uint32_t seed = 100;
  for (const Scheme& s : schemes) {
    SCOPED_TRACE(s.name);
    const Array w = s.init(jrandom::key(seed++), shape);
    ExpectMoments(w, 0.0, s.var);
    const Moments m = MomentsOf(w);
    const double bound = s.uniform ? std::sqrt(3 * s.var) : 2 * std::sqrt(s.var) / kTruncatedStddev;
    EXPECT_LE(std::max(-m.min, m.max), bound + 1e-6);
  }
  // he_normal of an HWIO conv kernel: variance 2 / (3 * 3 * 64).
  ExpectMoments(he_normal()(jrandom::key(7), {3, 3, 64, 128}), 0.0, 2.0 / (3 * 3 * 64));
}

TEST(InitializersTest, BadArgumentsAreValueErrors) {
  const Array key = jrandom::key(0);
  EXPECT_THROW(variance_scaling(1.0, "fan_sideways", "normal"), ValueError);
  EXPECT_THROW(variance_scaling(1.0, "fan_in", "cauchy"), ValueError);
  EXPECT_THROW(variance_scaling(0.0, "fan_in", "normal"), ValueError);
  EXPECT_THROW(glorot_uniform()(key, {5}), ValueError);
  EXPECT_THROW(glorot_uniform(-3)(key, {5, 4}), ValueError);
  EXPECT_THROW(glorot_uniform()(key, {5, 4}, int32), TypeError);
  EXPECT_THROW(Initializer()(key, {2}), ValueError);
  try {
    glorot_uniform()(key, {5});
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("f32[5]"), std::string::npos) << e.what();
  }
}

// max |m^T m - scale^2 I| for a matrix m with orthonormal (scaled) columns.
double OrthonormalityError(const Array& m, double scale) {
  const Array gram = jnp::matmul(jnp::transpose(m), m).astype(float64);
  const Array eye = jnp::multiply(jnp::eye(m.shape()[1], std::nullopt, 0, float64), scale * scale);
  return jnp::max(jnp::abs(jnp::subtract(gram, eye))).item<double>();
}

TEST(InitializersTest, Orthogonal) {
  const Array key = jrandom::key(50);
  // Tall: orthonormal columns; wide: orthonormal rows.
  const Array tall = orthogonal()(key, {6, 4}, float64);
  EXPECT_EQ(tall.shape(), (Shape{6, 4}));
  EXPECT_LT(OrthonormalityError(tall, 1.0), 1e-12);
  const Array wide = orthogonal(2.0)(key, {3, 7}, float64);
  EXPECT_LT(OrthonormalityError(jnp::transpose(wide), 2.0), 1e-12);
  // A square float32 matrix is orthogonal both ways.
  const Array sq = orthogonal()(key, {16, 16});
  EXPECT_EQ(sq.dtype(), float32);
  EXPECT_LT(OrthonormalityError(sq, 1.0), 1e-5);
  EXPECT_LT(OrthonormalityError(jnp::transpose(sq), 1.0), 1e-5);
  // An HWIO conv kernel: the [3*3*4, 8] matrix has orthonormal columns.
  const Array conv = orthogonal()(key, {3, 3, 4, 8}, float64);
  EXPECT_LT(OrthonormalityError(jnp::reshape(conv, {36, 8}), 1.0), 1e-12);
  // column_axis 0: the columns sit on axis 0.
  const Array first = orthogonal(1.0, 0)(key, {5, 4, 3}, float64);
  EXPECT_EQ(first.shape(), (Shape{5, 4, 3}));
  EXPECT_LT(OrthonormalityError(jnp::reshape(jnp::moveaxis(first, 0, -1), {12, 5}), 1.0), 1e-12);
  // Haar: R's diagonal signs are folded in, so entries are symmetric around 0 across draws.
  double first_entry_sum = 0;
  for (uint32_t s = 0; s < 200; ++s) first_entry_sum += orthogonal()(jrandom::key(1000 + s), {4, 4}).to_vector<float>()[0];
  // Each entry has variance 1/4: the mean of 200 is within 5 standard errors of 0.
  EXPECT_NEAR(first_entry_sum / 200, 0.0, 5 * std::sqrt(0.25 / 200));
  EXPECT_THROW(orthogonal()(key, {5}), ValueError);
  EXPECT_THROW(orthogonal(1.0, 2)(key, {5, 4}), ValueError);
  // Under jit (the compiled QR and fused scaling may round differently in the last bit).
  const Array jitted = jx::jit([](const Array& k) { return orthogonal()(k, {6, 4}); })(key);
  EXPECT_LT(jnp::max(jnp::abs(jnp::subtract(jitted, orthogonal()(key, {6, 4})))).item<float>(), 1e-6);
}

TEST(InitializersTest, WorkUnderJit) {
  const Array key = jrandom::key(4);
  const Array eager = he_uniform()(key, {16, 8});
  const Array jitted = jx::jit([](const Array& k) { return he_uniform()(k, {16, 8}); })(key);
  EXPECT_EQ(jitted.to_vector<float>(), eager.to_vector<float>());
}

}  // namespace
}  // namespace jx::nn::initializers::initializers_test

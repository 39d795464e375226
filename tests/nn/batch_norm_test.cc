#include "jx/nn/batch_norm.h"

#include <cmath>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "jx/jx.h"

namespace jx::nn::batch_norm_test {
namespace {

namespace jnp = jx::numpy;
using ::testing::HasSubstr;

TEST(NnBatchNormTest, TrainingUsesBatchStatisticsAndUpdatesStateByHand) {
  // Two features on the last axis, four examples: feature 0 = {1, 2, 3, 6}, feature 1 = {0, 0, 4, 4}.
  const Array x = jnp::array(std::vector<float>{1, 0, 2, 0, 3, 4, 6, 4}, {4, 2});
  BatchNorm bn(2, {.momentum = 0.9});
  BatchNormState st = bn.init_state();
  EXPECT_EQ(st.mean.to_vector<float>(), (std::vector<float>{0, 0}));
  EXPECT_EQ(st.var.to_vector<float>(), (std::vector<float>{1, 1}));
  bn.scale = jnp::array({2.f, 1.f});
  bn.bias = jnp::array({0.5f, -1.f});
  auto [y, st1] = bn(x, st, /*training=*/true);
  // Batch means 3 and 2; biased variances (4+1+0+9)/4 = 3.5 and (4+4+4+4)/4 = 4.
  const double eps = 1e-5;
  const std::vector<double> want = {
      2 * (1 - 3) / std::sqrt(3.5 + eps) + 0.5, (0 - 2) / std::sqrt(4 + eps) - 1,
      2 * (2 - 3) / std::sqrt(3.5 + eps) + 0.5, (0 - 2) / std::sqrt(4 + eps) - 1,
      2 * (3 - 3) / std::sqrt(3.5 + eps) + 0.5, (4 - 2) / std::sqrt(4 + eps) - 1,
      2 * (6 - 3) / std::sqrt(3.5 + eps) + 0.5, (4 - 2) / std::sqrt(4 + eps) - 1};
  const std::vector<float> got = y.to_vector<float>();
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << i;
  // mean' = 0.9 * 0 + 0.1 * 3, var' = 0.9 * 1 + 0.1 * 3.5 (Flax keeps the biased variance).
  EXPECT_NEAR(st1.mean.to_vector<float>()[0], 0.3, 1e-6);
  EXPECT_NEAR(st1.mean.to_vector<float>()[1], 0.2, 1e-6);
  EXPECT_NEAR(st1.var.to_vector<float>()[0], 1.25, 1e-6);
  EXPECT_NEAR(st1.var.to_vector<float>()[1], 1.3, 1e-6);

  // Inference uses the running statistics and returns the state unchanged.
  auto [y_eval, st2] = bn(x, st1, /*training=*/false);
  EXPECT_EQ(st2.mean.to_vector<float>(), st1.mean.to_vector<float>());
  EXPECT_EQ(st2.var.to_vector<float>(), st1.var.to_vector<float>());
  EXPECT_NEAR(y_eval.to_vector<float>()[6], 2 * (6 - 0.3) / std::sqrt(1.25 + eps) + 0.5, 1e-5);
}

TEST(NnBatchNormTest, ChannelsFirstAxisMatchesJnpReference) {
  const Array x = random::normal(random::key(0), {4, 3, 5, 2}) * 3.0 + 1.0;
  BatchNorm bn(3, {.axis = 1, .eps = 1e-3});
  bn.scale = random::uniform(random::key(1), {3});
  bn.bias = random::normal(random::key(2), {3});
  auto [y, st] = bn(x, bn.init_state(), true);
  const std::vector<int64_t> axes{0, 2, 3};
  const Array mean = jnp::mean(x, axes, /*keepdims=*/true);
  const Array var = jnp::var(x, axes, /*keepdims=*/true);
  const Array want = (x - mean) / jnp::sqrt(var + 1e-3) * bn.scale->reshape({1, 3, 1, 1}) +
                     bn.bias->reshape({1, 3, 1, 1});
  EXPECT_TRUE(jnp::allclose(y, want, 1e-5, 1e-5));
  EXPECT_TRUE(jnp::allclose(st.mean, mean.reshape({3}) * 0.01, 1e-6, 1e-6));  // momentum 0.99 from 0
  EXPECT_TRUE(jnp::allclose(st.var, var.reshape({3}) * 0.01 + 0.99, 1e-6, 1e-6));
}

TEST(NnBatchNormTest, HalfPrecisionInputKeepsItsDtypeWithFloat32Statistics) {
  const Array x = (random::normal(random::key(3), {64, 4}) * 100.0 + 1000.0).astype(bfloat16);
  BatchNorm bn(4);
  auto [y, st] = bn(x, bn.init_state(), true);
  EXPECT_EQ(y.dtype(), bfloat16);
  EXPECT_EQ(st.mean.dtype(), float32);
  const Array yf = y.astype(float32);
  EXPECT_TRUE(jnp::allclose(jnp::mean(yf, 0), jnp::zeros({4}), 0, 0.05));
  EXPECT_TRUE(jnp::allclose(jnp::var(yf, 0), jnp::ones({4}), 0, 0.05));
}

TEST(NnBatchNormTest, GradsJitAndVmap) {
  const Array x = random::normal(random::key(4), {6, 3}, float64);
  BatchNorm bn(3, {.dtype = float64});
  const BatchNormState st = bn.init_state();
  // Gradients through the batch statistics (training) and through the running ones.
  check_grads([&](const BatchNorm& m, const Array& v) { return m(v, st, true).first; }, std::tuple{bn, x}, 2);
  check_grads([&](const BatchNorm& m, const Array& v) { return m(v, st, false).first; }, std::tuple{bn, x}, 1);

  // A training step under jit: the state goes in and out as a pytree.
  auto step = jit([](const BatchNorm& m, const BatchNormState& s, const Array& v) { return m(v, s, true); });
  auto [y_jit, st_jit] = step(bn, st, x);
  auto [y, st1] = bn(x, st, true);
  EXPECT_TRUE(jnp::allclose(y_jit, y, 1e-12, 1e-12));
  EXPECT_TRUE(jnp::allclose(st_jit.var, st1.var, 1e-12, 1e-12));
  // vmap over independent batches: each gets its own statistics.
  const Array xs = random::normal(random::key(5), {2, 6, 3}, float64);
  auto eval = [&](const Array& v) { return bn(v, st, true).first; };
  const Array ys = vmap(eval)(xs);
  EXPECT_TRUE(jnp::allclose(ys[1], eval(xs[1]), 1e-12, 1e-12));
}

TEST(NnBatchNormTest, ErrorsNameModuleAndShapes) {
  BatchNorm bn(8);
  try {
    bn(jnp::zeros({2, 4, 4, 3}), bn.init_state(), true);
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_THAT(e.what(), HasSubstr("nn.BatchNorm"));
    EXPECT_THAT(e.what(), HasSubstr("f32[2,4,4,3]"));
    EXPECT_THAT(e.what(), HasSubstr("num_features=8"));
  }
  try {
    bn(jnp::zeros({2, 8}), BatchNorm(4).init_state(), false);
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_THAT(e.what(), HasSubstr("state mean f32[4]"));
  }
  EXPECT_THROW(BatchNorm(8, {.momentum = 1.5}), ValueError);
  EXPECT_THROW(bn(jnp::zeros({2, 8}, int32), bn.init_state(), true), TypeError);
  BatchNorm plain(2, {.use_scale = false, .use_bias = false});
  EXPECT_FALSE(plain.scale.has_value());
  EXPECT_TRUE(tree::leaves(plain).empty());
}

}  // namespace
}  // namespace jx::nn::batch_norm_test

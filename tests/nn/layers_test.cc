#include "jx/nn/layers.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "jx/jx.h"
#include "tests/nn/nn_test_util.h"

namespace jx::nn::layers_test {
namespace {

namespace jnp = jx::numpy;
namespace jrandom = jx::random;
using testing::MaxAbsDiff;
using testing::ErrorOf;

Array tanh_fn(const Array& x) { return jnp::tanh(x); }

TEST(LinearTest, ShapesAndDefaultInitBounds) {
  Linear fc(64, 16, jrandom::key(0));
  EXPECT_EQ(fc.weight.shape(), (Shape{64, 16}));
  ASSERT_TRUE(fc.bias.has_value());
  EXPECT_EQ(fc.bias->shape(), (Shape{16}));
  EXPECT_EQ(fc.in_features(), 64);
  EXPECT_EQ(fc.out_features(), 16);
  // Uniform on +-1/sqrt(64) = +-0.125: every value inside, and the extremes near the bounds.
  const double wmax = jnp::max(jnp::abs(fc.weight)).item<float>();
  EXPECT_LE(wmax, 0.125);
  EXPECT_GT(wmax, 0.12);
  EXPECT_LE(jnp::max(jnp::abs(*fc.bias)).item<float>(), 0.125);
  Linear no_bias(4, 3, jrandom::key(1), {.use_bias = false});
  EXPECT_FALSE(no_bias.bias.has_value());
}

TEST(LinearTest, ForwardMatchesMatmulOverLeadingDims) {
  Linear fc(5, 3, jrandom::key(2));
  Array x = jrandom::normal(jrandom::key(3), {2, 4, 5});
  Array y = fc(x);
  EXPECT_EQ(y.shape(), (Shape{2, 4, 3}));
  Array ref = jnp::add(jnp::matmul(x, fc.weight), *fc.bias);
  EXPECT_LT(MaxAbsDiff(y, ref), 1e-6);
  // A single unbatched vector works too.
  Array v = jrandom::normal(jrandom::key(4), {5});
  EXPECT_LT(MaxAbsDiff(fc(v), jnp::add(jnp::matmul(v, fc.weight), *fc.bias)), 1e-6);
}

TEST(LinearTest, GradOfModelIsAModel) {
  Linear fc(3, 2, jrandom::key(5));
  Array x = jrandom::normal(jrandom::key(6), {4, 3});
  auto loss = [](const Linear& m, const Array& xs) { return jnp::sum(jnp::square(m(xs))); };
  Linear g = jx::grad(loss)(fc, x);
  // d/dW sum((xW + b)^2) = x^T 2(xW + b); d/db = sum over rows of 2(xW + b).
  Array r = jnp::multiply(2.0, fc(x));
  EXPECT_LT(MaxAbsDiff(g.weight, jnp::matmul(jnp::transpose(x), r)), 1e-5);
  EXPECT_LT(MaxAbsDiff(*g.bias, jnp::sum(r, 0)), 1e-5);
}

TEST(LinearTest, CheckGradsInFloat64) {
  Linear fc(3, 2, jrandom::key(7), {.dtype = float64});
  Array x = jrandom::normal(jrandom::key(8), {4, 3}, float64);
  auto loss = [](const Linear& m, const Array& xs) { return jnp::sum(jnp::tanh(m(xs))); };
  jx::check_grads(loss, std::tuple{fc, x}, 2);
}

TEST(LinearTest, Bfloat16AndCustomInitializers) {
  Linear fc(8, 4, jrandom::key(40),
            {.dtype = bfloat16, .weight_init = initializers::glorot_normal(), .bias_init = initializers::zeros});
  EXPECT_EQ(fc.weight.dtype(), bfloat16);
  EXPECT_EQ(fc.bias->to_vector<float>(), std::vector<float>(4, 0.f));
  const Array y = fc(jnp::ones({2, 8}, bfloat16));
  EXPECT_EQ(y.dtype(), bfloat16);
  EXPECT_LT(MaxAbsDiff(y, jnp::sum(fc.weight.astype(float32), 0, true)), 0.05);
  // glorot_normal's truncation bound 2 * sqrt(2 / (8 + 4)) / 0.8796.
  EXPECT_LE(jnp::max(jnp::abs(fc.weight.astype(float32))).item<float>(), 2 * std::sqrt(2.0 / 12) / 0.8796 + 0.01);
}

TEST(SequentialTest, EmptySequentialIsTheIdentity) {
  Sequential<> empty;
  const Array x = jnp::array({1.f, 2.f});
  EXPECT_EQ(empty(x).to_vector<float>(), x.to_vector<float>());
  EXPECT_EQ(empty(x, jrandom::key(0), true).to_vector<float>(), x.to_vector<float>());
}

TEST(LinearTest, JitAndVmap) {
  Linear fc(3, 2, jrandom::key(9));
  Array x = jrandom::normal(jrandom::key(10), {5, 3});
  Array eager = fc(x);
  auto apply = [](const Linear& m, const Array& xs) { return m(xs); };
  EXPECT_LT(MaxAbsDiff(jx::jit(apply)(fc, x), eager), 1e-6);
  // vmap over a batch of unbatched vectors, the model shared.
  Array mapped = jx::vmap(apply, jx::in_axes{jx::none, 0})(fc, x);
  EXPECT_LT(MaxAbsDiff(mapped, eager), 1e-6);
}

TEST(LinearTest, WrongInputShapeNamesModuleAndShapes) {
  Linear fc(784, 128, jrandom::key(11));
  const std::string msg = ErrorOf<ShapeError>([&] { fc(jnp::zeros({32, 10})); });
  EXPECT_NE(msg.find("[Linear]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("f32[32,10]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("f32[784,128]"), std::string::npos) << msg;
}

TEST(SequentialTest, CallsLayersInOrder) {
  auto [k1, k2] = jrandom::split(jrandom::key(12));
  Sequential mlp(Linear(4, 8, k1), Lambda(relu), Linear(8, 3, k2));
  Array x = jrandom::normal(jrandom::key(13), {6, 4});
  const auto& [l1, act, l2] = mlp.layers;
  Array ref = l2(relu(l1(x)));
  EXPECT_LT(MaxAbsDiff(mlp(x), ref), 1e-6);
  auto loss = [](const auto& m, const Array& xs) { return jnp::sum(m(xs)); };
  auto g = jx::grad(loss)(mlp, x);
  EXPECT_EQ(std::get<0>(g.layers).weight.shape(), (Shape{4, 8}));
}


TEST(SequentialTest, KeysReachDropoutAndJitWorks) {
  auto [k1, k2] = jrandom::split(jrandom::key(14));
  Sequential mlp(Linear(4, 16, k1), Lambda(relu), Dropout(0.5), Linear(16, 2, k2));
  Array x = jrandom::normal(jrandom::key(15), {8, 4});
  // Inference: Dropout is the identity, with or without a key.
  EXPECT_LT(MaxAbsDiff(mlp(x, jrandom::key(16), false), mlp(x)), 1e-6);
  // Training: the Dropout layer gets the third of the split keys.
  const Array dropout_key = jrandom::split(jrandom::key(16), 4)[2];
  const auto& [l1, act, drop, l2] = mlp.layers;
  Array ref = l2(drop(relu(l1(x)), dropout_key, true));
  EXPECT_LT(MaxAbsDiff(mlp(x, jrandom::key(16), true), ref), 1e-6);
  auto train_apply = [](const auto& m, const Array& xs, const Array& key) { return m(xs, key, true); };
  EXPECT_LT(MaxAbsDiff(jx::jit(train_apply)(mlp, x, jrandom::key(16)), ref), 1e-6);
  // vmap over examples with the model and key shared: the same as the batched call in inference.
  auto infer = [](const auto& m, const Array& v) { return m(v); };
  EXPECT_LT(MaxAbsDiff(jx::vmap(infer, jx::in_axes{jx::none, 0})(mlp, x), mlp(x)), 1e-6);
  // vmap over a batch of keys: each example gets its own dropout mask.
  const Array keys = jrandom::split(jrandom::key(19), 8);
  auto per_example = [](const auto& m, const Array& v, const Array& k) { return m(v, k, true); };
  const Array mapped = jx::vmap(per_example, jx::in_axes{jx::none, 0, 0})(mlp, x, keys);
  EXPECT_EQ(mapped.shape(), (Shape{8, 2}));
  EXPECT_LT(MaxAbsDiff(mapped[3], mlp(x[3], keys[3], true)), 1e-6);
}

TEST(SequentialTest, CheckGradsThroughTheModelInFloat64) {
  auto [k1, k2] = jrandom::split(jrandom::key(17));
  Sequential mlp(Linear(3, 5, k1, {.dtype = float64}), Lambda(tanh_fn), LayerNorm(5, {.dtype = float64}),
                 Linear(5, 2, k2, {.dtype = float64}));
  Array x = jrandom::normal(jrandom::key(18), {4, 3}, float64);
  auto loss = [](const auto& m, const Array& xs) { return jnp::sum(jnp::sin(m(xs))); };
  jx::check_grads(loss, std::tuple{mlp, x}, 1);
  // Lambda's function is part of the tree structure.
  EXPECT_EQ(jx::tree::structure(Sequential(Lambda(relu, "relu"))).ToString(),
            "PyTreeDef(Sequential<jx::nn::Lambda>(layers=(Lambda(fn=Static(<function relu>)),)))");
  EXPECT_NE(jx::tree::structure(Lambda(relu)).ToString().find("<function at 0x"), std::string::npos);
  EXPECT_FALSE(jx::tree::structure(Lambda(relu)) == jx::tree::structure(Lambda(tanh_fn)));
}

TEST(EmbeddingTest, LookupMatchesTakeAndGradScattersIntoRows) {
  Embedding embed(10, 4, jrandom::key(20));
  EXPECT_EQ(embed.weight.shape(), (Shape{10, 4}));
  EXPECT_EQ(embed.num_embeddings(), 10);
  EXPECT_EQ(embed.embedding_dim(), 4);
  // N(0, 1) init: 40 values, so only loose sanity on the scale.
  const double sd = jnp::std(embed.weight).item<float>();
  EXPECT_GT(sd, 0.5);
  EXPECT_LT(sd, 1.5);
  const Array ids = jnp::array({{3, 0, 3}, {9, 1, -1}});
  const Array h = embed(ids);
  EXPECT_EQ(h.shape(), (Shape{2, 3, 4}));
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t j = 0; j < 3; ++j) {
      int32_t id = ids[i][j].item<int32_t>();
      if (id < 0) id += 10;
      EXPECT_EQ(h[i][j].to_vector<float>(), embed.weight[id].to_vector<float>()) << i << "," << j;
    }
  }
  // The gradient of the table accumulates over repeated ids.
  auto loss = [](const Embedding& e, const Array& t) { return jnp::sum(e(t)); };
  const Embedding g = jx::grad(loss)(embed, ids);
  const std::vector<float> counts = jnp::sum(g.weight, 1).to_vector<float>();
  EXPECT_EQ(counts, (std::vector<float>{4, 4, 0, 8, 0, 0, 0, 0, 0, 8}));
  // Out-of-range ids give NaN rows (jnp.take's fill mode).
  EXPECT_TRUE(std::isnan(embed(jnp::array({10})).to_vector<float>()[0]));
  Embedding e64(6, 3, jrandom::key(21), {.dtype = float64});
  jx::check_grads([&ids](const Embedding& e) { return jnp::sum(jnp::sin(e(jnp::array({{1, 2}, {5, 1}})))); },
                  std::tuple{e64}, 2);
  EXPECT_EQ(jx::jit([](const Embedding& e, const Array& t) { return e(t); })(embed, ids).to_vector<float>(),
            h.to_vector<float>());
  EXPECT_EQ(jx::vmap([](const Embedding& e, const Array& t) { return e(t); }, jx::in_axes{jx::none, 0})(embed, ids)
                .to_vector<float>(),
            h.to_vector<float>());
  const std::string msg = ErrorOf<TypeError>([&] { embed(jnp::array({1.f})); });
  EXPECT_NE(msg.find("[Embedding]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("f32[1]"), std::string::npos) << msg;
}

TEST(LayerNormTest, NormalizesTrailingAxesWithAffine) {
  LayerNorm ln(Shape{3, 4}, {.dtype = float64});
  ASSERT_TRUE(ln.weight.has_value() && ln.bias.has_value());
  EXPECT_EQ(ln.weight->to_vector<double>(), std::vector<double>(12, 1.0));
  EXPECT_EQ(ln.bias->to_vector<double>(), std::vector<double>(12, 0.0));
  ln.weight = jrandom::normal(jrandom::key(22), {3, 4}, float64);
  ln.bias = jrandom::normal(jrandom::key(23), {3, 4}, float64);
  const Array x = jrandom::normal(jrandom::key(24), {2, 3, 4}, float64);
  const Array flat = jnp::reshape(x, {2, 12});
  const Array m = jnp::reshape(jnp::mean(flat, 1, true), {2, 1, 1});
  const Array v = jnp::reshape(jnp::var(flat, 1, true), {2, 1, 1});
  const Array ref =
      jnp::add(jnp::multiply(jnp::divide(jnp::subtract(x, m), jnp::sqrt(jnp::add(v, 1e-5))), *ln.weight), *ln.bias);
  EXPECT_LT(MaxAbsDiff(ln(x), ref), 1e-13);
  auto loss = [](const LayerNorm& l, const Array& xs) { return jnp::sum(jnp::sin(l(xs))); };
  jx::check_grads(loss, std::tuple{ln, x}, 2);
  const LayerNorm g = jx::grad(loss)(ln, x);
  EXPECT_EQ(g.weight->shape(), (Shape{3, 4}));
  auto apply = [](const LayerNorm& l, const Array& xs) { return l(xs); };
  EXPECT_LT(MaxAbsDiff(jx::jit(apply)(ln, x), ref), 1e-13);
  EXPECT_LT(MaxAbsDiff(jx::vmap(apply, jx::in_axes{jx::none, 0})(ln, x), ref), 1e-13);
}

TEST(LayerNormTest, WithoutAffineAndShapeErrors) {
  LayerNorm plain(8, {.eps = 0.0, .elementwise_affine = false});
  EXPECT_FALSE(plain.weight.has_value());
  EXPECT_FALSE(plain.bias.has_value());
  const Array y = plain(jrandom::normal(jrandom::key(25), {5, 8}));
  EXPECT_LT(MaxAbsDiff(jnp::mean(y, -1), jnp::zeros({5})), 1e-6);
  EXPECT_LT(MaxAbsDiff(jnp::var(y, -1), jnp::ones({5})), 1e-5);
  LayerNorm no_bias(8, {.use_bias = false});
  EXPECT_TRUE(no_bias.weight.has_value());
  EXPECT_FALSE(no_bias.bias.has_value());
  const std::string msg = ErrorOf<ShapeError>([&] { plain(jnp::zeros({5, 7})); });
  EXPECT_NE(msg.find("[LayerNorm]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("f32[5,7]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[8]"), std::string::npos) << msg;
  EXPECT_THROW(LayerNorm(0), ValueError);
}

TEST(RMSNormTest, MatchesReference) {
  RMSNorm rms(6, {.dtype = float64});
  ASSERT_TRUE(rms.weight.has_value());
  rms.weight = jrandom::normal(jrandom::key(26), {6}, float64);
  const Array x = jrandom::normal(jrandom::key(27), {2, 3, 6}, float64);
  const Array ms = jnp::mean(jnp::multiply(x, x), -1, true);
  const Array ref = jnp::multiply(jnp::divide(x, jnp::sqrt(jnp::add(ms, 1e-6))), *rms.weight);
  EXPECT_LT(MaxAbsDiff(rms(x), ref), 1e-13);
  auto loss = [](const RMSNorm& r, const Array& xs) { return jnp::sum(jnp::sin(r(xs))); };
  jx::check_grads(loss, std::tuple{rms, x}, 2);
  auto apply = [](const RMSNorm& r, const Array& xs) { return r(xs); };
  EXPECT_LT(MaxAbsDiff(jx::jit(apply)(rms, x), ref), 1e-13);
  EXPECT_LT(MaxAbsDiff(jx::vmap(apply, jx::in_axes{jx::none, 0})(rms, x), ref), 1e-13);
  RMSNorm plain(6, {.elementwise_affine = false});
  EXPECT_FALSE(plain.weight.has_value());
  const std::string msg = ErrorOf<ShapeError>([&] { rms(jnp::zeros({2, 5}, float64)); });
  EXPECT_NE(msg.find("[RMSNorm]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("f64[2,5]"), std::string::npos) << msg;
}

TEST(DropoutTest, InvertedScalingAndInference) {
  Dropout drop(0.25);
  const Array x = jnp::ones({200, 500});
  const Array y = drop(x, jrandom::key(28), true);
  // Kept elements are scaled by 1 / 0.75; the kept fraction is 0.75 within 5 standard errors.
  const Array kept = jnp::not_equal(y, 0.0);
  EXPECT_LT(MaxAbsDiff(jnp::where(kept, y, 1.0 / 0.75), jnp::full({200, 500}, 1.0 / 0.75)), 1e-6);
  const double n = 200 * 500;
  EXPECT_NEAR(jnp::mean(kept.astype(float32)).item<float>(), 0.75, 5 * std::sqrt(0.75 * 0.25 / n));
  // The same key gives the same mask; another key another.
  EXPECT_EQ(drop(x, jrandom::key(28), true).to_vector<float>(), y.to_vector<float>());
  EXPECT_NE(drop(x, jrandom::key(29), true).to_vector<float>(), y.to_vector<float>());
  // Inference and rate 0: the identity; rate 1: zeros with a zero (not NaN) gradient.
  EXPECT_EQ(drop(x, jrandom::key(28), false).to_vector<float>(), x.to_vector<float>());
  EXPECT_EQ(drop(x).to_vector<float>(), x.to_vector<float>());
  EXPECT_EQ(Dropout(0.0)(x, jrandom::key(28), true).to_vector<float>(), x.to_vector<float>());
  const Array v = jnp::array({1.f, 2.f});
  EXPECT_EQ(Dropout(1.0)(v, jrandom::key(28), true).to_vector<float>(), (std::vector<float>{0.f, 0.f}));
  EXPECT_EQ(jx::grad([](const Array& a) { return jnp::sum(Dropout(1.0)(a, jrandom::key(0), true)); })(v).to_vector<float>(),
            (std::vector<float>{0.f, 0.f}));
  EXPECT_THROW(Dropout(1.5), ValueError);
  EXPECT_THROW(Dropout(-0.1), ValueError);
}

TEST(DropoutTest, GradientIsTheMaskScaledAndJitMatchesEager) {
  Dropout drop(0.5);
  const Array x = jrandom::normal(jrandom::key(30), {64}, float64);
  const Array key = jrandom::key(31);
  const Array y = drop(x, key, true);
  const Array g = jx::grad([&](const Array& a) { return jnp::sum(drop(a, key, true)); })(x);
  EXPECT_LT(MaxAbsDiff(g, jnp::where(jnp::not_equal(y, 0.0), 2.0, 0.0)), 1e-15);
  jx::check_grads([&](const Array& a) { return jnp::sum(jnp::sin(drop(a, key, true))); }, std::tuple{x}, 2);
  auto apply = [](const Dropout& d, const Array& a, const Array& k) { return d(a, k, true); };
  EXPECT_EQ(jx::jit(apply)(drop, x, key).to_vector<double>(), y.to_vector<double>());
}
}  // namespace
}  // namespace jx::nn::layers_test

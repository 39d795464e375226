#include "jx/nn/layers.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "jx/jx.h"

namespace jx::nn {
namespace {

namespace jnp = jx::numpy;
namespace jrandom = jx::random;

// max |a - b| over all elements (host).
double MaxAbsDiff(const Array& a, const Array& b) {
  return jnp::max(jnp::abs(jnp::subtract(a.astype(float64), b.astype(float64)))).item<double>();
}

template <typename E, typename F>
std::string ErrorOf(F f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "(no error)";
}

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

}  // namespace
}  // namespace jx::nn

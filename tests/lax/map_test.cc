// lax::map: the examples of https://docs.jax.dev/en/latest/_autosummary/jax.lax.map.html,
// pytrees, batch_size with and without a remainder, and jit/grad through it.
#include "jx/lax/map.h"

#include <gtest/gtest.h>
#include <jx/jx.h>

namespace jx::map_test {
namespace {

namespace jnp = jx::numpy;
namespace lax = jx::lax;

// The docs' example: x = jnp.ones((10, 3, 4)); y = lax.map(f, x, batch_size=3) traces f on
// (3, 4) slices twice (the scanned batches and the remainder's vmap) and y.shape is (10, 3, 4).
TEST(MapTest, DocsExampleBatchSizeThree) {
  std::vector<Shape> inner_shapes;
  auto f = [&](const Array& x) {
    inner_shapes.push_back(x.shape());
    return x + 1.0f;
  };
  Array x = jnp::ones({10, 3, 4});
  Array y = lax::map(f, x, {.batch_size = 3});
  EXPECT_EQ(y.shape(), (Shape{10, 3, 4}));
  EXPECT_EQ(inner_shapes, (std::vector<Shape>{{3, 4}, {3, 4}}));
  EXPECT_TRUE(jnp::array_equal(y, x + 1.0f));
}

// map(f, xs) == np.stack([f(x) for x in xs]), with a scan in the jaxpr.
TEST(MapTest, StacksTheResultsAsAScan) {
  Array xs = jnp::arange(12).astype(float32).reshape({4, 3});
  auto f = [](const Array& x) { return jnp::sum(x * x); };
  Array ys = lax::map(f, xs);
  EXPECT_EQ(ys.to_vector<float>(), (std::vector<float>{5, 50, 149, 302}));
  const std::string text = make_jaxpr([&](const Array& v) { return lax::map(f, v); })(xs).ToString();
  EXPECT_NE(text.find("scan["), std::string::npos) << text;
}

TEST(MapTest, BatchSizesAgreeWithThePlainMap) {
  Array xs = jnp::arange(14).astype(float32).reshape({7, 2});
  auto f = [](const Array& x) { return jnp::sin(x) * jnp::sum(x); };
  const Array want = lax::map(f, xs);
  for (int64_t b : {0, 1, 2, 3, 7, 9}) {
    Array got = lax::map(f, xs, {.batch_size = b});
    EXPECT_TRUE(jnp::allclose(got, want)) << "batch_size=" << b;
  }
  EXPECT_THROW(lax::map(f, xs, {.batch_size = -1}), ValueError);
}

TEST(MapTest, PytreesInAndOut) {
  std::pair<Array, Array> xs{jnp::arange(3).astype(float32), jnp::arange(6).astype(float32).reshape({3, 2})};
  auto f = [](const std::pair<Array, Array>& p) {
    return std::tuple<Array, Array>{p.first * 2.0f, jnp::sum(p.second) + p.first};
  };
  auto [a, b] = lax::map(f, xs, {.batch_size = 2});
  EXPECT_EQ(a.to_vector<float>(), (std::vector<float>{0, 2, 4}));
  EXPECT_EQ(b.to_vector<float>(), (std::vector<float>{1, 6, 11}));
  std::pair<Array, Array> bad{jnp::zeros({3}), jnp::zeros({4})};
  EXPECT_THROW(lax::map(f, bad), ValueError);
}

TEST(MapTest, UnderJitAndGrad) {
  Array xs = jnp::linspace(-1.0, 1.0, 5, true, float64).reshape({5, 1});
  auto loss = [](const Array& v) {
    return jnp::sum(lax::map([](const Array& x) { return jnp::tanh(x) * x; }, v, {.batch_size = 2}));
  };
  EXPECT_NEAR(jit(loss)(xs).item<double>(), loss(xs).item<double>(), 1e-12);
  check_grads(loss, std::tuple{xs}, 2);
}

}  // namespace
}  // namespace jx::map_test

// The Array methods JAX users chain (jax.Array's methods: "Refer to jax.numpy.<name>() for full
// documentation"), each the jnp function of the same name, so jit, vmap and grad come from the
// underlying ops. Values follow the JAX doc pages cited per test.
#include <cmath>
#include <vector>

#include <gtest/gtest.h>
#include <jx/jx.h>

namespace jx::array_methods_test {
namespace {

namespace jnp = jx::numpy;
using F = std::vector<float>;
using I = std::vector<int32_t>;

// The array of https://docs.jax.dev/en/latest/_autosummary/jax.numpy.sum.html's examples.
Array DocX() { return jnp::array({{1, 3, 4, 2}, {5, 2, 6, 3}, {8, 1, 2, 9}}); }

TEST(ArrayMethodsTest, Reductions) {
  // jax.numpy.sum: jnp.sum(x) -> Array(46, dtype=int32); jnp.sum(x, axis=1) -> [10, 16, 20];
  // keepdims=True -> shape (3, 1).
  const Array x = DocX();
  EXPECT_EQ(x.sum().item<int32_t>(), 46);
  EXPECT_EQ(x.sum().dtype(), int32);
  EXPECT_EQ(x.sum(1).to_vector<int32_t>(), (I{10, 16, 20}));
  EXPECT_EQ(x.sum(1, true).shape(), (Shape{3, 1}));
  EXPECT_EQ(x.sum({0, 1}).item<int32_t>(), 46);
  EXPECT_EQ(x.prod(1).to_vector<int32_t>(), (I{24, 180, 144}));
  EXPECT_EQ(x.max().item<int32_t>(), 9);
  EXPECT_EQ(x.max(0).to_vector<int32_t>(), (I{8, 3, 6, 9}));
  EXPECT_EQ(x.min(1).to_vector<int32_t>(), (I{1, 2, 1}));
  EXPECT_NEAR(x.mean().item<float>(), 46.0 / 12, 1e-6);
  EXPECT_EQ(x.mean(1).to_vector<float>(), (F{2.5, 4, 5}));
  EXPECT_EQ(x.mean().dtype(), float32);  // integer means are float32
  EXPECT_EQ(x.argmax(1).to_vector<int32_t>(), (I{2, 2, 3}));
  EXPECT_EQ(x.argmax().item<int32_t>(), 11);  // of the flattened array
  EXPECT_EQ(x.argmin(0).to_vector<int32_t>(), (I{0, 2, 2, 0}));
  EXPECT_TRUE((x > 8).any().item<bool>());
  EXPECT_TRUE((x > 0).all().item<bool>());
  EXPECT_EQ((x > 1).all(1).to_vector<bool>(), (std::vector<bool>{false, true, false}));
  // jax.numpy.var / std of [1, 2, 3, 4]: 1.25 and sqrt(1.25); ddof=1: 5/3.
  const Array v = jnp::array({1.f, 2.f, 3.f, 4.f});
  EXPECT_FLOAT_EQ(v.var().item<float>(), 1.25f);
  EXPECT_FLOAT_EQ(v.std().item<float>(), std::sqrt(1.25f));
  EXPECT_FLOAT_EQ(v.var({}, false, 1).item<float>(), 5.f / 3.f);
  EXPECT_EQ(x.cumsum().to_vector<int32_t>(), (I{1, 4, 8, 10, 15, 17, 23, 26, 34, 35, 37, 46}));
  EXPECT_EQ(x.cumsum(1)[0].to_vector<int32_t>(), (I{1, 4, 8, 10}));
  EXPECT_EQ(v.cumprod().to_vector<float>(), (F{1, 2, 6, 24}));
}

TEST(ArrayMethodsTest, ShapeMethods) {
  const Array x = DocX();
  EXPECT_EQ(x.ravel().shape(), (Shape{12}));
  EXPECT_EQ(x.flatten().to_vector<int32_t>(), x.ravel().to_vector<int32_t>());
  EXPECT_EQ(x.reshape({-1, 2}).shape(), (Shape{6, 2}));  // x.reshape(-1, 2)
  EXPECT_EQ(x.reshape({2, -1}).shape(), (Shape{2, 6}));
  EXPECT_THROW((void)x.reshape({-1, 5}), ShapeError);
  EXPECT_EQ(jnp::zeros({1, 3, 1}).squeeze().shape(), (Shape{3}));
  EXPECT_EQ(jnp::zeros({1, 3, 1}).squeeze(0).shape(), (Shape{3, 1}));
  EXPECT_EQ(x.transpose().shape(), (Shape{4, 3}));
  EXPECT_EQ(x.transpose().to_vector<int32_t>(), x.T().to_vector<int32_t>());
  EXPECT_EQ(jnp::zeros({2, 3, 4}).transpose(std::vector<int64_t>{2, 0, 1}).shape(), (Shape{4, 2, 3}));
  EXPECT_EQ(jnp::zeros({2, 3, 4}).swapaxes(0, 2).shape(), (Shape{4, 3, 2}));
}

TEST(ArrayMethodsTest, ElementwiseAndDot) {
  // jax.numpy.clip: x = jnp.array([-2, -1, 0, 1, 2, 3, 4, 5]); jnp.clip(x, 2, 5)
  //   -> [2 2 2 2 2 3 4 5]; jnp.clip(x, max=3) -> [-2 -1  0  1  2  3  3  3]
  const Array x = jnp::array({-2, -1, 0, 1, 2, 3, 4, 5});
  EXPECT_EQ(x.clip(2, 5).to_vector<int32_t>(), (I{2, 2, 2, 2, 2, 3, 4, 5}));
  EXPECT_EQ(x.clip(std::nullopt, 3).to_vector<int32_t>(), (I{-2, -1, 0, 1, 2, 3, 3, 3}));
  // jax.numpy.round rounds half to even: [1.5, 2.5, -0.5] -> [2., 2., -0.]; decimals=1.
  EXPECT_EQ(jnp::array({1.5f, 2.5f, -0.5f}).round().to_vector<float>(), (F{2, 2, -0.f}));
  EXPECT_NEAR(jnp::array({3.14159f}).round(1).item<float>(), 3.1f, 1e-6);
  EXPECT_EQ(jnp::array({1.f, 2.f, 3.f}).dot(jnp::array({4.f, 5.f, 6.f})).item<float>(), 32);
}

TEST(ArrayMethodsTest, ItemVariantsAndBlockUntilReady) {
  // NumPy's item(*args): a flat index or one index per axis.
  const Array x = DocX();
  EXPECT_EQ(x.item<int>(5), 2);
  EXPECT_EQ(x.item<int>(-1), 9);
  EXPECT_EQ(x.item<int>({2, 3}), 9);
  EXPECT_EQ(x.item<double>({-1, 0}), 8.0);
  EXPECT_THROW((void)x.item<int>(12), IndexError);
  EXPECT_THROW((void)x.item<int>({1}), ValueError);
  EXPECT_THROW((void)x.item<int>(), ValueError);  // item() needs a size-1 array
  EXPECT_EQ(jnp::array({7.f}).item<float>(), 7);
  EXPECT_EQ(&x.block_until_ready(), &x);
  EXPECT_EQ((x * 2).block_until_ready().sum().item<int32_t>(), 92);
}

TEST(ArrayMethodsTest, TransformsComeFromTheUnderlyingOps) {
  const Array v = jnp::array({1.f, 2.f, 3.f, 4.f});
  EXPECT_EQ(grad([](const Array& a) { return a.sum(); })(v).to_vector<float>(), (F{1, 1, 1, 1}));
  EXPECT_EQ(grad([](const Array& a) { return a.mean(); })(v).to_vector<float>(), (F{.25, .25, .25, .25}));
  EXPECT_EQ(grad([](const Array& a) { return a.max(); })(v).to_vector<float>(), (F{0, 0, 0, 1}));
  // d var / d a_i = 2 (a_i - mean) / n
  EXPECT_EQ(grad([](const Array& a) { return a.var(); })(v).to_vector<float>(), (F{-.75, -.25, .25, .75}));
  const Array m = jnp::array({{1.f, 5.f}, {7.f, 3.f}});
  EXPECT_EQ(vmap([](const Array& r) { return r.argmax(); })(m).to_vector<int32_t>(), (I{1, 0}));
  EXPECT_EQ(vmap([](const Array& r) { return r.cumsum(); })(m).to_vector<float>(), (F{1, 6, 7, 10}));
  EXPECT_FLOAT_EQ(jit([](const Array& a) { return a.std(); })(v).item<float>(), std::sqrt(1.25f));
  EXPECT_EQ(jit([](const Array& a) { return a.reshape({-1, 2}).sum(0); })(v).to_vector<float>(), (F{4, 6}));
}

}  // namespace
}  // namespace jx::array_methods_test

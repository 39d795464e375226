// jnp.quantile/percentile/median, average and bincount against the examples of NumPy's docs
// (numpy.org/doc/stable/reference/generated/numpy.<name>.html), JAX's quantile methods by
// hand, gradients (through sort and gather) against finite differences, jit and vmap.
#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include <jx/jx.h>

#include "tests/lax/numpy/numpy_test_util.h"

namespace jx::statistics_test {
namespace {

namespace jnp = jx::numpy;
using I32 = std::vector<int32_t>;

using numpy_test::ExpectClose;

TEST(QuantileTest, NumpyDocsExamples) {
  // numpy.median / quantile / percentile: a = [[10, 7, 4], [3, 2, 1]].
  Array a = jnp::array({{10, 7, 4}, {3, 2, 1}});
  EXPECT_EQ(jnp::median(a).dtype(), float32);
  ExpectClose(jnp::median(a), {3.5});
  ExpectClose(jnp::median(a, 0), {6.5, 4.5, 2.5});
  ExpectClose(jnp::median(a, 1), {7.0, 2.0});
  ExpectClose(jnp::median(a, {0, 1}), {3.5});
  ExpectClose(jnp::quantile(a, 0.5), {3.5});
  ExpectClose(jnp::quantile(a, 0.5, 0), {6.5, 4.5, 2.5});
  ExpectClose(jnp::quantile(a, 0.5, 1), {7.0, 2.0});
  Array k = jnp::quantile(a, 0.5, 1, "linear", true);
  EXPECT_EQ(k.shape(), (Shape{2, 1}));
  ExpectClose(k, {7.0, 2.0});
  ExpectClose(jnp::percentile(a, 50), {3.5});
  ExpectClose(jnp::percentile(a, 50, 0), {6.5, 4.5, 2.5});
  ExpectClose(jnp::percentile(a, 50, 1), {7.0, 2.0});
  EXPECT_EQ(jnp::percentile(a, 50, 1, "linear", true).shape(), (Shape{2, 1}));
  // A C++ q divides by 100 in double: float64 data keeps float64 precision (0.333 * 3).
  Array x64 = jnp::array({0.0, 1.0, 2.0, 3.0});
  EXPECT_EQ(jnp::percentile(x64, 33.3).dtype(), float64);
  EXPECT_NEAR(jnp::percentile(x64, 33.3).item<double>(), 0.999, 1e-14);
  ExpectClose(jnp::percentile(x64, jnp::array({25.0, 75.0})), {0.75, 2.25}, 1e-15);
}

TEST(QuantileTest, JaxMethods) {
  // a = [1, 2, 3, 4], q = 0.4: position 1.2 between 2 and 3.
  Array a = jnp::array({4.f, 1.f, 3.f, 2.f});
  ExpectClose(jnp::quantile(a, 0.4, {}, "linear"), {2.2});
  ExpectClose(jnp::quantile(a, 0.4, {}, "lower"), {2.0});
  ExpectClose(jnp::quantile(a, 0.4, {}, "higher"), {3.0});
  ExpectClose(jnp::quantile(a, 0.4, {}, "nearest"), {2.0});
  ExpectClose(jnp::quantile(a, 0.4, {}, "midpoint"), {2.5});
  ExpectClose(jnp::quantile(a, 0.9, {}, "nearest"), {4.0});  // position 2.7
  // JAX's nearest keeps the lower neighbour on a tie (position 1.5), where NumPy rounds to even.
  ExpectClose(jnp::quantile(a, 0.5, {}, "nearest"), {2.0});
  // A vector of q leads the result's dims.
  Array m = jnp::array({{1.f, 2.f, 3.f, 4.f}, {10.f, 20.f, 30.f, 40.f}});
  Array qs = jnp::quantile(m, jnp::array({0.0f, 0.4f, 1.0f}), 1);
  EXPECT_EQ(qs.shape(), (Shape{3, 2}));
  ExpectClose(qs, {1.0, 10.0, 2.2, 22.0, 4.0, 40.0}, 1e-5);
  EXPECT_EQ(jnp::quantile(m, jnp::array({0.1f, 0.9f}), 1, "linear", true).shape(), (Shape{2, 2, 1}));
  // Several axes (and negative ones), keepdims keeps each as 1.
  Array cube = jnp::arange(24.0, std::optional<DType>(float32)).reshape({2, 3, 4});
  Array q2 = jnp::quantile(cube, 0.5, {0, -1}, "linear", true);
  EXPECT_EQ(q2.shape(), (Shape{1, 3, 1}));
  ExpectClose(q2, {7.5, 11.5, 15.5});  // column j holds 4j + {0..3, 12..15}
  // A NaN anywhere in a slice gives NaN (numpy.nanquantile's docs: quantile(a, 0.5) is nan).
  const float nan = std::numeric_limits<float>::quiet_NaN();
  ExpectClose(jnp::quantile(jnp::array({{1.f, nan}, {3.f, 4.f}}), 0.5, 1), {NAN, 3.5});
  EXPECT_THROW(jnp::quantile(a, 0.5, {}, "inverted_cdf"), ValueError);
  EXPECT_THROW(jnp::quantile(a, jnp::ones({2, 2}), {}), ValueError);
}

TEST(QuantileTest, GradientsJitAndVmap) {
  // Distinct values: the sort's permutation is locally constant, so finite differences apply.
  Array x = jnp::array({{0.3, -1.2, 2.5, 0.7}, {1.1, 0.2, -0.4, 3.3}, {0.9, 1.7, -2.2, 0.05}});
  for (const char* method : {"linear", "lower", "higher", "nearest", "midpoint"}) {
    jx::check_grads([method](const Array& x) { return jnp::quantile(x, 0.3, 1, method); }, std::tuple{x}, 1);
  }
  jx::check_grads([](const Array& x) { return jnp::median(x, 0); }, std::tuple{x}, 2);
  // d/dq of the linear interpolation is the gap between the neighbours times (n - 1).
  jx::check_grads([&x](const Array& q) { return jnp::quantile(x, q, 1); }, std::tuple{jnp::array({0.3, 0.55})}, 1);
  Array want = jnp::quantile(x, 0.3, 1);
  EXPECT_TRUE(jnp::allclose(jx::jit([](const Array& x) { return jnp::quantile(x, 0.3, 1); })(x), want));
  EXPECT_TRUE(jnp::allclose(jx::vmap([](const Array& r) { return jnp::quantile(r, 0.3); })(x), want));
  EXPECT_TRUE(jnp::allclose(jx::vmap([](const Array& r) { return jnp::median(r); })(x), jnp::median(x, 1)));
}

TEST(AverageTest, NumpyDocsExamples) {
  ExpectClose(jnp::average(jnp::arange(1, 5)), {2.5});
  ExpectClose(jnp::average(jnp::arange(1, 11), {}, jnp::arange(10, 0, -1)), {4.0});
  Array data = jnp::arange(6).reshape({3, 2});
  Array w = jnp::array({0.25f, 0.75f});
  ExpectClose(jnp::average(data, 1, w), {0.75, 2.75, 4.75});
  auto [avg, wsum] = jnp::average(data, 1, w, jnp::returned);
  ExpectClose(avg, {0.75, 2.75, 4.75});
  EXPECT_EQ(wsum.shape(), (Shape{3}));
  ExpectClose(wsum, {1.0, 1.0, 1.0});
  auto [mean, count] = jnp::average(data, 0, std::nullopt, jnp::returned);
  ExpectClose(mean, {2.0, 3.0});
  ExpectClose(count, {3.0, 3.0});
  EXPECT_THROW(jnp::average(data, {}, w), ValueError);      // shapes differ, no axis
  EXPECT_THROW(jnp::average(data, 0, w), ValueError);       // length 2 along axis 0 of 3
  EXPECT_THROW(jnp::average(data, 1, jnp::ones({2, 1})), TypeError);
}

TEST(AverageTest, GradientsAndVmap) {
  Array x = jnp::array({{0.3, -1.2, 2.5}, {1.1, 0.2, -0.4}});
  Array w = jnp::array({0.5, 1.5, 2.0});
  jx::check_grads([](const Array& x, const Array& w) { return jnp::average(x, 1, w); }, std::tuple{x, w}, 2);
  auto f = [](const Array& r, const Array& w) { return jnp::average(r, 0, w); };
  EXPECT_TRUE(jnp::allclose(jx::vmap(f, jx::in_axes{0, jx::none})(x, w), jnp::average(x, 1, w)));
}

TEST(BincountTest, NumpyDocsExamples) {
  EXPECT_EQ(jnp::bincount(jnp::arange(5)).to_vector<int32_t>(), (I32{1, 1, 1, 1, 1}));
  Array c = jnp::bincount(jnp::array({0, 1, 1, 3, 2, 1, 7}));
  EXPECT_EQ(c.dtype(), int32);
  EXPECT_EQ(c.to_vector<int32_t>(), (I32{1, 3, 1, 1, 0, 0, 0, 1}));
  Array w = jnp::array({0.3, 0.5, 0.2, 0.7, 1., -0.6});
  Array x = jnp::array({0, 1, 1, 2, 2, 2});
  Array wc = jnp::bincount(x, w);
  EXPECT_EQ(wc.dtype(), float64);
  ExpectClose(wc, {0.3, 0.7, 1.1}, 1e-12);
  EXPECT_EQ(jnp::bincount(x, std::nullopt, 5).to_vector<int32_t>(), (I32{1, 2, 3, 0, 0}));
  EXPECT_EQ(jnp::bincount(jnp::zeros({0}, int32), std::nullopt, 2).to_vector<int32_t>(), (I32{0, 0}));
}

TEST(BincountTest, JitNeedsLength) {
  Array x = jnp::array({0, 1, 1, 5, -2});
  // Values past the length are dropped, negative ones count as 0 (JAX's clip + mode="drop").
  auto f = jx::jit([](const Array& x) { return jnp::bincount(x, std::nullopt, 0, 3); });
  EXPECT_EQ(f(x).to_vector<int32_t>(), (I32{2, 2, 0}));
  // Under vmap each row counts separately.
  auto rows = jx::vmap([](const Array& r) { return jnp::bincount(r, std::nullopt, 0, 3); });
  EXPECT_EQ(rows(jnp::array({{0, 0, 2}, {1, 2, 2}})).to_vector<int32_t>(), (I32{2, 0, 1, 0, 1, 2}));
  auto g = jx::jit([](const Array& x) { return jnp::bincount(x); });
  EXPECT_THROW(g(x), ConcretizationError);
  EXPECT_THROW(jnp::bincount(jnp::array({0.5f})), TypeError);
  EXPECT_THROW(jnp::bincount(jnp::zeros({2, 2}, int32)), ValueError);
  // Differentiable in the weights.
  jx::check_grads([&x](const Array& w) { return jnp::bincount(x, w, 0, 4); }, std::tuple{jnp::array({1.0, 2.0, 3.0, 4.0, 5.0})}, 1);
}

}  // namespace
}  // namespace jx::statistics_test

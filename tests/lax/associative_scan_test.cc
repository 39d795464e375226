// lax::associative_scan: the examples of
// https://docs.jax.dev/en/latest/_autosummary/jax.lax.associative_scan.html, against a
// sequential reference (cumsum/cummax), over pytrees and axes, and under jit, vmap and grad.
#include "jx/lax/associative_scan.h"

#include <gtest/gtest.h>
#include <jx/jx.h>

namespace jx::associative_scan_test {
namespace {

namespace jnp = jx::numpy;
namespace lax = jx::lax;

Array Add(const Array& a, const Array& b) { return a + b; }

// >>> lax.associative_scan(jnp.add, jnp.arange(0, 4))              -> [0, 1, 3, 6]
// >>> lax.associative_scan(jnp.add, jnp.arange(0, 4), reverse=True) -> [6, 6, 5, 3]
TEST(AssociativeScanTest, DocsExamples) {
  Array x = jnp::arange(0, 4);
  Array fwd = lax::associative_scan(Add, x);
  EXPECT_EQ(fwd.dtype(), int32);
  EXPECT_EQ(fwd.to_vector<int32_t>(), (std::vector<int32_t>{0, 1, 3, 6}));
  EXPECT_EQ(lax::associative_scan(Add, x, {.reverse = true}).to_vector<int32_t>(), (std::vector<int32_t>{6, 6, 5, 3}));
}

TEST(AssociativeScanTest, MatchesTheSequentialScanForEveryLength) {
  for (int64_t n = 0; n <= 17; ++n) {
    Array x = jnp::arange(n).astype(float32) * 0.5f - 2.0f;
    EXPECT_TRUE(jnp::array_equal(lax::associative_scan(Add, x), jnp::cumsum(x))) << n;
    Array m = lax::associative_scan([](const Array& a, const Array& b) { return lax::max(a, b); }, jnp::sin(x * 3.0f));
    EXPECT_TRUE(jnp::array_equal(m, lax::cummax(jnp::sin(x * 3.0f), 0))) << n;
  }
  Array b = jnp::array(std::vector<bool>{false, false, true, false, true});
  Array any = lax::associative_scan([](const Array& p, const Array& q) { return lax::bitwise_or(p, q); }, b);
  EXPECT_EQ(any.to_vector<bool>(), (std::vector<bool>{false, false, true, true, true}));
}

// Any axis, negative too, reverse included.
TEST(AssociativeScanTest, AlongAnAxis) {
  Array x = jnp::arange(24).astype(float32).reshape({2, 3, 4});
  for (int64_t axis : {0, 1, 2, -1}) {
    EXPECT_TRUE(jnp::array_equal(lax::associative_scan(Add, x, {.axis = axis}), jnp::cumsum(x, axis)))
        << axis;
    Array want = jnp::flip(jnp::cumsum(jnp::flip(x, axis), axis), axis);
    EXPECT_TRUE(jnp::array_equal(lax::associative_scan(Add, x, {.reverse = true, .axis = axis}), want))
        << axis;
  }
  EXPECT_THROW(lax::associative_scan(Add, x, {.axis = 3}), ShapeError);
}

// A pytree with a non-commutative fn: composing affine maps y = a x + b, the first-order
// linear recurrence h_t = a_t h_{t-1} + b_t with h_{-1} = 0.
TEST(AssociativeScanTest, AffineRecurrenceOverAPair) {
  using Affine = std::pair<Array, Array>;
  auto compose = [](const Affine& first, const Affine& second) {
    return Affine{second.first * first.first, second.first * first.second + second.second};
  };
  Array a = jnp::array(std::vector<double>{0.5, -1.0, 2.0, 0.25, 3.0});
  Array b = jnp::array(std::vector<double>{1.0, 2.0, -1.0, 4.0, 0.5});
  auto [prod, h] = lax::associative_scan(compose, Affine{a, b});
  std::vector<double> want;
  double state = 0;
  for (int t = 0; t < 5; ++t) {
    state = a.to_vector<double>()[t] * state + b.to_vector<double>()[t];
    want.push_back(state);
  }
  std::vector<double> got = h.to_vector<double>();
  for (int t = 0; t < 5; ++t) EXPECT_NEAR(got[t], want[t], 1e-12) << t;
  EXPECT_NEAR(prod.to_vector<double>()[4], 0.5 * -1.0 * 2.0 * 0.25 * 3.0, 1e-12);
  // fn must keep the structure and shapes of elems.
  EXPECT_THROW(lax::associative_scan([](const Affine& p, const Affine&) { return Affine{p.first, jnp::sum(p.second)}; },
                                     Affine{a, b}),
               TypeError);
}

TEST(AssociativeScanTest, UnderJitVmapAndGrad) {
  Array x = jnp::linspace(0.1, 1.3, 7, true, float64);
  auto cumprod = [](const Array& v) { return lax::associative_scan([](const Array& p, const Array& q) { return p * q; }, v); };
  EXPECT_TRUE(jnp::allclose(jit(cumprod)(x), jnp::cumprod(x)));
  Array xs = jnp::stack({x, x * 2.0, x - 1.0});
  EXPECT_TRUE(jnp::allclose(vmap(cumprod)(xs), jnp::cumprod(xs, 1)));
  check_grads([&](const Array& v) { return cumprod(v); }, std::tuple{x}, 2);
  check_grads([&](const Array& v) { return lax::associative_scan(Add, v, {.reverse = true}); }, std::tuple{x}, 1);
}

}  // namespace
}  // namespace jx::associative_scan_test

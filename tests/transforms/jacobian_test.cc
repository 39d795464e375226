// jacfwd, jacrev and hessian against closed forms and finite differences; stop_gradient.
#include "jx/transforms/api.h"

#include <cmath>

#include <gtest/gtest.h>
#include <jx/jx.h>

namespace jx::jacobian_test {
namespace {

namespace jnp = jx::numpy;
namespace lax = jx::lax;

Array F64(std::vector<double> v) { return jnp::array(v).astype(float64); }

// f(x) = [x0 * x1, sin(x2), x0^2]: J = [[x1, x0, 0], [0, 0, cos x2], [2 x0, 0, 0]].
Array F(const Array& x) {
  Array a = lax::slice(x, {0}, {1}), b = lax::slice(x, {1}, {2}), c = lax::slice(x, {2}, {3});
  return lax::concatenate({lax::mul(a, b), lax::sin(c), lax::mul(a, a)}, 0);
}

TEST(JacobianTest, ForwardAndReverseAgreeWithTheClosedForm) {
  Array x = F64({0.5, -1.5, 0.25});
  const std::vector<double> want = {-1.5, 0.5, 0, 0, 0, std::cos(0.25), 1.0, 0, 0};
  for (const Array& j : {jacfwd(F)(x), jacrev(F)(x)}) {
    ASSERT_EQ(j.shape(), (Shape{3, 3}));
    std::vector<double> got = j.to_vector<double>();
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-15) << i;
  }
}

TEST(JacobianTest, ShapesFollowOutputThenInput) {
  auto f = [](const Array& x) { return lax::mul(x, x); };  // f32[2,3] -> f32[2,3]
  Array x = jnp::ones({2, 3});
  EXPECT_EQ(jacfwd(f)(x).shape(), (Shape{2, 3, 2, 3}));
  EXPECT_EQ(jacrev(f)(x).shape(), (Shape{2, 3, 2, 3}));
  EXPECT_EQ(jacfwd(f)(x).dtype(), float32);
}

TEST(JacobianTest, HessianOfATanhMlpMatchesFiniteDifferences) {
  // loss(x) = sum(tanh(W2 tanh(W1 x))) for fixed weights.
  Array w1 = F64({0.3, -0.2, 0.5, 0.1, 0.4, -0.6}).reshape({3, 2});
  Array w2 = F64({0.7, -0.1, 0.2, 0.3, 0.5, -0.4}).reshape({2, 3});
  auto loss = [&](const Array& x) {
    Array h = lax::tanh(lax::dot_general(w1, x, {{1}, {0}, {}, {}}));
    return lax::reduce_sum(lax::tanh(lax::dot_general(w2, h, {{1}, {0}, {}, {}})), {0});
  };
  Array x = F64({0.4, -0.8});
  Array h = hessian(loss)(x);
  ASSERT_EQ(h.shape(), (Shape{2, 2}));
  const double eps = 1e-4;
  std::vector<double> got = h.to_vector<double>();
  for (int i = 0; i < 2; ++i) {
    std::vector<double> e(2, 0.0);
    e[i] = eps;
    Array gp = grad(loss)(lax::add(x, F64(e))), gm = grad(loss)(lax::sub(x, F64(e)));
    std::vector<double> p = gp.to_vector<double>(), m = gm.to_vector<double>();
    for (int j = 0; j < 2; ++j) EXPECT_NEAR(got[j * 2 + i], (p[j] - m[j]) / (2 * eps), 1e-8) << i << "," << j;
  }
  EXPECT_NEAR(got[1], got[2], 1e-14);  // symmetric
}

TEST(JacobianTest, IntegerInputsAreRejected) {
  auto f = [](const Array& x) { return lax::mul(x, x); };
  EXPECT_THROW(jacfwd(f)(jnp::arange(3)), TypeError);
  EXPECT_THROW(jacrev(f)(jnp::arange(3)), TypeError);
}

TEST(StopGradientTest, BlocksDerivativesButNotValues) {
  auto f = [](const Array& x) { return lax::mul(x, lax::stop_gradient(x)); };  // d/dx = stop(x)
  Array x = Array::Scalar(3.0, float64);
  EXPECT_EQ(f(x).item<double>(), 9.0);
  EXPECT_EQ(grad(f)(x).item<double>(), 3.0);
  auto [y, t] = jvp(f, std::tuple{x}, std::tuple{Array::Scalar(1.0, float64)});
  EXPECT_EQ(t.item<double>(), 3.0);
  EXPECT_EQ(vmap(lax::stop_gradient)(F64({1, 2})).to_vector<double>(), (std::vector<double>{1, 2}));
  EXPECT_EQ(make_jaxpr(lax::stop_gradient)(F64({1})).ToString(),
            "{ lambda ; a:f64[1]. let b:f64[1] = stop_gradient a in (b,) }");
}

}  // namespace
}  // namespace jx::jacobian_test

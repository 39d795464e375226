#include "jx/nn/functions.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <numbers>
#include <string>
#include <vector>

#include "jx/jx.h"
#include "tests/nn/nn_test_util.h"

namespace jx::nn::functions_test {
namespace {

namespace jnp = jx::numpy;
namespace jrandom = jx::random;
using testing::MaxAbsDiff;

using UnaryFn = std::function<Array(const Array&)>;

// d f / dx elementwise at x (f elementwise): the gradient of sum(f(x)).
Array ElementwiseGrad(const UnaryFn& f, const Array& x) {
  return jx::grad([f](const Array& v) { return jnp::sum(f(v)); })(x);
}

// Points away from every kink of the functions below (0, +-1, +-3, 6).
Array SmoothPoints() { return jnp::array({-4.3, -2.7, -1.3, -0.4, 0.35, 0.8, 1.2, 2.9, 5.6, 7.1}); }

struct ElementwiseCase {
  std::string name;
  UnaryFn f;
  UnaryFn reference;  // the textbook formula in jnp, evaluated in float64
};

std::vector<ElementwiseCase> ElementwiseCases() {
  const double kSeluAlpha = 1.6732632423543772848170429916717;
  const double kSeluScale = 1.0507009873554804934193349852946;
  auto sig = [](const Array& x) { return jnp::divide(1.0, jnp::add(1.0, jnp::exp(jnp::negative(x)))); };
  auto sp = [](const Array& x) { return jnp::log(jnp::add(1.0, jnp::exp(x))); };
  return {
      {"relu", relu, [](const Array& x) { return jnp::where(jnp::greater(x, 0), x, 0.0); }},
      {"relu6", relu6, [](const Array& x) { return jnp::clip(x, 0.0, 6.0); }},
      {"leaky_relu", [](const Array& x) { return leaky_relu(x, 0.2); },
       [](const Array& x) { return jnp::where(jnp::greater(x, 0), x, jnp::multiply(0.2, x)); }},
      {"elu", [](const Array& x) { return elu(x, 1.5); },
       [](const Array& x) { return jnp::where(jnp::greater(x, 0), x, jnp::multiply(1.5, jnp::subtract(jnp::exp(x), 1.0))); }},
      {"celu", [](const Array& x) { return celu(x, 0.7); },
       [](const Array& x) {
         return jnp::where(jnp::greater(x, 0), x, jnp::multiply(0.7, jnp::subtract(jnp::exp(jnp::divide(x, 0.7)), 1.0)));
       }},
      {"selu", selu,
       [=](const Array& x) {
         return jnp::multiply(kSeluScale, jnp::where(jnp::greater(x, 0), x,
                                                     jnp::multiply(kSeluAlpha, jnp::subtract(jnp::exp(x), 1.0))));
       }},
      {"gelu_exact", [](const Array& x) { return gelu(x, false); },
       [](const Array& x) {
         // Phi(x) = erfc(-x / sqrt(2)) / 2.
         return jnp::multiply(x, jnp::multiply(0.5, lax::erfc(jnp::divide(jnp::negative(x), std::numbers::sqrt2))));
       }},
      {"gelu_tanh", [](const Array& x) { return gelu(x); },
       [](const Array& x) {
         Array u = jnp::multiply(std::sqrt(2 / std::numbers::pi), jnp::add(x, jnp::multiply(0.044715, jnp::power(x, 3))));
         return jnp::multiply(jnp::multiply(0.5, x), jnp::add(1.0, jnp::tanh(u)));
       }},
      {"silu", silu, [=](const Array& x) { return jnp::multiply(x, sig(x)); }},
      {"swish", swish, [=](const Array& x) { return jnp::multiply(x, sig(x)); }},
      {"mish", mish, [=](const Array& x) { return jnp::multiply(x, jnp::tanh(sp(x))); }},
      {"sigmoid", sigmoid, sig},
      {"log_sigmoid", log_sigmoid, [=](const Array& x) { return jnp::log(sig(x)); }},
      {"softplus", softplus, sp},
      {"soft_sign", soft_sign, [](const Array& x) { return jnp::divide(x, jnp::add(1.0, jnp::abs(x))); }},
      {"hard_tanh", hard_tanh, [](const Array& x) { return jnp::clip(x, -1.0, 1.0); }},
      {"hard_sigmoid", hard_sigmoid, [](const Array& x) { return jnp::divide(jnp::clip(jnp::add(x, 3.0), 0.0, 6.0), 6.0); }},
      {"hard_silu", hard_silu,
       [](const Array& x) { return jnp::multiply(x, jnp::divide(jnp::clip(jnp::add(x, 3.0), 0.0, 6.0), 6.0)); }},
  };
}

TEST(NnFunctionsTest, ElementwiseMatchReferenceAndKeepDtype) {
  const Array x = jnp::linspace(-8.0, 8.0, 97, true, float64);
  for (const ElementwiseCase& c : ElementwiseCases()) {
    SCOPED_TRACE(c.name);
    const Array y = c.f(x);
    EXPECT_EQ(y.dtype(), float64);
    EXPECT_EQ(y.shape(), x.shape());
    EXPECT_LT(MaxAbsDiff(y, c.reference(x)), 1e-12);
    // float32 in, float32 out, close to the float64 values.
    const Array y32 = c.f(x.astype(float32));
    EXPECT_EQ(y32.dtype(), float32);
    EXPECT_LT(MaxAbsDiff(y32, y), 2e-6 * 8);
  }
}

TEST(NnFunctionsTest, ElementwiseCheckGrads) {
  const Array x = SmoothPoints();
  for (const ElementwiseCase& c : ElementwiseCases()) {
    SCOPED_TRACE(c.name);
    jx::check_grads(c.f, std::tuple{x}, 2);
    // And against the reference formula's own derivative.
    EXPECT_LT(MaxAbsDiff(ElementwiseGrad(c.f, x), ElementwiseGrad(c.reference, x)), 1e-12);
  }
}

TEST(NnFunctionsTest, IntegerInputsComputeInFloat32) {
  EXPECT_EQ(sigmoid(jnp::array({0, 1})).dtype(), float32);
  EXPECT_EQ(gelu(jnp::array({0, 1})).dtype(), float32);
  EXPECT_EQ(softmax(jnp::array({0, 1})).dtype(), float32);
  EXPECT_EQ(relu(jnp::array({-1, 2})).to_vector<int32_t>(), (std::vector<int32_t>{0, 2}));
  EXPECT_EQ(hard_tanh(jnp::array({-5, 0, 5})).to_vector<int32_t>(), (std::vector<int32_t>{-1, 0, 1}));
}

TEST(NnFunctionsTest, KnownValues) {
  // jax.nn.gelu(1.0, approximate=False), jax.nn.gelu(1.0) and jax.nn.selu(-1.0).
  EXPECT_NEAR(gelu(jnp::array(1.0), false).item<double>(), 0.8413447460685429, 1e-15);
  EXPECT_NEAR(gelu(jnp::array(1.0)).item<double>(), 0.8411919906082768, 1e-15);
  EXPECT_NEAR(selu(jnp::array(-1.0)).item<double>(), -1.1113307378125628, 1e-15);
  EXPECT_NEAR(softplus(jnp::array(0.0)).item<double>(), std::log(2.0), 1e-15);
}

TEST(NnFunctionsTest, DerivativesAtKinksAreJaxs) {
  // relu'(0) = 0 (JAX's custom_jvp), relu6'(0) = relu6'(6) = 0.
  const Array kinks = jnp::array({0.f, 6.f});
  EXPECT_EQ(ElementwiseGrad(relu, kinks).to_vector<float>(), (std::vector<float>{0.f, 1.f}));
  EXPECT_EQ(ElementwiseGrad(relu6, kinks).to_vector<float>(), (std::vector<float>{0.f, 0.f}));
  // jvp agrees with grad, under jit too.
  auto [y, t] = jx::jvp(jx::jit([](const Array& v) { return relu(v); }), std::tuple{jnp::array({-1.f, 0.f, 2.f})},
                        std::tuple{jnp::ones({3})});
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{0.f, 0.f, 1.f}));
  // softplus'(0) = 1/2; leaky_relu'(0) = 1 (the x >= 0 branch, as JAX's where).
  EXPECT_FLOAT_EQ(ElementwiseGrad(softplus, jnp::array({0.f})).to_vector<float>()[0], 0.5f);
  EXPECT_FLOAT_EQ(ElementwiseGrad([](const Array& v) { return leaky_relu(v); }, jnp::array({0.f})).to_vector<float>()[0],
                  1.f);
}

TEST(NnFunctionsTest, LargeInputsStayFiniteWithFiniteDerivatives) {
  const Array big = jnp::array({-1000.f, 1000.f});
  EXPECT_EQ(softplus(big).to_vector<float>(), (std::vector<float>{0.f, 1000.f}));
  EXPECT_EQ(sigmoid(big).to_vector<float>(), (std::vector<float>{0.f, 1.f}));
  EXPECT_EQ(log_sigmoid(big).to_vector<float>(), (std::vector<float>{-1000.f, 0.f}));
  EXPECT_EQ(elu(big).to_vector<float>(), (std::vector<float>{-1.f, 1000.f}));
  EXPECT_EQ(silu(big).to_vector<float>(), (std::vector<float>{0.f, 1000.f}));
  EXPECT_EQ(mish(big).to_vector<float>(), (std::vector<float>{0.f, 1000.f}));
  EXPECT_EQ(gelu(big).to_vector<float>(), (std::vector<float>{0.f, 1000.f}));
  EXPECT_EQ(gelu(big, false).to_vector<float>(), (std::vector<float>{0.f, 1000.f}));
  struct Expected {
    std::string name;
    UnaryFn f;
    std::vector<float> grad;  // at -1000 and 1000
  };
  const std::vector<Expected> cases = {
      {"softplus", softplus, {0.f, 1.f}},       {"sigmoid", sigmoid, {0.f, 0.f}},
      {"log_sigmoid", log_sigmoid, {1.f, 0.f}}, {"elu", [](const Array& v) { return elu(v); }, {0.f, 1.f}},
      {"silu", silu, {0.f, 1.f}},               {"selu", selu, {0.f, 1.0507009873554804934193349852946f}},
      {"gelu", [](const Array& v) { return gelu(v); }, {0.f, 1.f}},
      {"gelu_exact", [](const Array& v) { return gelu(v, false); }, {0.f, 1.f}},
  };
  for (const Expected& c : cases) {
    SCOPED_TRACE(c.name);
    const std::vector<float> g = ElementwiseGrad(c.f, big).to_vector<float>();
    ASSERT_EQ(g.size(), 2u);
    EXPECT_NEAR(g[0], c.grad[0], 1e-6);
    EXPECT_NEAR(g[1], c.grad[1], 1e-6);
  }
}

TEST(NnFunctionsTest, SoftmaxAndLogSoftmaxMatchReference) {
  const Array x = jrandom::normal(jrandom::key(0), {3, 5}, float64);
  const Array e = jnp::exp(x);
  EXPECT_LT(MaxAbsDiff(softmax(x), jnp::divide(e, jnp::sum(e, -1, true))), 1e-15);
  EXPECT_LT(MaxAbsDiff(softmax(x, 0), jnp::divide(e, jnp::sum(e, 0, true))), 1e-15);
  EXPECT_LT(MaxAbsDiff(softmax(x, Axis{}), jnp::divide(e, jnp::sum(e))), 1e-15);
  EXPECT_LT(MaxAbsDiff(log_softmax(x), jnp::log(jnp::divide(e, jnp::sum(e, -1, true)))), 1e-14);
  EXPECT_LT(MaxAbsDiff(log_softmax(x, {0, 1}), jnp::log(jnp::divide(e, jnp::sum(e)))), 1e-14);
  const Array w = jrandom::normal(jrandom::key(1), {3, 5}, float64);
  // Weighted sums so the derivative is not the trivial zero of sum(softmax).
  jx::check_grads([&w](const Array& v) { return jnp::sum(jnp::multiply(softmax(v), w)); }, std::tuple{x}, 2);
  jx::check_grads([&w](const Array& v) { return jnp::sum(jnp::multiply(softmax(v, 0), w)); }, std::tuple{x}, 2);
  jx::check_grads([&w](const Array& v) { return jnp::sum(jnp::multiply(log_softmax(v), w)); }, std::tuple{x}, 2);
}

TEST(NnFunctionsTest, SoftmaxStableForLargeLogits) {
  const Array x = jnp::array({1000.f, 0.f});
  EXPECT_EQ(log_softmax(x).to_vector<float>(), (std::vector<float>{0.f, -1000.f}));
  EXPECT_EQ(softmax(x).to_vector<float>(), (std::vector<float>{1.f, 0.f}));
  const Array w = jnp::array({0.3f, -0.7f});
  const std::vector<float> g =
      jx::grad([&w](const Array& v) { return jnp::sum(jnp::multiply(log_softmax(v), w)); })(x).to_vector<float>();
  // d/dx sum(w * (x - lse(x))) = w - sum(w) * softmax(x) = [0.3 + 0.4, -0.7].
  EXPECT_NEAR(g[0], 0.7f, 1e-6);
  EXPECT_NEAR(g[1], -0.7f, 1e-6);
  const std::vector<float> gs =
      jx::grad([&w](const Array& v) { return jnp::sum(jnp::multiply(softmax(v), w)); })(x).to_vector<float>();
  EXPECT_TRUE(std::isfinite(gs[0]) && std::isfinite(gs[1]));
}

TEST(NnFunctionsTest, SoftmaxOfMaskedLogits) {
  const float inf = std::numeric_limits<float>::infinity();
  const Array x = jnp::array({{0.f, -inf, 0.f}, {-inf, -inf, -inf}});
  const std::vector<float> p = softmax(x).to_vector<float>();
  const std::vector<float> lp = log_softmax(x).to_vector<float>();
  EXPECT_EQ(std::vector<float>(p.begin(), p.begin() + 3), (std::vector<float>{0.5f, 0.f, 0.5f}));
  EXPECT_FLOAT_EQ(lp[0], -std::log(2.f));
  EXPECT_EQ(lp[1], -inf);
  for (int i = 3; i < 6; ++i) EXPECT_TRUE(std::isnan(p[i]) && std::isnan(lp[i])) << i;
  // The masked entry's gradient is 0, the others' finite.
  const Array w = jnp::array({1.f, 2.f, 3.f});
  const std::vector<float> g =
      jx::grad([&w](const Array& v) { return jnp::sum(jnp::multiply(softmax(v), w)); })(jnp::array({0.f, -inf, 0.f}))
          .to_vector<float>();
  EXPECT_FLOAT_EQ(g[0], -0.5f);
  EXPECT_EQ(g[1], 0.f);
  EXPECT_FLOAT_EQ(g[2], 0.5f);
}

TEST(NnFunctionsTest, SoftmaxUnderJitAndVmap) {
  const Array x = jrandom::normal(jrandom::key(2), {4, 6});
  const Array eager = softmax(x);
  EXPECT_LT(MaxAbsDiff(jx::jit([](const Array& v) { return softmax(v); })(x), eager), 1e-6);
  EXPECT_LT(MaxAbsDiff(jx::vmap([](const Array& v) { return softmax(v); })(x), eager), 1e-6);
  EXPECT_LT(MaxAbsDiff(jx::vmap([](const Array& v) { return log_softmax(v); })(x), log_softmax(x)), 1e-6);
}

TEST(NnFunctionsTest, LogsumexpAxesKeepdimsAndInfinities) {
  const Array x = jrandom::normal(jrandom::key(3), {2, 3, 4}, float64);
  EXPECT_LT(MaxAbsDiff(logsumexp(x), jnp::log(jnp::sum(jnp::exp(x)))), 1e-14);
  const Array l = logsumexp(x, {0, 2}, true);
  EXPECT_EQ(l.shape(), (Shape{1, 3, 1}));
  EXPECT_LT(MaxAbsDiff(l, jnp::log(jnp::sum(jnp::exp(x), {0, 2}, true))), 1e-14);
  const float inf = std::numeric_limits<float>::infinity();
  const Array rows = jnp::array({{-inf, -inf}, {1000.f, 1000.f}, {inf, 0.f}});
  const std::vector<float> r = logsumexp(rows, 1).to_vector<float>();
  EXPECT_EQ(r[0], -inf);
  EXPECT_FLOAT_EQ(r[1], 1000.f + std::log(2.f));
  EXPECT_EQ(r[2], inf);
  // The derivative is softmax, finite for large entries.
  const std::vector<float> g = jx::grad([](const Array& v) { return logsumexp(v); })(jnp::array({1000.f, 1000.f}))
                                   .to_vector<float>();
  EXPECT_FLOAT_EQ(g[0], 0.5f);
  EXPECT_FLOAT_EQ(g[1], 0.5f);
  jx::check_grads([](const Array& v) { return logsumexp(v, 1); }, std::tuple{x}, 2);
}

TEST(NnFunctionsTest, GluSplitsInHalves) {
  const Array x = jrandom::normal(jrandom::key(4), {3, 4}, float64);
  const Array a = lax::slice(x, {0, 0}, {3, 2});
  const Array b = lax::slice(x, {0, 2}, {3, 4});
  EXPECT_LT(MaxAbsDiff(glu(x), jnp::multiply(a, sigmoid(b))), 1e-15);
  const Array sq = jrandom::normal(jrandom::key(6), {4, 3}, float64);
  EXPECT_LT(MaxAbsDiff(glu(sq, 0), jnp::multiply(lax::slice(sq, {0, 0}, {2, 3}), sigmoid(lax::slice(sq, {2, 0}, {4, 3})))),
            1e-15);
  jx::check_grads([](const Array& v) { return glu(v); }, std::tuple{x}, 2);
}

TEST(NnFunctionsTest, GluOddAxisIsAShapeError) {
  EXPECT_THROW(glu(jnp::zeros({3, 5})), ShapeError);
}

TEST(NnFunctionsTest, StandardizeMatchesReference) {
  const Array x = jrandom::normal(jrandom::key(5), {4, 6}, float64);
  const Array m = jnp::mean(x, -1, true);
  const Array v = jnp::var(x, -1, true);
  EXPECT_LT(MaxAbsDiff(standardize(x), jnp::divide(jnp::subtract(x, m), jnp::sqrt(jnp::add(v, 1e-5)))), 1e-13);
  const Array s = standardize(x, 0, std::nullopt, std::nullopt, 0.0);
  EXPECT_LT(MaxAbsDiff(jnp::mean(s, 0), jnp::zeros({6}, float64)), 1e-14);
  EXPECT_LT(MaxAbsDiff(jnp::var(s, 0), jnp::ones({6}, float64)), 1e-12);
  // Given statistics are used as they are.
  const Array given = standardize(x, -1, jnp::array(1.0), jnp::array(4.0), 0.0);
  EXPECT_LT(MaxAbsDiff(given, jnp::divide(jnp::subtract(x, 1.0), 2.0)), 1e-15);
  jx::check_grads([](const Array& v) { return jnp::sum(jnp::sin(standardize(v))); }, std::tuple{x}, 2);
}

TEST(NnFunctionsTest, OneHot) {
  const Array labels = jnp::array({0, 2, -1, 3});
  const Array y = one_hot(labels, 3);
  EXPECT_EQ(y.shape(), (Shape{4, 3}));
  EXPECT_EQ(y.dtype(), float32);
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0}));
  const Array t = one_hot(labels, 3, int32, 0);
  EXPECT_EQ(t.shape(), (Shape{3, 4}));
  EXPECT_EQ(t.to_vector<int32_t>(), (std::vector<int32_t>{1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0}));
  const Array batched = one_hot(jnp::array({{1, 0}, {2, 1}}), 3);
  EXPECT_EQ(batched.shape(), (Shape{2, 2, 3}));
  EXPECT_EQ(jnp::argmax(batched, -1).to_vector<int32_t>(), (std::vector<int32_t>{1, 0, 2, 1}));
  // Float ids work as JAX's: whole numbers match their class, others none.
  EXPECT_EQ(one_hot(jnp::array({1.f, 2.5f}), 3).to_vector<float>(), (std::vector<float>{0, 1, 0, 0, 0, 0}));
  EXPECT_THROW(one_hot(jnp::array({true}), 3), TypeError);
  // Under jit and vmap.
  EXPECT_EQ(jx::jit([](const Array& l) { return one_hot(l, 3); })(labels).to_vector<float>(), y.to_vector<float>());
  EXPECT_EQ(jx::vmap([](const Array& l) { return one_hot(l, 3); })(labels).to_vector<float>(), y.to_vector<float>());
}

}  // namespace
}  // namespace jx::nn::functions_test

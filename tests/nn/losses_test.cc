#include "jx/nn/losses.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "jx/jx.h"
#include "tests/nn/nn_test_util.h"

namespace jx::nn::losses_test {
namespace {

namespace jnp = jx::numpy;
namespace jrandom = jx::random;
using testing::MaxAbsDiff;

// -log(softmax(logits)) as the textbook formula, in float64.
Array NaiveNegLogSoftmax(const Array& logits) {
  const Array e = jnp::exp(logits);
  return jnp::negative(jnp::log(jnp::divide(e, jnp::sum(e, -1, true))));
}

TEST(LossesTest, IntegerLabelCrossEntropyMatchesReference) {
  const Array logits = jrandom::normal(jrandom::key(0), {2, 3, 5}, float64);
  const Array labels = jnp::array(std::vector<int32_t>{0, 4, 2, 1, 3, 4}, {2, 3});
  const Array loss = softmax_cross_entropy_with_integer_labels(logits, labels);
  EXPECT_EQ(loss.shape(), (Shape{2, 3}));
  EXPECT_EQ(loss.dtype(), float64);
  const Array ref = jnp::sum(jnp::multiply(one_hot(labels, 5, float64), NaiveNegLogSoftmax(logits)), -1);
  EXPECT_LT(MaxAbsDiff(loss, ref), 1e-14);
  // The gradient is softmax - one_hot, and passes check_grads.
  const Array g = jx::grad([&labels](const Array& l) {
    return jnp::sum(softmax_cross_entropy_with_integer_labels(l, labels));
  })(logits);
  EXPECT_LT(MaxAbsDiff(g, jnp::subtract(softmax(logits), one_hot(labels, 5, float64))), 1e-14);
  jx::check_grads([&labels](const Array& l) { return jnp::sum(softmax_cross_entropy_with_integer_labels(l, labels)); },
                  std::tuple{logits}, 2);
}

TEST(LossesTest, IntegerLabelCrossEntropyStableForLargeLogits) {
  const Array logits = jnp::array({{1000.f, 0.f}, {1000.f, 0.f}, {-1000.f, 1000.f}});
  const Array labels = jnp::array({0, 1, 0});
  EXPECT_EQ(softmax_cross_entropy_with_integer_labels(logits, labels).to_vector<float>(),
            (std::vector<float>{0.f, 1000.f, 2000.f}));
  const Array g =
      jx::grad([&labels](const Array& l) { return jnp::sum(softmax_cross_entropy_with_integer_labels(l, labels)); })(
          logits);
  EXPECT_EQ(g.to_vector<float>(), (std::vector<float>{0.f, 0.f, 1.f, -1.f, -1.f, 1.f}));
}

TEST(LossesTest, IntegerLabelErrorsNameShapes) {
  const Array logits = jnp::zeros({4, 10});
  EXPECT_THROW(softmax_cross_entropy_with_integer_labels(logits, jnp::zeros({4})), TypeError);
  try {
    softmax_cross_entropy_with_integer_labels(logits, jnp::array({1, 2, 3}));
    ADD_FAILURE() << "no error";
  } catch (const ShapeError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("softmax_cross_entropy_with_integer_labels"), std::string::npos) << msg;
    EXPECT_NE(msg.find("i32[3]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("f32[4,10]"), std::string::npos) << msg;
  }
}

TEST(LossesTest, ProbabilityLabelCrossEntropy) {
  const Array logits = jrandom::normal(jrandom::key(1), {4, 6}, float64);
  const Array labels = jnp::array({5, 0, 3, 3});
  // One-hot labels agree with integer labels.
  EXPECT_LT(MaxAbsDiff(softmax_cross_entropy(logits, one_hot(labels, 6, float64)),
                       softmax_cross_entropy_with_integer_labels(logits, labels)),
            1e-14);
  // Soft labels: sum_c p_c * -log softmax_c.
  const Array probs = softmax(jrandom::normal(jrandom::key(2), {4, 6}, float64));
  EXPECT_LT(MaxAbsDiff(softmax_cross_entropy(logits, probs), jnp::sum(jnp::multiply(probs, NaiveNegLogSoftmax(logits)), -1)),
            1e-14);
  jx::check_grads([](const Array& l, const Array& p) { return jnp::sum(softmax_cross_entropy(l, p)); },
                  std::tuple{logits, probs}, 2);
  // A masked (-inf) class with zero probability contributes nothing.
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(softmax_cross_entropy(jnp::array({0.f, -inf}), jnp::array({1.f, 0.f})).item<float>(), 0.f);
  EXPECT_THROW(softmax_cross_entropy(logits, jnp::zeros({4, 5}, float64)), ShapeError);
}

TEST(LossesTest, SigmoidBinaryCrossEntropy) {
  const Array logits = jrandom::normal(jrandom::key(3), {3, 4}, float64);
  const Array labels = jrandom::uniform(jrandom::key(4), {3, 4}, float64);
  const Array p = jnp::divide(1.0, jnp::add(1.0, jnp::exp(jnp::negative(logits))));
  const Array ref = jnp::negative(
      jnp::add(jnp::multiply(labels, jnp::log(p)), jnp::multiply(jnp::subtract(1.0, labels), jnp::log(jnp::subtract(1.0, p)))));
  EXPECT_LT(MaxAbsDiff(sigmoid_binary_cross_entropy(logits, labels), ref), 1e-14);
  jx::check_grads([](const Array& l, const Array& y) { return jnp::sum(sigmoid_binary_cross_entropy(l, y)); },
                  std::tuple{logits, labels}, 2);
  // Large logits: exact values, finite gradients (sigmoid(logit) - label).
  const Array big = jnp::array({1000.f, -1000.f, 1000.f});
  const Array y = jnp::array({1.f, 1.f, 0.f});
  EXPECT_EQ(sigmoid_binary_cross_entropy(big, y).to_vector<float>(), (std::vector<float>{0.f, 1000.f, 1000.f}));
  const Array g = jx::grad([&y](const Array& l) { return jnp::sum(sigmoid_binary_cross_entropy(l, y)); })(big);
  EXPECT_EQ(g.to_vector<float>(), (std::vector<float>{0.f, -1.f, 1.f}));
}

TEST(LossesTest, SquaredErrorL2AndMse) {
  const Array pred = jnp::array({1.f, 2.f, 4.f});
  const Array target = jnp::array({1.5f, 2.f, 1.f});
  EXPECT_EQ(squared_error(pred, target).to_vector<float>(), (std::vector<float>{0.25f, 0.f, 9.f}));
  EXPECT_EQ(squared_error(pred).to_vector<float>(), (std::vector<float>{1.f, 4.f, 16.f}));
  EXPECT_EQ(l2_loss(pred, target).to_vector<float>(), (std::vector<float>{0.125f, 0.f, 4.5f}));
  EXPECT_FLOAT_EQ(mean_squared_error(pred, target).item<float>(), 9.25f / 3);
  EXPECT_THROW(squared_error(pred, jnp::zeros({2})), ShapeError);
  const Array a = jrandom::normal(jrandom::key(5), {5}, float64);
  const Array b = jrandom::normal(jrandom::key(6), {5}, float64);
  jx::check_grads([](const Array& p, const Array& t) { return mean_squared_error(p, t); }, std::tuple{a, b}, 2);
}

TEST(LossesTest, Accuracy) {
  const Array logits = jnp::array({{0.1f, 0.9f}, {0.8f, 0.2f}, {0.3f, 0.7f}, {0.6f, 0.4f}});
  const Array labels = jnp::array({1, 0, 0, 0});
  const Array acc = accuracy(logits, labels);
  EXPECT_EQ(acc.dtype(), float32);
  EXPECT_FLOAT_EQ(acc.item<float>(), 0.75f);
  EXPECT_FLOAT_EQ(jx::jit([](const Array& l, const Array& y) { return accuracy(l, y); })(logits, labels).item<float>(), 0.75f);
  EXPECT_THROW(accuracy(logits, jnp::array({1, 0})), ShapeError);
}

TEST(LossesTest, UnderJitAndVmap) {
  const Array logits = jrandom::normal(jrandom::key(7), {8, 10});
  const Array labels = jrandom::randint(jrandom::key(8), {8}, 0, 10);
  const Array eager = softmax_cross_entropy_with_integer_labels(logits, labels);
  auto f = [](const Array& l, const Array& y) { return softmax_cross_entropy_with_integer_labels(l, y); };
  EXPECT_LT(MaxAbsDiff(jx::jit(f)(logits, labels), eager), 1e-6);
  EXPECT_LT(MaxAbsDiff(jx::vmap(f)(logits, labels), eager), 1e-6);
}

}  // namespace
}  // namespace jx::nn::losses_test

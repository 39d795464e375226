// check_grads: passes on correct derivatives (orders 1 and 2, each mode), and catches a wrong
// custom_jvp rule (forward mode), a wrong custom_vjp bwd (reverse mode), a rule whose own
// derivative is wrong (only at order 2), with JAX's per-dtype default tolerances.
#include "jx/transforms/api.h"

#include <cmath>
#include <string>

#include <gtest/gtest.h>
#include <jx/jx.h>

namespace jx::check_grads_test {
namespace {

namespace jnp = jx::numpy;
namespace lax = jx::lax;

Array F64(std::vector<double> v) { return jnp::array(v).astype(float64); }
Array F32(std::vector<float> v) { return jnp::array(v); }

struct Layer {
  BOOST_HANA_DEFINE_STRUCT(Layer, (Array, w), (Array, b));
};

// The message of the jx::ValueError check_grads throws (fails the test if it passes).
template <typename F>
std::string CheckGradsError(F&& call) {
  try {
    call();
  } catch (const ValueError& e) {
    return e.what();
  }
  ADD_FAILURE() << "check_grads passed on a wrong derivative";
  return "";
}

CheckGradsOptions Modes(bool fwd, bool rev) {
  CheckGradsOptions o;
  o.fwd = fwd;
  o.rev = rev;
  return o;
}

// sin(x) whose jvp rule multiplies the tangent by `deriv(x)`.
template <typename D>
auto SinWithRule(D deriv) {
  return custom_jvp([](const Array& x) { return lax::sin(x); },
                    [deriv](const std::tuple<Array>& p, const std::tuple<Array>& t) {
                      const Array& x = std::get<0>(p);
                      return std::pair{lax::sin(x), lax::mul(std::get<0>(t), deriv(x))};
                    });
}

TEST(CheckGradsTest, PassesOnCorrectDerivativesAtOrdersOneAndTwoInEachMode) {
  auto loss = [](const Layer& p, const Array& x) {
    return jnp::sum(jnp::tanh(lax::add(lax::mul(x, p.w), p.b)));
  };
  Layer p{F64({0.5, -1.0, 0.3}), F64({0.1, 0.2, -0.4})};
  Array x = F64({1.0, 2.0, -0.5});
  for (int order : {1, 2}) {
    check_grads(loss, std::tuple{p, x}, order);
    check_grads(loss, std::tuple{p, x}, order, Modes(true, false));
    check_grads(loss, std::tuple{p, x}, order, Modes(false, true));
  }
  // Several outputs, float32 (its looser default tolerance), a product of inputs.
  auto f = [](const Array& a, const Array& b) { return std::pair{lax::mul(lax::sin(a), b), lax::exp(lax::mul(a, b))}; };
  check_grads(f, std::tuple{F32({0.3f, -0.7f}), F32({1.1f, 0.4f})}, 2);
  // A correct rule passes too (the rule, not the formula, is what is checked).
  check_grads(SinWithRule([](const Array& x) { return lax::cos(x); }), std::tuple{F64({0.2, 1.3})}, 2);
}

TEST(CheckGradsTest, WrongCustomJvpRuleFailsInForwardMode) {
  auto wrong = SinWithRule([](const Array& x) { return lax::mul(lax::cos(x), 1.1); });  // 10% off
  const std::string msg = CheckGradsError([&] { check_grads(wrong, std::tuple{F64({0.2, 1.3})}, 1, Modes(true, false)); });
  EXPECT_NE(msg.find("order-1 jvp vs finite differences"), std::string::npos) << msg;
  // Reverse mode is checked against finite differences too, so it catches the rule as well
  // (a reverse pass transposed from a wrong jvp is consistently wrong).
  const std::string rev = CheckGradsError([&] { check_grads(wrong, std::tuple{F64({0.2, 1.3})}, 1, Modes(false, true)); });
  EXPECT_NE(rev.find("order-1 vjp"), std::string::npos) << rev;
}

TEST(CheckGradsTest, WrongCustomVjpBwdFailsInReverseMode) {
  // sin saving x as its residual; the wrong bwd multiplies by sin(x) instead of cos(x).
  auto make = [](bool right) {
    return custom_vjp([](const Array& x) { return lax::sin(x); },
                      [](const Array& x) { return std::pair{lax::sin(x), x}; },
                      [right](const Array& x, const Array& ct) {
                        return std::tuple{lax::mul(ct, right ? lax::cos(x) : lax::sin(x))};
                      });
  };
  const Array x = F64({0.2, 1.3, -0.6});
  check_grads(make(true), std::tuple{x}, 1, Modes(false, true));
  check_grads(make(true), std::tuple{x}, 2, Modes(false, true));
  const std::string msg = CheckGradsError([&] { check_grads(make(false), std::tuple{x}, 1, Modes(false, true)); });
  EXPECT_NE(msg.find("order-1 vjp fails the dot-product test"), std::string::npos) << msg;
  // A custom_vjp function has no forward mode: asking for it is a TypeError, not a pass.
  EXPECT_THROW(check_grads(make(true), std::tuple{x}, 1), TypeError);
}

TEST(CheckGradsTest, ARuleThatIsRightButNotDifferentiableFailsOnlyAtOrderTwo) {
  // The rule's factor has the value cos(x) but the derivative -sin(x) - 1 (x - stop_gradient(x)
  // is 0 with derivative 1): first derivatives are right, second derivatives wrong.
  auto bad_second = SinWithRule([](const Array& x) {
    return lax::sub(lax::cos(x), lax::sub(x, lax::stop_gradient(x)));
  });
  const Array x = F64({0.2, 1.3});
  check_grads(bad_second, std::tuple{x}, 1);
  const std::string fwd = CheckGradsError([&] { check_grads(bad_second, std::tuple{x}, 2, Modes(true, false)); });
  EXPECT_NE(fwd.find("order-2 jvp vs finite differences"), std::string::npos) << fwd;
  const std::string rev = CheckGradsError([&] { check_grads(bad_second, std::tuple{x}, 2, Modes(false, true)); });
  EXPECT_NE(rev.find("order-2 "), std::string::npos) << rev;
}

TEST(CheckGradsTest, DefaultTolerancesArePerDtype) {
  // A rule off by 0.05% is within float32's default tolerance (2e-3) but not float64's (1e-5).
  auto slightly_off = SinWithRule([](const Array& x) { return lax::mul(lax::cos(x), 1.0005); });
  check_grads(slightly_off, std::tuple{F32({0.2f, 1.3f})}, 1);
  const std::string msg = CheckGradsError([&] { check_grads(slightly_off, std::tuple{F64({0.2, 1.3})}, 1); });
  EXPECT_NE(msg.find("atol 1e-05, rtol 1e-05"), std::string::npos) << msg;
  // A correct float64 function passes at a tolerance far below float32's.
  CheckGradsOptions tight;
  tight.atol = tight.rtol = 1e-7;
  check_grads([](const Array& v) { return lax::mul(lax::sin(v), lax::exp(v)); }, std::tuple{F64({0.2, 1.3, -0.4})}, 2,
              tight);
  // Explicit tolerances override the defaults: a loose one lets the float64 error through.
  CheckGradsOptions loose;
  loose.atol = loose.rtol = 1e-2;
  check_grads(slightly_off, std::tuple{F64({0.2, 1.3})}, 1, loose);
}

TEST(CheckGradsTest, IntegerInputsAreATypeError) {
  EXPECT_THROW(check_grads([](const Array& v) { return lax::mul(v, v); }, std::tuple{jnp::arange(3)}), TypeError);
}

}  // namespace
}  // namespace jx::check_grads_test

// custom_jvp, custom_vjp and checkpoint: the user's rules are used by every mode and survive
// vmap and nesting; checkpoint recomputes instead of saving and gives identical gradients.
#include "jx/transforms/api.h"

#include <cmath>

#include <gtest/gtest.h>
#include <jx/jx.h>

namespace jx::custom_derivatives_test {
namespace {

namespace jnp = jx::numpy;
namespace lax = jx::lax;

Array F64(std::vector<double> v) { return jnp::array(v).astype(float64); }
Array S(double v) { return Array::Scalar(v, float64); }

// log(1 + exp(x)) whose rule says d/dx = logistic(x), computed stably.
auto Softplus() {
  return custom_jvp([](const Array& x) { return lax::log1p(lax::exp(x)); },
                    [](const std::tuple<Array>& p, const std::tuple<Array>& t) {
                      const Array& x = std::get<0>(p);
                      return std::pair{lax::log1p(lax::exp(x)), lax::mul(std::get<0>(t), lax::logistic(x))};
                    });
}

TEST(CustomJvpTest, RuleDrivesForwardReverseAndVmap) {
  auto sp = Softplus();
  // exp(1000) overflows, so differentiating the plain formula gives NaN; the rule gives 1.
  EXPECT_EQ(grad(sp)(S(1000.0)).item<double>(), 1.0);
  auto [y, t] = jvp(sp, std::tuple{S(0.0)}, std::tuple{S(2.0)});
  EXPECT_DOUBLE_EQ(y.item<double>(), std::log(2.0));
  EXPECT_DOUBLE_EQ(t.item<double>(), 1.0);
  std::vector<double> g = vmap(grad(sp))(F64({0.0, 1000.0, -1.0})).to_vector<double>();
  EXPECT_DOUBLE_EQ(g[0], 0.5);
  EXPECT_DOUBLE_EQ(g[1], 1.0);
  EXPECT_DOUBLE_EQ(g[2], 1.0 / (1.0 + std::exp(1.0)));
  // Second order goes through the rule's own ops: d2/dx2 = logistic(x)(1 - logistic(x)).
  EXPECT_NEAR(grad(grad(sp))(S(0.0)).item<double>(), 0.25, 1e-15);
  check_grads(sp, std::tuple{F64({-0.5, 0.3})}, 2);
  EXPECT_NE(make_jaxpr(sp)(S(1.0)).ToString().find("custom_jvp_call["), std::string::npos);
}

TEST(CustomJvpTest, RuleOutputsMustMatch) {
  auto bad = custom_jvp([](const Array& x) { return lax::sin(x); },
                        [](const std::tuple<Array>& p, const std::tuple<Array>&) {
                          return std::pair{lax::sin(std::get<0>(p)), lax::reduce_sum(std::get<0>(p), {0})};
                        });
  EXPECT_THROW(jvp(bad, std::tuple{F64({1, 2})}, std::tuple{F64({1, 1})}), TypeError);
  EXPECT_EQ(bad(F64({0})).to_vector<double>(), std::vector<double>{0.0});
}

// Identity whose gradient is clipped to [-1, 1].
auto ClipGradient() {
  return custom_vjp([](const Array& x) { return x; },
                    [](const Array& x) { return std::pair{x, std::tuple<>{}}; },
                    [](const std::tuple<>&, const Array& ct) {
                      return std::tuple{lax::clamp(S(-1.0), ct, S(1.0))};
                    });
}

TEST(CustomVjpTest, BwdDrivesReverseModeAndVmap) {
  auto clip = ClipGradient();
  auto f = [&](const Array& x) { return lax::reduce_sum(lax::mul(clip(x), F64({5.0, 0.5})), {0}); };
  EXPECT_EQ(grad(f)(F64({1.0, 2.0})).to_vector<double>(), (std::vector<double>{1.0, 0.5}));
  EXPECT_EQ(f(F64({1.0, 2.0})).item<double>(), 6.0);
  // vmap(grad) and grad(vmap) agree with a loop.
  Array xs = jnp::stack({F64({1.0, 2.0}), F64({-3.0, 4.0})}, 0);
  std::vector<double> per_example = vmap(grad(f))(xs).to_vector<double>();
  EXPECT_EQ(per_example, (std::vector<double>{1.0, 0.5, 1.0, 0.5}));
  auto g = [&](const Array& x) { return jnp::sum(vmap(f)(x)); };
  EXPECT_EQ(grad(g)(xs).to_vector<double>(), (std::vector<double>{1.0, 0.5, 1.0, 0.5}));
  EXPECT_NE(make_jaxpr(clip)(S(1.0)).ToString().find("custom_vjp_call["), std::string::npos);
}

TEST(CustomVjpTest, ResidualsAndForwardModeError) {
  // sin with residual cos(x) saved by fwd.
  auto my_sin = custom_vjp([](const Array& x) { return lax::sin(x); },
                           [](const Array& x) { return std::pair{lax::sin(x), lax::cos(x)}; },
                           [](const Array& cos_x, const Array& ct) { return std::tuple{lax::mul(ct, cos_x)}; });
  EXPECT_DOUBLE_EQ(grad(my_sin)(S(0.3)).item<double>(), std::cos(0.3));
  try {
    jvp(my_sin, std::tuple{S(0.3)}, std::tuple{S(1.0)});
    FAIL() << "expected TypeError";
  } catch (const TypeError& e) {
    EXPECT_NE(std::string(e.what()).find("forward-mode"), std::string::npos) << e.what();
  }
  EXPECT_DOUBLE_EQ(my_sin(S(0.3)).item<double>(), std::sin(0.3));
}

TEST(CheckpointTest, SameGradientsAndTheJaxprShowsRecomputation) {
  auto block = [](const Array& x) { return lax::tanh(lax::sin(lax::tanh(x))); };
  auto plain = [&](const Array& x) { return lax::reduce_sum(block(block(x)), {0}); };
  auto remat_block = checkpoint(block);
  auto remat = [&](const Array& x) { return lax::reduce_sum(remat_block(remat_block(x)), {0}); };
  Array x = F64({0.1, -0.7, 1.3});
  EXPECT_EQ(remat(x).to_vector<double>(), plain(x).to_vector<double>());
  EXPECT_EQ(grad(remat)(x).to_vector<double>(), grad(plain)(x).to_vector<double>());
  check_grads(remat, std::tuple{x}, 2);
  std::vector<double> vg = vmap(grad(remat))(jnp::stack({x, F64({0.5, 0.5, 0.5})}, 0)).to_vector<double>();
  std::vector<double> want = grad(plain)(x).to_vector<double>();
  for (size_t i = 0; i < 3; ++i) EXPECT_DOUBLE_EQ(vg[i], want[i]);
  // The backward pass is a checkpoint (differentiated=True) that recomputes tanh/sin.
  const std::string text = make_jaxpr(grad(remat))(x).ToString();
  EXPECT_NE(text.find("checkpoint["), std::string::npos) << text;
  EXPECT_NE(text.find("differentiated=True"), std::string::npos) << text;
}

}  // namespace
}  // namespace jx::custom_derivatives_test

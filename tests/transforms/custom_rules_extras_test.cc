// custom_jvp defjvps and nondiff_argnums, custom_vjp nondiff_argnums and jx::none cotangents:
// the examples of JAX's "Custom derivative rules" tutorial
// (https://docs.jax.dev/en/latest/notebooks/Custom_derivative_rules_for_Python_code.html)
// with its printed outputs, plus vmap, jit and check_grads through them.
#include "jx/transforms/custom_derivatives.h"

#include <cmath>
#include <optional>

#include <gtest/gtest.h>
#include <jx/jx.h>

namespace jx::custom_rules_extras_test {
namespace {

namespace jnp = jx::numpy;

Array S(double v) { return Array::Scalar(v, float32); }

// @custom_jvp
// def f(x, y): return jnp.sin(x) * y
// f.defjvps(lambda x_dot, primal_out, x, y: jnp.cos(x) * x_dot * y,
//           lambda y_dot, primal_out, x, y: jnp.sin(x) * y_dot)
auto SinTimes() {
  return custom_jvp([](const Array& x, const Array& y) { return jnp::sin(x) * y; })
      .defjvps([](const Array& x_dot, const Array&, const Array& x, const Array& y) { return jnp::cos(x) * x_dot * y; },
               [](const Array& y_dot, const Array&, const Array& x, const Array&) { return jnp::sin(x) * y_dot; });
}

TEST(DefjvpsTest, TutorialExample) {
  auto f = SinTimes();
  EXPECT_FLOAT_EQ(f(S(2.), S(3.)).item<float>(), 2.7278922f);             // print(f(2., 3.))
  auto [y, y_dot] = jvp(f, std::tuple{S(2.), S(3.)}, std::tuple{S(1.), S(0.)});
  EXPECT_FLOAT_EQ(y.item<float>(), 2.7278922f);                           // print(y)
  EXPECT_FLOAT_EQ(y_dot.item<float>(), -1.2484405f);                      // print(y_dot)
  EXPECT_FLOAT_EQ(grad(f)(S(2.), S(3.)).item<float>(), -1.2484405f);     // print(grad(f)(2., 3.))
  // Both parts summed: d/dy = sin(x).
  EXPECT_FLOAT_EQ(grad(f, 1)(S(2.), S(3.)).item<float>(), std::sin(2.0f));
}

// The rules, not f's own derivative, are what differentiation uses; jx::none is a zero part.
TEST(DefjvpsTest, RulesAreUsedAndNoneIsZero) {
  auto f = custom_jvp([](const Array& x, const Array& y) { return x * y; })
               .defjvps(jx::none, [](const Array& y_dot, const Array&, const Array&, const Array&) { return 10.0f * y_dot; });
  EXPECT_FLOAT_EQ(grad(f, 0)(S(2.), S(3.)).item<float>(), 0.0f);
  EXPECT_FLOAT_EQ(grad(f, 1)(S(2.), S(3.)).item<float>(), 10.0f);
  auto [y, t] = jvp(f, std::tuple{S(2.), S(3.)}, std::tuple{S(1.), S(1.)});
  EXPECT_FLOAT_EQ(y.item<float>(), 6.0f);
  EXPECT_FLOAT_EQ(t.item<float>(), 10.0f);
  // vmap of the derivative and jit through it.
  Array xs = jnp::array(std::vector<float>{0.5f, 1.0f, 2.0f});
  auto df = [](const Array& x) { return grad(SinTimes())(x, S(3.)); };
  EXPECT_TRUE(jnp::allclose(vmap(df)(xs), 3.0f * jnp::cos(xs)));
  EXPECT_FLOAT_EQ(jit(df)(S(2.)).item<float>(), -1.2484405f);
}

// @partial(custom_jvp, nondiff_argnums=(0,))
// def app(f, x): return f(x)
// def app_jvp(f, primals, tangents): x, = primals; x_dot, = tangents; return f(x), 2. * x_dot
// print(app(lambda x: x ** 3, 3.))            # 27.0
// print(grad(app, 1)(lambda x: x ** 3, 3.))   # 2.0
TEST(NondiffArgnumsTest, CustomJvpTutorialExample) {
  auto app = custom_jvp([](const auto& f, const Array& x) { return f(x); },
                        [](const auto& f, const std::tuple<Array>& primals, const std::tuple<Array>& tangents) {
                          return std::pair{f(std::get<0>(primals)), 2.0f * std::get<0>(tangents)};
                        },
                        nondiff_argnums<0>);
  auto cube = [](const Array& x) { return x * x * x; };
  EXPECT_FLOAT_EQ(app(cube, S(3.)).item<float>(), 27.0f);
  EXPECT_FLOAT_EQ(grad([&](const Array& x) { return app(cube, x); })(S(3.)).item<float>(), 2.0f);
  // The decorator form: custom_jvp(f, nondiff_argnums<0>).defjvp(rule); a non-Array argument.
  auto scale = custom_jvp([](int k, const Array& x) { return static_cast<float>(k) * jnp::sin(x); },
                          nondiff_argnums<0>)
                   .defjvp([](int k, const std::tuple<Array>& p, const std::tuple<Array>& t) {
                     const Array& x = std::get<0>(p);
                     return std::pair{static_cast<float>(k) * jnp::sin(x), static_cast<float>(k) * jnp::cos(x) * std::get<0>(t)};
                   });
  EXPECT_FLOAT_EQ(grad([&](const Array& x) { return scale(4, x); })(S(0.)).item<float>(), 4.0f);
  Array xs = jnp::array(std::vector<float>{0.0f, 1.0f});
  EXPECT_TRUE(jnp::allclose(vmap(grad([&](const Array& x) { return scale(2, x); }))(xs), 2.0f * jnp::cos(xs)));
}

// @partial(custom_vjp, nondiff_argnums=(0,))
// def app(f, x): return f(x)
// def app_fwd(f, x): return f(x), x
// def app_bwd(f, x, g): return (5 * g,)
// print(app(lambda x: x ** 2, 4.))            # 16.0
// print(grad(app, 1)(lambda x: x ** 2, 4.))   # 5.0
TEST(NondiffArgnumsTest, CustomVjpTutorialExample) {
  auto app = custom_vjp([](const auto& f, const Array& x) { return f(x); },
                        [](const auto& f, const Array& x) { return std::pair{f(x), x}; },
                        [](const auto&, const Array&, const Array& g) { return std::tuple{5.0f * g}; },
                        nondiff_argnums<0>);
  auto square = [](const Array& x) { return x * x; };
  EXPECT_FLOAT_EQ(app(square, S(4.)).item<float>(), 16.0f);
  EXPECT_FLOAT_EQ(grad([&](const Array& x) { return app(square, x); })(S(4.)).item<float>(), 5.0f);
}

// @custom_vjp
// def clip_gradient(lo, hi, x): return x
// def clip_gradient_fwd(lo, hi, x): return x, (lo, hi)
// def clip_gradient_bwd(res, g): lo, hi = res; return (None, None, jnp.clip(g, lo, hi))
// def clip_sin(x): x = clip_gradient(-0.75, 0.75, x); return jnp.sin(x)
// The tutorial plots vmap(grad(clip_sin))(t): cos(t) clipped to [-0.75, 0.75].
TEST(NoneCotangentTest, ClipGradientTutorialExample) {
  auto clip_gradient = custom_vjp(
      [](const Array&, const Array&, const Array& x) { return x; },
      [](const Array& lo, const Array& hi, const Array& x) { return std::pair{x, std::pair{lo, hi}}; },
      [](const std::pair<Array, Array>& res, const Array& g) {
        return std::tuple{jx::none, jx::none, jnp::clip(g, res.first, res.second)};
      });
  auto clip_sin = [&](const Array& x) { return jnp::sin(clip_gradient(S(-0.75), S(0.75), x)); };
  Array t = jnp::linspace(0.0, 10.0, 1000);
  EXPECT_TRUE(jnp::allclose(clip_sin(t), jnp::sin(t)));
  EXPECT_TRUE(jnp::allclose(vmap(grad(clip_sin))(t), jnp::clip(jnp::cos(t), -0.75, 0.75)));
  // The bounds get zero cotangents, also under vmap.
  auto by_all = [&](const Array& lo, const Array& hi, const Array& x) { return jnp::sum(clip_gradient(lo, hi, x) * 3.0f); };
  auto [glo, ghi, gx] = grad(by_all, argnums{0, 1, 2})(S(-1.), S(1.), jnp::ones({4}));
  EXPECT_FLOAT_EQ(glo.item<float>(), 0.0f);
  EXPECT_FLOAT_EQ(ghi.item<float>(), 0.0f);
  EXPECT_TRUE(jnp::array_equal(gx, jnp::full({4}, 1.0f)));
  Array his = jnp::array(std::vector<float>{0.5f, 2.0f});
  auto per_hi = vmap([&](const Array& hi) { return grad(by_all, argnums{1, 2})(S(-1.), hi, jnp::ones({2})); });
  auto [ghis, gxs] = per_hi(his);
  EXPECT_TRUE(jnp::array_equal(ghis, jnp::zeros({2})));
  EXPECT_TRUE(jnp::array_equal(gxs, jnp::array(std::vector<float>{0.5f, 0.5f, 2.0f, 2.0f}).reshape({2, 2})));
}

// std::optional<Array>: a cotangent that is there only sometimes.
TEST(NoneCotangentTest, OptionalCotangent) {
  auto f = custom_vjp([](const Array& x, const Array& y) { return x * y; },
                      [](const Array& x, const Array& y) { return std::pair{x * y, std::pair{x, y}}; },
                      [](const std::pair<Array, Array>& r, const Array& g) {
                        return std::tuple{std::optional<Array>(g * r.second), std::optional<Array>()};
                      });
  auto [gx, gy] = grad(f, argnums{0, 1})(S(2.), S(3.));
  EXPECT_FLOAT_EQ(gx.item<float>(), 3.0f);
  EXPECT_FLOAT_EQ(gy.item<float>(), 0.0f);
  CheckGradsOptions reverse_only;
  reverse_only.fwd = false;  // custom_vjp: no forward mode
  check_grads([&](const Array& x) { return f(x, S(3.)); }, std::tuple{jnp::array(std::vector<float>{0.5f, -1.0f})}, 1,
              reverse_only);
}

}  // namespace
}  // namespace jx::custom_rules_extras_test

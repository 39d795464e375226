// argnums everywhere (grad, value_and_grad, jacfwd, jacrev, jacobian, hessian), arguments of
// different types differentiated together, pytree inputs and outputs of Jacobians, and C++
// scalars as arguments, each with the JAX documentation example it mirrors.
#include <cmath>
#include <map>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>
#include <jx/jx.h>

namespace jx::argnums_test {
namespace {

namespace jnp = jx::numpy;

void ExpectValues(const Array& got, const std::vector<double>& want, double tol = 1e-5) {
  const std::vector<double> g = got.to_vector<double>();
  ASSERT_EQ(g.size(), want.size());
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], want[i], tol) << "element " << i;
}

// The autodiff cookbook's logistic regression ("Differentiating with respect to nested
// lists, tuples, and dicts" / argnums; https://docs.jax.dev/en/latest/notebooks/autodiff_cookbook.html):
//   W_grad = grad(loss, argnums=0)(W, b); b_grad = grad(loss, 1)(W, b)
//   W_grad, b_grad = grad(loss, (0, 1))(W, b)
class CookbookArgnumsTest : public ::testing::Test {
 protected:
  static Array Sigmoid(const Array& x) { return 0.5 * (jnp::tanh(x / 2.0) + 1.0); }
  Array inputs = jnp::array({{0.52f, 1.12f, 0.77f}, {0.88f, -1.08f, 0.15f}, {0.52f, 0.06f, -1.30f},
                             {0.74f, -2.49f, 1.39f}});
  Array targets = jnp::array({1.f, 1.f, 0.f, 1.f});
  Array W = jnp::array({0.3f, -0.2f, 0.5f});
  Array b = jnp::array(0.1f);
  std::function<Array(const Array&, const Array&)> loss = [this](const Array& w, const Array& bias) {
    Array preds = Sigmoid(jnp::dot(inputs, w) + bias);
    Array label_probs = preds * targets + (1.0 - preds) * (1.0 - targets);
    return -jnp::sum(jnp::log(label_probs));
  };
  // d loss/d logits = preds - targets: W_grad = inputs^T (preds - targets), b_grad = sum of it.
  std::vector<double> Residual() {
    return (Sigmoid(jnp::dot(inputs, W) + b) - targets).to_vector<double>();
  }
};

TEST_F(CookbookArgnumsTest, AnIntGivesOneGradientAndATupleGivesATuple) {
  const std::vector<double> r = Residual();
  const std::vector<float> x = inputs.to_vector<float>();
  std::vector<double> w_want(3, 0.0);
  for (size_t i = 0; i < 4; ++i) {
    for (size_t j = 0; j < 3; ++j) w_want[j] += x[i * 3 + j] * r[i];
  }
  const double b_want = r[0] + r[1] + r[2] + r[3];

  Array W_grad = grad(loss, 0)(W, b);  // grad(loss, argnums=0)(W, b)
  ExpectValues(W_grad, w_want);
  ExpectValues(grad(loss)(W, b), w_want);  // argnums=0 is the default
  Array b_grad = grad(loss, 1)(W, b);  // grad(loss, 1)(W, b): one 0-d gradient, not a 1-tuple
  EXPECT_EQ(b_grad.shape(), Shape{});
  EXPECT_NEAR(b_grad.item<float>(), b_want, 1e-5);
  static_assert(std::is_same_v<decltype(grad(loss, argnums{1})(W, b)), Array>);
  auto [W_grad2, b_grad2] = grad(loss, argnums{0, 1})(W, b);  // grad(loss, (0, 1))(W, b)
  ExpectValues(W_grad2, w_want);
  EXPECT_NEAR(b_grad2.item<float>(), b_want, 1e-5);
  // argnums=(1,): a tuple of one.
  static_assert(std::is_same_v<decltype(grad(loss, argnums_tuple{1})(W, b)), std::tuple<Array>>);
  EXPECT_NEAR(std::get<0>(grad(loss, argnums_tuple{1})(W, b)).item<float>(), b_want, 1e-5);
  // value_and_grad the same.
  auto [v, gb] = value_and_grad(loss, 1)(W, b);
  EXPECT_NEAR(v.item<float>(), loss(W, b).item<float>(), 1e-6);
  EXPECT_NEAR(gb.item<float>(), b_want, 1e-5);
  // And the compile-time spelling.
  EXPECT_NEAR(grad<1>(loss)(W, b).item<float>(), b_want, 1e-5);
}

struct Params {
  BOOST_HANA_DEFINE_STRUCT(Params, (Array, w), (Array, b));
};

// Parameters and data of different types differentiated together (nn: d/dparams and d/dx).
TEST(ArgnumsTest, ArgumentsOfDifferentTypes) {
  auto loss = [](const Params& p, const Array& x, const Array& y) { return jnp::sum(p.w * x * x + p.b * y); };
  Params p{jnp::array({1.f, 2.f}), jnp::array({3.f, 4.f})};
  Array x = jnp::array({5.f, 6.f}), y = jnp::array({7.f, 8.f});

  auto [gp, gx] = grad(loss, argnums{0, 1})(p, x, y);
  static_assert(std::is_same_v<decltype(gp), Params>);
  static_assert(std::is_same_v<decltype(gx), Array>);
  ExpectValues(gp.w, {25, 36});  // x^2
  ExpectValues(gp.b, {7, 8});    // y
  ExpectValues(gx, {10, 24});    // 2 w x

  // Any selection with compile-time indices: grad(loss, (1, 2)) and grad(loss, 2).
  auto [gx2, gy] = grad<1, 2>(loss)(p, x, y);
  ExpectValues(gx2, {10, 24});
  ExpectValues(gy, {3, 4});
  ExpectValues(grad<2>(loss)(p, x, y), {3, 4});
  auto [value, gp2] = value_and_grad<0>(loss)(p, x, y);
  EXPECT_NEAR(value.item<float>(), 25 + 72 + 21 + 32, 1e-4);
  ExpectValues(gp2.w, {25, 36});

  // A runtime index over arguments of different types cannot pick its result type: a clear
  // error naming the compile-time spelling, never a wrong value.
  try {
    grad(loss, argnums{1, 2})(p, x, y);
    FAIL() << "expected TypeError";
  } catch (const TypeError& e) {
    EXPECT_NE(std::string(e.what()).find("jx::grad<1, 2>(f)"), std::string::npos) << e.what();
  }
  // Runtime argnums over different types: gradient k has argument k's type, so (0, 2) works
  // here (y is an Array like x) and a single index past a different-typed argument 0 does not.
  auto [gp3, gy3] = grad(loss, argnums{0, 2})(p, x, y);
  ExpectValues(gp3.b, {7, 8});
  ExpectValues(gy3, {3, 4});
  try {
    grad(loss, 2)(p, x, y);
    FAIL() << "expected TypeError";
  } catch (const TypeError& e) {
    EXPECT_NE(std::string(e.what()).find("jx::grad<2>(f)"), std::string::npos) << e.what();
  }
  EXPECT_THROW(grad(loss, argnums{0, 5})(p, x, y), ValueError);
}

// Plain C++ scalars are JAX's Python scalars: weakly typed float32. The quickstart and the
// autodiff cookbook: grad_tanh = grad(jnp.tanh); print(grad_tanh(2.0)) -> 0.070650816.
TEST(ArgnumsTest, CxxScalarArgumentsAreWeakFloat32) {
  Array g = grad([](const Array& x) { return jnp::tanh(x); })(2.0);
  EXPECT_EQ(g.dtype(), float32);
  EXPECT_TRUE(g.weak_type());
  EXPECT_NEAR(g.item<float>(), 0.070650816, 1e-7);
  // print(grad(grad(jnp.tanh))(2.0)) -> -0.13621868
  EXPECT_NEAR(grad(grad([](const Array& x) { return jnp::tanh(x); }))(2.0).item<float>(), -0.13621868, 1e-6);
  // Mixed with arrays, and through the other transformations.
  auto f = [](const Array& a, const Array& s) { return jnp::sum(a * s * s); };
  Array a = jnp::array({1.f, 2.f});
  EXPECT_NEAR(grad(f, 1)(a, 3.0).item<float>(), 2 * 3 * 3, 1e-5);
  EXPECT_EQ(grad(f)(a, 3.0).dtype(), float32);  // a weak scalar does not promote f32 arrays
  auto [y, y_dot] = jvp([](const Array& x) { return x * x; }, std::tuple{3.0}, std::tuple{1.0});
  EXPECT_NEAR(y.item<float>(), 9.0, 1e-6);
  EXPECT_NEAR(y_dot.item<float>(), 6.0, 1e-6);
  auto [out, f_vjp] = vjp([](const Array& x) { return x * x; }, 3.0);
  EXPECT_NEAR(std::get<0>(f_vjp(jnp::array(1.f))).item<float>(), 6.0, 1e-6);
  EXPECT_THROW(grad([](const Array& x) { return x * x; })(3), TypeError);  // as JAX: int inputs
}

// The jax.jacfwd / jax.jacrev docstring (https://docs.jax.dev/en/latest/_autosummary/jax.jacfwd.html):
//   f = lambda x: jnp.asarray([x[0], 5*x[2], 4*x[1]**2 - 2*x[2], x[2] * jnp.sin(x[0])])
//   print(jax.jacfwd(f)(jnp.array([1., 2., 3.])))
Array DocF(const Array& x) {
  return jnp::stack({x[0], 5.0 * x[2], 4.0 * x[1] * x[1] - 2.0 * x[2], x[2] * jnp::sin(x[0])});
}
TEST(JacobianArgnumsTest, JacfwdJacrevDocstring) {
  // The docstring prints 1.6209044 for 3 cos(1) = 1.62090692: its float32 cos is 2.5e-6 off;
  // jx's is within 1e-6 of the exact value, which is what this checks.
  const std::vector<double> want = {1, 0, 0, 0, 0, 5, 0, 16, -2, 3 * std::cos(1.0), 0, std::sin(1.0)};
  Array x = jnp::array({1.f, 2.f, 3.f});
  for (const Array& j : {jacfwd(DocF)(x), jacrev(DocF)(x), jacobian(DocF)(x)}) {
    ASSERT_EQ(j.shape(), (Shape{4, 3}));
    ExpectValues(j, want, 1e-6);
  }
}

TEST(JacobianArgnumsTest, ArgnumsSelectWhichArgument) {
  auto f = [](const Array& x, const Array& y) { return x * jnp::sin(y); };  // f32[2], f32[2] -> f32[2]
  Array x = jnp::array({1.f, 2.f}), y = jnp::array({0.5f, 1.5f});
  Array jy = jacfwd(f, 1)(x, y);  // jacfwd(f, argnums=1): one Jacobian
  ASSERT_EQ(jy.shape(), (Shape{2, 2}));
  ExpectValues(jy, {std::cos(0.5), 0, 0, 2 * std::cos(1.5)});
  ExpectValues(jacrev(f, 1)(x, y), {std::cos(0.5), 0, 0, 2 * std::cos(1.5)});
  auto [jx_, jy_] = jacrev(f, argnums{0, 1})(x, y);  // argnums=(0, 1): a tuple
  ExpectValues(jx_, {std::sin(0.5), 0, 0, std::sin(1.5)});
  ExpectValues(jy_, {std::cos(0.5), 0, 0, 2 * std::cos(1.5)});
  // jax.hessian docstring: g = lambda x: x[0]**3 - 2*x[0]*x[1] - x[1]**6
  //   print(jax.hessian(g)(jax.numpy.array([1., 2.]))) -> [[6. -2.] [-2. -480.]]
  auto g = [](const Array& v) {
    Array a = v[0], b = v[1];
    return a * a * a - 2.0 * a * b - b * b * b * b * b * b;
  };
  ExpectValues(hessian(g)(jnp::array({1.f, 2.f})), {6, -2, -2, -480}, 1e-3);
  // hessian over two arguments: ((d2/dx2, d2/dxdy), (d2/dydx, d2/dy2)) of x^2 y^3 at (2, 1).
  auto h = [](const Array& a, const Array& b) { return a * a * b * b * b; };
  auto H = hessian(h, argnums{0, 1})(2.0, 1.0);
  EXPECT_NEAR(std::get<0>(std::get<0>(H)).item<float>(), 2 * 1, 1e-5);      // 2 y^3
  EXPECT_NEAR(std::get<1>(std::get<0>(H)).item<float>(), 6 * 2 * 1, 1e-5);  // 6 x y^2
  EXPECT_NEAR(std::get<0>(std::get<1>(H)).item<float>(), 6 * 2 * 1, 1e-5);
  EXPECT_NEAR(std::get<1>(std::get<1>(H)).item<float>(), 6 * 4 * 1, 1e-5);  // 6 x^2 y
}

// The jax.hessian docstring's pytree example
// (https://docs.jax.dev/en/latest/_autosummary/jax.hessian.html):
//   f = lambda dct: {"c": jnp.power(dct["a"], dct["b"])}
//   print(jax.hessian(f)({"a": jnp.arange(2.) + 1., "b": jnp.arange(2.) + 2.}))
//   {'c': {'a': {'a': [[[2, 0], [0, 0]], [[0, 0], [0, 12]]],
//                'b': [[[1, 0], [0, 0]], [[0, 0], [0, 12.317766]]]},
//          'b': {'a': [[[1, 0], [0, 0]], [[0, 0], [0, 12.317766]]],
//                'b': [[[0, 0], [0, 0]], [[0, 0], [0, 3.843624]]]}}}
TEST(JacobianArgnumsTest, HessianDocstringDictToDict) {
  using Dict = std::map<std::string, Array>;
  auto f = [](const Dict& dct) { return Dict{{"c", jnp::power(dct.at("a"), dct.at("b"))}}; };
  Dict x{{"a", jnp::arange(2.0).astype(float32) + 1.0}, {"b", jnp::arange(2.0).astype(float32) + 2.0}};
  auto H = hessian(f)(x);
  static_assert(std::is_same_v<decltype(H), std::map<std::string, std::map<std::string, Dict>>>);
  ASSERT_EQ(H.size(), 1u);
  const auto& c = H.at("c");
  ASSERT_EQ(c.size(), 2u);
  for (const auto& [outer, row] : c) {
    ASSERT_EQ(row.size(), 2u) << outer;
    for (const auto& [inner, block] : row) {
      EXPECT_EQ(block.shape(), (Shape{2, 2, 2})) << outer << inner;
      EXPECT_EQ(block.dtype(), float32);
    }
  }
  ExpectValues(c.at("a").at("a"), {2, 0, 0, 0, 0, 0, 0, 12});
  ExpectValues(c.at("a").at("b"), {1, 0, 0, 0, 0, 0, 0, 12.317766});
  ExpectValues(c.at("b").at("a"), {1, 0, 0, 0, 0, 0, 0, 12.317766});
  ExpectValues(c.at("b").at("b"), {0, 0, 0, 0, 0, 0, 0, 3.843624});
  // jacfwd and jacrev agree on the first derivative's tree of trees: {'c': {'a': .., 'b': ..}}.
  auto Jf = jacfwd(f)(x);
  auto Jr = jacrev(f)(x);
  static_assert(std::is_same_v<decltype(Jf), std::map<std::string, Dict>>);
  for (const char* k : {"a", "b"}) {
    ExpectValues(Jf.at("c").at(k), Jr.at("c").at(k).to_vector<double>());
  }
  ExpectValues(Jf.at("c").at("a"), {2, 0, 0, 12});  // b a^(b-1) on the diagonal
}

// A pytree output with an Array argument keeps the output's type, structs included.
TEST(JacobianArgnumsTest, StructOutputWithArrayArgument) {
  auto f = [](const Array& x) { return Params{x * 2.0, x * x}; };
  Params j = jacfwd(f)(jnp::array({1.f, 3.f}));
  ExpectValues(j.w, {2, 0, 0, 2});
  ExpectValues(j.b, {2, 0, 0, 6});
  // A vector input and a tuple output: a tuple of vectors of blocks.
  auto g = [](const std::vector<Array>& v) { return std::tuple{v[0] * v[1], v[1]}; };
  auto jg = jacrev(g)(std::vector<Array>{jnp::array(2.f), jnp::array(5.f)});
  static_assert(std::is_same_v<decltype(jg), std::tuple<std::vector<Array>, std::vector<Array>>>);
  EXPECT_NEAR(std::get<0>(jg)[0].item<float>(), 5, 1e-6);
  EXPECT_NEAR(std::get<0>(jg)[1].item<float>(), 2, 1e-6);
  EXPECT_NEAR(std::get<1>(jg)[0].item<float>(), 0, 1e-6);
  EXPECT_NEAR(std::get<1>(jg)[1].item<float>(), 1, 1e-6);
}

}  // namespace
}  // namespace jx::argnums_test

// value_and_grad and grad over every combination of argnums and has_aux (JAX's
// value_and_grad(f, argnums, has_aux) returns ((value, aux), grads)).
#include <cmath>
#include <utility>

#include <gtest/gtest.h>
#include <jx/jx.h>

namespace jx::value_and_grad_test {
namespace {

namespace jnp = jx::numpy;

struct Layer {
  BOOST_HANA_DEFINE_STRUCT(Layer, (Array, w), (Array, b));
};

// f(a, b, c) = sum(a * b^2) + 3 sum(c): df/da = b^2, df/db = 2ab, df/dc = 3.
Array F(const Array& a, const Array& b, const Array& c) { return jnp::sum(a * b * b) + 3.0 * jnp::sum(c); }
// The same loss with an aux pytree: (loss, (a + b, count)).
std::pair<Array, std::pair<Array, Array>> FAux(const Array& a, const Array& b, const Array& c) {
  return {F(a, b, c), {a + b, jnp::array({7})}};
}

void ExpectValues(const Array& got, const std::vector<double>& want) {
  const std::vector<double> g = got.to_vector<double>();
  ASSERT_EQ(g.size(), want.size());
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], want[i], 1e-5) << "element " << i;
}

class ValueAndGradTest : public ::testing::Test {
 protected:
  Array a = jnp::array({1.f, 2.f}), b = jnp::array({3.f, -1.f}), c = jnp::array({0.5f, 0.25f});
  double value = 1 * 9 + 2 * 1 + 3 * 0.75;
};

TEST_F(ValueAndGradTest, Argnums) {
  auto [v, grads] = value_and_grad(F, argnums{0, 2})(a, b, c);
  EXPECT_NEAR(v.item<float>(), value, 1e-5);
  ExpectValues(std::get<0>(grads), {9, 1});
  ExpectValues(std::get<1>(grads), {3, 3});
  static_assert(std::tuple_size_v<decltype(grads)> == 2);
}

TEST_F(ValueAndGradTest, HasAuxGivesValueAuxPairAndGrad) {
  auto [value_aux, g] = value_and_grad(FAux, has_aux)(a, b, c);
  EXPECT_NEAR(value_aux.first.item<float>(), value, 1e-5);
  ExpectValues(value_aux.second.first, {4, 1});
  EXPECT_EQ(value_aux.second.second.item<int>(), 7);
  ExpectValues(g, {9, 1});
}

TEST_F(ValueAndGradTest, ArgnumsAndHasAux) {
  auto [value_aux, grads] = value_and_grad(FAux, argnums{1, 0}, has_aux)(a, b, c);
  EXPECT_NEAR(value_aux.first.item<float>(), value, 1e-5);
  ExpectValues(value_aux.second.first, {4, 1});
  ExpectValues(std::get<0>(grads), {6, -4});  // d/db first, as argnums orders them
  ExpectValues(std::get<1>(grads), {9, 1});
}

TEST_F(ValueAndGradTest, GradWithArgnumsAndHasAux) {
  auto [grads, aux] = grad(FAux, argnums_tuple{2}, has_aux)(a, b, c);  // JAX argnums=(2,): a 1-tuple
  ExpectValues(std::get<0>(grads), {3, 3});
  auto [g2, aux2] = grad(FAux, 2, has_aux)(a, b, c);  // JAX argnums=2: the gradient itself
  ExpectValues(g2, {3, 3});
  ExpectValues(aux2.first, {4, 1});
  ExpectValues(aux.first, {4, 1});
}

TEST_F(ValueAndGradTest, AgreesWithGradOverPytreesAndComposes) {
  auto loss = [](const Layer& l, const Layer& x) { return jnp::sum(jnp::tanh(l.w * x.w + l.b * x.b)); };
  Layer l{jnp::array({0.5f, -1.f}), jnp::array({0.1f, 0.2f})};
  Layer x{jnp::array({2.f, 3.f}), jnp::array({1.f, -1.f})};
  auto [v, g] = value_and_grad(loss, argnums{0})(l, x);  // one int: one Layer, as JAX's argnums=0
  const Layer g_ref = grad(loss)(l, x);
  EXPECT_NEAR(v.item<float>(), loss(l, x).item<float>(), 1e-6);
  ExpectValues(g.w, g_ref.w.to_vector<double>());
  ExpectValues(g.b, g_ref.b.to_vector<double>());
  // Second order through value_and_grad: d/dx of (d/dx x^3) = 6x.
  auto cube = [](const Array& y) { return y * y * y; };
  auto dcube = [&](const Array& y) { return value_and_grad(cube)(y).second; };
  EXPECT_DOUBLE_EQ(grad(dcube)(Array::Scalar(2.0, float64)).item<double>(), 12.0);
}

TEST_F(ValueAndGradTest, BadArgnumsAndNonScalarLossAreErrors) {
  EXPECT_THROW(value_and_grad(F, argnums{3})(a, b, c), ValueError);
  auto vector_loss = [](const Array& x) { return std::pair<Array, Array>{x, x}; };
  EXPECT_THROW(value_and_grad(vector_loss, has_aux)(a), TypeError);
  // Integer arguments have no gradient: grad refuses them as JAX does.
  EXPECT_THROW(value_and_grad(F, argnums{0})(jnp::array({1, 2}), b, c), TypeError);
}

}  // namespace
}  // namespace jx::value_and_grad_test

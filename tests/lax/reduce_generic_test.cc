// lax::reduce and lax::reduce_window with C++ reducers
// (https://docs.jax.dev/en/latest/_autosummary/jax.lax.reduce.html,
// https://docs.jax.dev/en/latest/_autosummary/jax.lax.reduce_window.html): monoids bind their
// primitive as JAX's do; other reducers (pytrees of operands included) agree with a direct
// fold, eagerly, under jit with no CPU fallback, under vmap and under grad.
#include "jx/lax/reduce_generic.h"

#include <cmath>
#include <cstdlib>
#include <string>
#include <tuple>

#include <gtest/gtest.h>
#include <jx/jx.h>

namespace jx::reduce_generic_test {
namespace {

namespace jnp = jx::numpy;
namespace lax = jx::lax;

Array Max(const Array& a, const Array& b) { return lax::max(a, b); }
Array Add(const Array& a, const Array& b) { return lax::add(a, b); }
// log(exp(a) + exp(b)): associative and commutative, identity -inf; no monoid primitive.
Array LogAddExp(const Array& a, const Array& b) {
  Array m = lax::max(a, b);
  Array safe = lax::select(lax::eq(m, Array::Scalar(-INFINITY, m.dtype())), Array::Scalar(0, m.dtype()), m);
  Array ea = lax::exp(lax::sub(a, safe));  // named, so the traced order does not depend on
  Array eb = lax::exp(lax::sub(b, safe));  // the compiler's argument evaluation order
  return lax::add(safe, lax::log(lax::add(ea, eb)));
}
// a + b + ab = (1 + a)(1 + b) - 1: associative and commutative, identity 0, smooth.
Array ProductOfOnePlus(const Array& a, const Array& b) { return a + b + a * b; }
// (value, index) keeping the larger value, the smaller index on ties (argmax's reducer).
using ValueIndex = std::pair<Array, Array>;
ValueIndex PickMax(const ValueIndex& a, const ValueIndex& b) {
  Array take_b = lax::bitwise_or(lax::gt(b.first, a.first),
                                 lax::bitwise_and(lax::eq(b.first, a.first), lax::lt(b.second, a.second)));
  return {lax::select(take_b, b.first, a.first), lax::select(take_b, b.second, a.second)};
}

// Runs f with JX_CPU_FALLBACK=error: a jitted instruction without a native kernel throws.
template <typename F>
void WithoutFallback(F f) {
  setenv("JX_CPU_FALLBACK", "error", 1);
  f();
  unsetenv("JX_CPU_FALLBACK");
}

TEST(ReduceTest, MonoidsBindTheirPrimitive) {
  Array x = jnp::arange(12).astype(float32).reshape({3, 4});
  auto text = [&](auto init, auto f) {
    return make_jaxpr([&](const Array& v) { return lax::reduce(v, Array(init), f, {0}); })(x).ToString();
  };
  EXPECT_NE(text(0.0f, Add).find("reduce_sum"), std::string::npos);
  EXPECT_NE(text(-INFINITY, Max).find("reduce_max"), std::string::npos);
  // lambda a, b: b + a is still add.
  EXPECT_NE(text(0.0f, [](const Array& a, const Array& b) { return b + a; }).find("reduce_sum"), std::string::npos);
  // Not the identity: the generic path, and the init counts once (XLA's semantics).
  EXPECT_EQ(text(1.0f, Add).find("reduce_sum"), std::string::npos);
  EXPECT_EQ(lax::reduce(x, Array(1.0f), Add, {0}).to_vector<float>(), (std::vector<float>{13, 16, 19, 22}));
  EXPECT_EQ(lax::reduce(x, Array(-INFINITY), Max, {1}).to_vector<float>(), (std::vector<float>{3, 7, 11}));
  Array b = jnp::array(std::vector<bool>{true, false, true, true}).reshape({2, 2});
  EXPECT_EQ(lax::reduce(b, Array(true), [](const Array& p, const Array& q) { return lax::bitwise_and(p, q); }, {1})
                .to_vector<bool>(),
            (std::vector<bool>{false, true}));
  Array i = jnp::array(std::vector<int32_t>{3, -7, 5});
  EXPECT_EQ(lax::reduce(i, Array::Scalar(INT32_MAX, int32), [](const Array& p, const Array& q) { return lax::min(p, q); },
                        {0})
                .item<int32_t>(),
            -7);
}

TEST(ReduceTest, GenericReducerMatchesAFold) {
  for (int64_t n : {1, 2, 5, 8, 13}) {
    Array x = jnp::sin(jnp::arange(3 * n).astype(float64).reshape({3, n}) * 0.7);
    Array got = lax::reduce(x, Array(-INFINITY), LogAddExp, {1});
    Array want = jnp::log(jnp::sum(jnp::exp(x), 1));
    EXPECT_TRUE(jnp::allclose(got, want, 1e-12, 1e-12)) << n;
  }
  // Several dimensions, in any order; none at all reduces nothing but combines the init once.
  Array y = jnp::cos(jnp::arange(2 * 3 * 4).astype(float64).reshape({2, 3, 4}));
  EXPECT_TRUE(jnp::allclose(lax::reduce(y, Array(-INFINITY), LogAddExp, {2, 0}),
                            jnp::log(jnp::sum(jnp::exp(y), std::vector<int64_t>{0, 2})), 1e-12, 1e-12));
  EXPECT_TRUE(jnp::allclose(lax::reduce(y, Array(-INFINITY), LogAddExp, {}), y, 1e-12, 1e-12));
  // An empty reduced axis gives the init.
  EXPECT_EQ(lax::reduce(jnp::zeros({2, 0}), Array(-INFINITY), LogAddExp, {1}).to_vector<float>(),
            (std::vector<float>{-INFINITY, -INFINITY}));
}

TEST(ReduceTest, PytreeOperandsArgmax) {
  Array x = jnp::array(std::vector<float>{1, 7, 3, 7, -2, 0, 5, 5, 9, 1, 1, 4}).reshape({3, 4});
  Array idx = lax::broadcasted_iota(int32, {3, 4}, 1);
  auto [v, i] = lax::reduce(ValueIndex{x, idx}, ValueIndex{Array(-INFINITY), Array::Scalar(0, int32)}, PickMax, {1});
  EXPECT_EQ(v.to_vector<float>(), (std::vector<float>{7, 5, 9}));
  EXPECT_EQ(i.to_vector<int32_t>(), lax::argmax(x, 1).to_vector<int32_t>());
  EXPECT_THROW(lax::reduce(ValueIndex{x, idx}, ValueIndex{Array(-INFINITY), Array::Scalar(0, float32)}, PickMax, {1}),
               TypeError);
}

TEST(ReduceTest, UnderJitVmapAndGrad) {
  Array x = jnp::sin(jnp::arange(2 * 7).astype(float64).reshape({2, 7}));
  auto lse = [](const Array& v) { return lax::reduce(v, Array(-INFINITY), LogAddExp, {1}); };
  WithoutFallback([&] { EXPECT_TRUE(jnp::allclose(jit(lse)(x), lse(x), 1e-14, 1e-14)); });
  EXPECT_TRUE(jnp::allclose(vmap(lse)(x.reshape({1, 2, 7})), lse(x).reshape({1, 2}), 1e-14, 1e-14));
  // d/dx logsumexp = softmax.
  Array g = grad([&](const Array& v) { return jnp::sum(lse(v)); })(x);
  EXPECT_TRUE(jnp::allclose(g, jnp::exp(x) / jnp::sum(jnp::exp(x), 1, true), 1e-12, 1e-12));
  check_grads(lse, std::tuple{x}, 2);
}

// JAX's form: one `reduce` equation carrying the computation as a body jaxpr over scalars
// (jax.lax.reduce with a non-monoid computation binds reduce_p with computation, dimensions
// and jaxpr params), lowering to one HLO reduce whose to_apply is that body.
TEST(ReduceTest, GenericReducerIsOneReduceEquationWithABodyJaxpr) {
  Array x = jnp::zeros({3, 4});
  auto lse = [](const Array& v) { return lax::reduce(v, Array(-INFINITY), LogAddExp, {1}); };
  const std::string text = make_jaxpr(lse)(x).ToString();
  EXPECT_EQ(text,
            "{ lambda ; a:f32[3,4]. let\n"
            "    b:f32[3] = reduce[\n"
            "      computation=<reducer>\n"
            "      dimensions=(1,)\n"
            "      jaxpr={ lambda ; c:f32[] d:f32[]. let\n"
            "          e:f32[] = max c d\n"
            "          f:bool[] = eq e -inf:f32[]\n"
            "          g:f32[] = select_n f e 0.0:f32[]\n"
            "          h:f32[] = sub c g\n"
            "          i:f32[] = exp h\n"
            "          j:f32[] = sub d g\n"
            "          k:f32[] = exp j\n"
            "          l:f32[] = add i k\n"
            "          m:f32[] = log l\n"
            "          n:f32[] = add g m\n"
            "        in (n,) }\n"
            "    ] a -inf:f32[]\n"
            "  in (b,) }")
      << text;
  const std::string hlo = jit(lse).lower(x).as_text();
  size_t reduces = 0;
  for (size_t at = hlo.find(" reduce("); at != std::string::npos; at = hlo.find(" reduce(", at + 1)) ++reduces;
  EXPECT_EQ(reduces, 1u) << hlo;
  EXPECT_NE(hlo.find("to_apply="), std::string::npos) << hlo;
  // vmap binds it again with the dimensions shifted past the mapped axis.
  const std::string batched = make_jaxpr(vmap(lse, in_axes{1}))(jnp::zeros({3, 5, 4})).ToString();
  EXPECT_NE(batched.find("dimensions=(2,)"), std::string::npos) << batched;
}

// Three operands (a variadic reducer no kernel knows) run natively under jit, equal to eager
// bit for bit (the CPU pipeline expands the reduce into the tree eager evaluates).
TEST(ReduceTest, VariadicReducerUnderJitMatchesEagerExactly) {
  Array x = jnp::sin(jnp::arange(5 * 9).astype(float32).reshape({5, 9}));
  Array y = jnp::cos(jnp::arange(5 * 9).astype(float32).reshape({5, 9}));
  Array idx = lax::broadcasted_iota(int32, {5, 9}, 1);
  using Triple = std::tuple<Array, Array, Array>;
  // Keeps the (x, y, index) whose x + y is largest, the smaller index on ties.
  auto pick = [](const Triple& a, const Triple& b) {
    Array sa = std::get<0>(a) + std::get<1>(a), sb = std::get<0>(b) + std::get<1>(b);
    Array take_b = lax::bitwise_or(lax::gt(sb, sa), lax::bitwise_and(lax::eq(sb, sa), lax::lt(std::get<2>(b), std::get<2>(a))));
    return Triple{lax::select(take_b, std::get<0>(b), std::get<0>(a)), lax::select(take_b, std::get<1>(b), std::get<1>(a)),
                  lax::select(take_b, std::get<2>(b), std::get<2>(a))};
  };
  auto f = [&](const Array& a, const Array& b, const Array& i) {
    return lax::reduce(Triple{a, b, i}, Triple{Array(-INFINITY), Array(-INFINITY), Array::Scalar(0, int32)}, pick, {1});
  };
  const Triple eager = f(x, y, idx);
  WithoutFallback([&] {
    const Triple compiled = jit(f)(x, y, idx);
    EXPECT_EQ(std::get<0>(compiled).to_vector<float>(), std::get<0>(eager).to_vector<float>());
    EXPECT_EQ(std::get<2>(compiled).to_vector<int32_t>(), std::get<2>(eager).to_vector<int32_t>());
  });
  EXPECT_EQ(std::get<2>(eager).to_vector<int32_t>(), jnp::argmax(x + y, 1).to_vector<int32_t>());
}

// JAX's _reduce_jvp_rule raises for a differentiated init value.
TEST(ReduceTest, InitTangentRaisesAsJax) {
  auto f = [](const Array& v) { return jnp::sum(lax::reduce(jnp::ones({3}), v, ProductOfOnePlus, {0})); };
  EXPECT_THROW(grad(f)(Array(0.0f)), NotImplementedError);
}

TEST(ReduceWindowGenericTest, MinPoolingFromALambdaIsTheMonoid) {
  Array x = jnp::arange(1, 17).astype(float32).reshape({1, 4, 4, 1});
  auto min_fn = [](const Array& a, const Array& b) { return lax::min(a, b); };
  auto pool = [&](const Array& v) { return lax::reduce_window(v, Array(INFINITY), min_fn, {1, 2, 2, 1}, {1, 2, 2, 1}, "VALID"); };
  EXPECT_EQ(pool(x).to_vector<float>(), (std::vector<float>{1, 3, 9, 11}));
  EXPECT_NE(make_jaxpr(pool)(x).ToString().find("reduce_window_min["), std::string::npos);
}

TEST(ReduceWindowGenericTest, GenericReducerMatchesAFold) {
  Array x = jnp::sin(jnp::arange(2 * 7 * 6).astype(float64).reshape({2, 7, 6})) * 0.5;
  auto window = [](const Array& v) {
    return lax::reduce_window(v, Array(0.0), ProductOfOnePlus, {1, 3, 2}, {1, 2, 1}, "SAME", {1, 1, 2}, {1, 2, 1});
  };
  // prod(1 + x) - 1 over each window: padding and holes hold 0, a factor of 1.
  Array want = jnp::exp(lax::reduce_window_sum(jnp::log1p(x), {1, 3, 2}, {1, 2, 1}, "SAME", {1, 1, 2}, {1, 2, 1})) - 1.0;
  EXPECT_TRUE(jnp::allclose(window(x), want, 1e-12, 1e-12));
  WithoutFallback([&] { EXPECT_TRUE(jnp::allclose(jit(window)(x), want, 1e-12, 1e-12)); });
  check_grads(window, std::tuple{x}, 2);
  // A (value, index) window: max pooling with the argmax of each window.
  Array v = jnp::array(std::vector<float>{4, 1, 6, 6, 2, 8, 3});
  Array idx = lax::iota(int32, 7);
  auto [m, at] = lax::reduce_window(ValueIndex{v, idx}, ValueIndex{Array(-INFINITY), Array::Scalar(0, int32)}, PickMax,
                                    {3}, {2}, "VALID");
  EXPECT_EQ(m.to_vector<float>(), (std::vector<float>{6, 6, 8}));
  EXPECT_EQ(at.to_vector<int32_t>(), (std::vector<int32_t>{2, 2, 5}));
}

}  // namespace
}  // namespace jx::reduce_generic_test

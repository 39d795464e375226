// Jaxpr text as JAX prints it (issue 13 item 7), compared with the jaxprs in JAX's
// "Understanding Jaxprs" page (https://docs.jax.dev/en/latest/jaxpr.html): a C++ scalar is a
// literal operand (`mul a 3.0:f32[]`, no broadcast), float literals print as Python floats
// (`10000.0`), scan carries `linear` and `unroll`, and switch clamps its index
// (`clamp 0:i32[] c 2:i32[]`) before the cond.
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <jx/jx.h>

namespace jx::jaxpr_fidelity_test {
namespace {

namespace jnp = jx::numpy;

// A C++ scalar is a literal operand, not broadcast first: JAX's _promote_shapes leaves a 0-d
// operand to lax's scalar promotion (the page's jaxprs read `mul b 3.0:f32[]`).
TEST(JaxprFidelity, ScalarOperandsAreLiterals) {
  EXPECT_EQ(make_jaxpr([](const Array& x) { return x * 3.0f; })(jnp::ones({3})).ToString(),
            "{ lambda ; a:f32[3]. let b:f32[3] = mul a 3.0:f32[] in (b,) }");
  EXPECT_EQ(make_jaxpr([](const Array& x) { return jnp::multiply(x, 3.0f); })(jnp::ones({3})).ToString(),
            "{ lambda ; a:f32[3]. let b:f32[3] = mul a 3.0:f32[] in (b,) }");
  EXPECT_EQ(make_jaxpr([](const Array& x) { return 1.0f - x / 2.0f + x; })(jnp::ones({2, 2})).ToString(),
            "{ lambda ; a:f32[2,2]. let\n"
            "    b:f32[2,2] = div a 2.0:f32[]\n"
            "    c:f32[2,2] = sub 1.0:f32[] b\n"
            "    d:f32[2,2] = add c a\n"
            "  in (d,) }");
  EXPECT_EQ(make_jaxpr([](const Array& x) { return x * 3.0f; })(Array::Scalar(1.0, float32)).ToString(),
            "{ lambda ; a:f32[]. let b:f32[] = mul a 3.0:f32[] in (b,) }");
  // Values and derivatives are unchanged: eager, jit and grad through the scalar operand.
  auto f = [](const Array& x) { return jnp::sum(3.0f * x - 1.0f); };
  EXPECT_EQ(f(jnp::ones({4})).item<float>(), 8.0f);
  EXPECT_EQ(jit(f)(jnp::ones({4})).item<float>(), 8.0f);
  EXPECT_EQ(grad(f)(jnp::ones({4})).to_vector<float>(), (std::vector<float>{3, 3, 3, 3}));
  EXPECT_EQ(vmap([](const Array& x) { return x / 2.0f; })(jnp::ones({3})).to_vector<float>(),
            (std::vector<float>{0.5f, 0.5f, 0.5f}));
}

// Every jnp binary ufunc stages a C++ scalar as a literal, as JAX's do with Python scalars
// (jnp's promote_shapes leaves a 0-d operand to lax): the page's jaxprs and `jax.make_jaxpr`
// of the same lines read
//   jnp.power(x, 2.0)        ->  pow a 2.0:f32[]
//   jnp.maximum(x, 0.0)      ->  max a 0.0:f32[]        (jax.nn.relu's jaxpr)
//   jnp.minimum(1.0, x)      ->  min 1.0:f32[] a
//   x > 0.0                  ->  gt a 0.0:f32[]
//   x == 1                   ->  eq a 1:i32[]           (x int32)
//   jnp.fmod(x, 2.0)         ->  rem a 2.0:f32[]
//   jnp.arctan2(x, 1.0)      ->  atan2 a 1.0:f32[]
//   x & 3, x << 1            ->  and a 3:i32[], shift_left a 1:i32[]
TEST(JaxprFidelity, EveryBinaryOpStagesScalarLiterals) {
  auto jaxpr_of = [](auto f, const Array& x) { return make_jaxpr(f)(x).ToString(); };
  const Array xf = jnp::ones({3});
  const Array xi = jnp::arange(3);
  EXPECT_EQ(jaxpr_of([](const Array& x) { return jnp::power(x, 2.0f); }, xf),
            "{ lambda ; a:f32[3]. let b:f32[3] = pow a 2.0:f32[] in (b,) }");
  EXPECT_EQ(jaxpr_of([](const Array& x) { return jnp::maximum(x, 0.0f); }, xf),
            "{ lambda ; a:f32[3]. let b:f32[3] = max a 0.0:f32[] in (b,) }");
  EXPECT_EQ(jaxpr_of([](const Array& x) { return jnp::minimum(1.0f, x); }, xf),
            "{ lambda ; a:f32[3]. let b:f32[3] = min 1.0:f32[] a in (b,) }");
  EXPECT_EQ(jaxpr_of([](const Array& x) { return x > 0.0f; }, xf),
            "{ lambda ; a:f32[3]. let b:bool[3] = gt a 0.0:f32[] in (b,) }");
  EXPECT_EQ(jaxpr_of([](const Array& x) { return x == 1; }, xi),
            "{ lambda ; a:i32[3]. let b:bool[3] = eq a 1:i32[] in (b,) }");
  EXPECT_EQ(jaxpr_of([](const Array& x) { return jnp::fmod(x, 2.0f); }, xf),
            "{ lambda ; a:f32[3]. let b:f32[3] = rem a 2.0:f32[] in (b,) }");
  EXPECT_EQ(jaxpr_of([](const Array& x) { return jnp::arctan2(x, 1.0f); }, xf),
            "{ lambda ; a:f32[3]. let b:f32[3] = atan2 a 1.0:f32[] in (b,) }");
  EXPECT_EQ(jaxpr_of([](const Array& x) { return jnp::bitwise_and(x, 3); }, xi),
            "{ lambda ; a:i32[3]. let b:i32[3] = and a 3:i32[] in (b,) }");
  EXPECT_EQ(jaxpr_of([](const Array& x) { return jnp::left_shift(x, 1); }, xi),
            "{ lambda ; a:i32[3]. let b:i32[3] = shift_left a 1:i32[] in (b,) }");
  // Values, gradients and batching are unchanged with the 0-d operand.
  const Array v = jnp::array({-1.f, 2.f, 3.f});
  EXPECT_EQ(jnp::maximum(v, 0.0f).to_vector<float>(), (std::vector<float>{0, 2, 3}));
  EXPECT_EQ(jit([](const Array& x) { return jnp::power(x, 2.0f); })(v).to_vector<float>(),
            (std::vector<float>{1, 4, 9}));
  EXPECT_EQ(grad([](const Array& x) { return jnp::sum(jnp::power(x, 2.0f)); })(v).to_vector<float>(),
            (std::vector<float>{-2, 4, 6}));
  EXPECT_EQ(grad([](const Array& x) { return jnp::sum(jnp::maximum(x, 0.0f)); })(v).to_vector<float>(),
            (std::vector<float>{0, 1, 1}));
  EXPECT_EQ(vmap([](const Array& x) { return jnp::arctan2(x, 1.0f) > 0.5f; })(v).to_vector<bool>(),
            (std::vector<bool>{false, true, true}));
  EXPECT_EQ((jnp::arange(5) % 3).to_vector<int32_t>(), (std::vector<int32_t>{0, 1, 2, 0, 1}));
}

TEST(JaxprFidelity, FloatLiteralsPrintAsPythonFloats) {
  EXPECT_EQ(make_jaxpr([](const Array& x) { return x * 10000.0f; })(Array::Scalar(1.0, float32)).ToString(),
            "{ lambda ; a:f32[]. let b:f32[] = mul a 10000.0:f32[] in (b,) }");
  // float32 0.1 prints as 0.1, not as its float64 expansion 0.10000000149011612.
  EXPECT_EQ(make_jaxpr([](const Array& x) { return x + 0.1f; })(Array::Scalar(1.0, float32)).ToString(),
            "{ lambda ; a:f32[]. let b:f32[] = add a 0.1:f32[] in (b,) }");
  EXPECT_EQ(make_jaxpr([](const Array& x) { return x * 1e-5; })(Array::Scalar(1.0, float64)).ToString(),
            "{ lambda ; a:f64[]. let b:f64[] = mul a 1e-05:f64[] in (b,) }");
}

// The page's scan example (func11: a running sum of products with a closed-over const).
TEST(JaxprFidelity, ScanShowsLinearAndUnroll) {
  auto func11 = [](const Array& arr, const Array& extra) {
    auto body = [&](const Array& carry, const Array& ae) { return std::pair{carry + ae * extra, ae}; };
    return lax::scan(body, Array::Scalar(0.0, float32), arr, {.unroll = 2});
  };
  EXPECT_EQ(make_jaxpr(func11)(jnp::ones({16}), Array::Scalar(1.0, float32)).ToString(),
            "{ lambda ; a:f32[16] b:f32[]. let\n"
            "    c:f32[] d:f32[16] = scan[\n"
            "      _split_transpose=False\n"
            "      jaxpr={ lambda ; e:f32[] f:f32[] g:f32[]. let\n"
            "          h:f32[] = mul g e\n"
            "          i:f32[] = add f h\n"
            "        in (i, g) }\n"
            "      length=16\n"
            "      linear=(False, False, False)\n"
            "      num_carry=1\n"
            "      num_consts=1\n"
            "      reverse=False\n"
            "      unroll=2\n"
            "    ] b 0.0:f32[] a\n"
            "  in (c, d) }");
}

// The page's one_of_three: lax.switch converts the index to int32 and clamps it.
TEST(JaxprFidelity, SwitchClampsItsIndex) {
  auto one_of_three = [](const Array& index, const Array& arg) {
    std::vector<std::function<Array(const Array&)>> branches = {
        [](const Array& x) { return x + 1.0f; }, [](const Array& x) { return x - 2.0f; },
        [](const Array& x) { return x + 3.0f; }};
    return lax::switch_(index, branches, arg);
  };
  const std::string text = make_jaxpr(one_of_three)(Array::Scalar(1, int32), Array::Scalar(5.0, float32)).ToString();
  EXPECT_NE(text.find("c:i32[] = clamp 0:i32[] a 2:i32[]"), std::string::npos) << text;
  EXPECT_NE(text.find("] c b\n"), std::string::npos) << text;
  // Out-of-range indices pick the nearest branch, eagerly and under jit.
  EXPECT_EQ(one_of_three(Array::Scalar(7, int32), Array(5.0f)).item<float>(), 8.0f);
  EXPECT_EQ(one_of_three(Array::Scalar(-4, int32), Array(5.0f)).item<float>(), 6.0f);
  EXPECT_EQ(jit(one_of_three)(Array::Scalar(-4, int32), Array(5.0f)).item<float>(), 6.0f);
}

// Wrapped jaxprs (sub-jaxprs in params, one equation per line) and wrapped arrays end no
// line with a space.
TEST(JaxprFidelity, NoTrailingSpacesInWrappedLines) {
  auto f = [](const Array& p, const Array& xs) {
    Array c = lax::cond(p, [](const Array& v) { return lax::sin(v); }, [](const Array& v) { return lax::neg(v); }, xs);
    return lax::scan([](const Array& carry, const Array& x) { return std::pair{carry + x, carry * x}; },
                     Array(0.0f), c).second;
  };
  std::vector<float> long_values(30);
  for (int i = 0; i < 30; ++i) long_values[i] = 1.0f / static_cast<float>(i + 1);
  for (const std::string& text : {make_jaxpr(f)(Array(true), jnp::ones({8})).ToString(),
                                  jnp::array(long_values).str(), jnp::array(long_values).repr()}) {
    ASSERT_NE(text.find('\n'), std::string::npos) << text;
    for (size_t pos = text.find('\n'); pos != std::string::npos; pos = text.find('\n', pos + 1)) {
      EXPECT_NE(text[pos - 1], ' ') << "trailing space before line break at " << pos << " in\n" << text;
    }
  }
}

}  // namespace
}  // namespace jx::jaxpr_fidelity_test

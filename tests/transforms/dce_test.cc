// Unused outputs print as `_` (JAX's DropVar) and DceJaxpr (JAX's pe.dce_jaxpr) drops the
// equations nothing needs. Expected jaxprs from JAX's docs: jax.make_jaxpr's docstring
// (https://docs.jax.dev/en/latest/_autosummary/jax.make_jaxpr.html, make_jaxpr(grad(f))
// keeps `_:f32[] = sin b`) and "JAX internals: The jaxpr language"
// (https://docs.jax.dev/en/latest/jaxpr.html, func10: `_:i32[] _:i32[] e:f32[16] = while[...]`).
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <jx/jx.h>

#include "jx/transforms/dce.h"

namespace jx {
namespace {

namespace jnp = jx::numpy;

// make_jaxpr's docstring: the primal output of sin, which grad does not need, is `_`. (The
// docstring passes the Python float 3.0; a strong float32 gives the same jaxpr, and jx's grad
// of a weakly typed scalar still ends with a convert to the weak type that JAX's does not
// need: a weak-type propagation difference outside this test.)
TEST(JaxprDropVar, GradOfSinCosMatchesMakeJaxprDocstring) {
  auto f = [](const Array& x) { return jnp::sin(jnp::cos(x)); };
  EXPECT_EQ(make_jaxpr(grad(f))(Array::Scalar(3.0, float32)).ToString(),
            "{ lambda ; a:f32[]. let\n"
            "    b:f32[] = cos a\n"
            "    c:f32[] = sin a\n"
            "    _:f32[] = sin b\n"
            "    d:f32[] = cos b\n"
            "    e:f32[] = mul 1.0:f32[] d\n"
            "    f:f32[] = neg e\n"
            "    g:f32[] = mul f c\n"
            "  in (g,) }");
}

// The page's func10: fori_loop is a while whose index and bound outputs nothing reads. (JAX's
// printer breaks the short cond_jaxpr over three lines inside the broken equation; jx keeps a
// sub-jaxpr that fits on one line: a printer difference outside the `_` binders.)
TEST(JaxprDropVar, UnusedOutputsOfAMultiOutputPrimitive) {
  auto func10 = [](const Array& arg, const Array& n) {
    Array ones = jnp::ones(arg.shape());
    return lax::fori_loop(0, n, [&](const Array&, const Array& carry) { return carry + ones * 3.0f + arg; },
                          arg + ones);
  };
  EXPECT_EQ(make_jaxpr(func10)(jnp::ones({16}), Array(int32_t{5})).ToString(),
            "{ lambda ; a:f32[16] b:i32[]. let\n"
            "    c:f32[16] = broadcast_in_dim[broadcast_dimensions=() shape=(16,) sharding=None] 1.0:f32[]\n"
            "    d:f32[16] = add a c\n"
            "    _:i32[] _:i32[] e:f32[16] = while[\n"
            "      body_jaxpr={ lambda ; f:f32[16] g:f32[16] h:i32[] i:i32[] j:f32[16]. let\n"
            "          k:i32[] = add h 1:i32[]\n"
            "          l:f32[16] = mul f 3.0:f32[]\n"
            "          m:f32[16] = add j l\n"
            "          n:f32[16] = add m g\n"
            "        in (k, i, n) }\n"
            "      body_nconsts=2\n"
            "      cond_jaxpr={ lambda ; o:i32[] p:i32[] q:f32[16]. let r:bool[] = lt o p in (r,) }\n"
            "      cond_nconsts=0\n"
            "    ] c a 0:i32[] b d\n"
            "  in (e,) }");
}

// pe.dce_jaxpr: the dead `sin b` goes; used_inputs says which inputs are read.
TEST(DceJaxpr, DropsDeadEquationsAndReportsUsedInputs) {
  auto f = [](const Array& x) { return jnp::sin(jnp::cos(x)); };
  const ClosedJaxpr j = make_jaxpr(grad(f))(Array::Scalar(3.0, float32));
  const std::shared_ptr<Jaxpr> pruned = DceJaxpr(*j.jaxpr);
  EXPECT_EQ(pruned->ToString(),
            "{ lambda ; a:f32[]. let\n"
            "    b:f32[] = cos a\n"
            "    c:f32[] = sin a\n"
            "    d:f32[] = cos b\n"
            "    e:f32[] = mul 1.0:f32[] d\n"
            "    f:f32[] = neg e\n"
            "    g:f32[] = mul f c\n"
            "  in (g,) }");

  auto two = [](const Array& x, const Array& y) { return std::pair{jnp::sin(x), jnp::cos(y)}; };
  const ClosedJaxpr t = make_jaxpr(two)(Array(1.0f), Array(2.0f));
  DceResult r = DceJaxpr(*t.jaxpr, {false, true});
  EXPECT_EQ(r.used_inputs, (std::vector<bool>{false, true}));
  EXPECT_EQ(r.jaxpr->ToString(), "{ lambda ; a:f32[]. let b:f32[] = cos a in (b,) }");
  r = DceJaxpr(*t.jaxpr, {false, true}, /*instantiate=*/true);
  EXPECT_EQ(r.jaxpr->ToString(), "{ lambda ; a:f32[] b:f32[]. let c:f32[] = cos b in (c,) }");
  EXPECT_THROW(DceJaxpr(*t.jaxpr, {true}), InternalError);
}

// A kept multi-output equation keeps its unread outputs, printed `_`; an effect stays.
TEST(DceJaxpr, KeepsEffectsAndDropsOutputsOfKeptEquations) {
  auto f = [](const Array& x) {
    debug::print("x: {}", x);
    auto [carry, ys] = lax::scan([](const Array& c, const Array& v) { return std::pair{c + v, c * v}; },
                                 Array(0.0f), x);
    return std::pair{carry, ys};
  };
  const ClosedJaxpr j = make_jaxpr(f)(jnp::ones({4}));
  const DceResult r = DceJaxpr(*j.jaxpr, {true, false});
  const std::string text = r.jaxpr->ToString();
  EXPECT_NE(text.find("debug_callback"), std::string::npos) << text;
  EXPECT_NE(text.find("    b:f32[] _:f32[4] = scan["), std::string::npos) << text;
  EXPECT_NE(text.find("  in (b,) }"), std::string::npos) << text;
}

}  // namespace
}  // namespace jx

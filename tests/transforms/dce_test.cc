// Unused outputs print as `_` (JAX's DropVar) and DceJaxpr (JAX's pe.dce_jaxpr) drops the
// equations nothing needs. Expected jaxprs from JAX's docs: jax.make_jaxpr's docstring
// (https://docs.jax.dev/en/latest/_autosummary/jax.make_jaxpr.html, make_jaxpr(grad(f))
// keeps `_:f32[] = sin b`) and "JAX internals: The jaxpr language"
// (https://docs.jax.dev/en/latest/jaxpr.html, func10: `_:i32[] _:i32[] e:f32[16] = while[...]`).
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>
#include <jx/jx.h>

#include "jx/transforms/dce.h"

namespace jx::dce_test {
namespace {

namespace jnp = jx::numpy;

// make_jaxpr's docstring: the primal output of sin, which grad does not need, is `_`. The
// docstring passes the Python float 3.0 (a weak float32, as the C++ 3.0 here): grad's seed is
// weak as its output (JAX's _one(ans)), so the cotangent is weak with no trailing convert; a
// strong float32 gives the same jaxpr.
TEST(JaxprDropVar, GradOfSinCosMatchesMakeJaxprDocstring) {
  auto f = [](const Array& x) { return jnp::sin(jnp::cos(x)); };
  for (const Array& x : {Array(3.0), Array::Scalar(3.0, float32)}) {
    EXPECT_EQ(make_jaxpr(grad(f))(x).ToString(),
              "{ lambda ; a:f32[]. let\n"
              "    b:f32[] = cos a\n"
              "    c:f32[] = sin a\n"
              "    _:f32[] = sin b\n"
              "    d:f32[] = cos b\n"
              "    e:f32[] = mul 1.0:f32[] d\n"
              "    f:f32[] = neg e\n"
              "    g:f32[] = mul f c\n"
              "  in (g,) }");
    EXPECT_EQ(grad(f)(x).weak_type(), x.weak_type());
  }
}

// The page's func10: fori_loop is a while whose index and bound outputs nothing reads. The
// cond_jaxpr breaks over three lines as the page shows: at its column inside the broken
// equation its one-line form would pass the 80-column width.
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
            "      cond_jaxpr={ lambda ; o:i32[] p:i32[] q:f32[16]. let\n"
            "          r:bool[] = lt o p\n"
            "        in (r,) }\n"
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
  // The scan's dce rule drops the unused ys (JAX's _scan_dce_rule).
  EXPECT_NE(text.find("    b:f32[] = scan["), std::string::npos) << text;
  EXPECT_NE(text.find("  in (b,) }"), std::string::npos) << text;
}

// The number of lines of `text` holding `piece`.
size_t Count(const std::string& text, const std::string& piece) {
  size_t n = 0;
  for (size_t at = text.find(piece); at != std::string::npos; at = text.find(piece, at + 1)) ++n;
  return n;
}

// JAX's _scan_dce_rule: with only the first carry used, the second carry (which the first's
// update does not read) and the ys go from the equation and its body; a third carry that the
// first's update reads stays, unread outside (printed `_`).
TEST(DceRules, ScanDropsUnusedYsAndCarriesNothingNeeds) {
  using Carry = std::tuple<Array, Array, Array>;
  auto f = [](const Array& xs) {
    auto step = [](const Carry& c, const Array& x) {
      const auto& [a, b, k] = c;
      return std::pair{Carry{a + k * x, jnp::sin(b), k * 2.0f}, jnp::cos(x)};
    };
    auto [carry, ys] = lax::scan(step, Carry{Array(0.0f), Array(1.0f), Array(1.0f)}, xs);
    return std::pair{std::get<0>(carry), ys};
  };
  const ClosedJaxpr j = make_jaxpr(f)(jnp::ones({4}));
  const std::string before = j.ToString();
  ASSERT_EQ(Count(before, " sin "), 1u) << before;
  const DceResult r = DceJaxpr(*j.jaxpr, {true, false});
  const std::string text = r.jaxpr->ToString();
  EXPECT_EQ(Count(text, " sin "), 0u) << text;
  EXPECT_EQ(Count(text, " cos "), 0u) << text;
  EXPECT_NE(text.find("b:f32[] _:f32[] = scan["), std::string::npos) << text;
  EXPECT_NE(text.find("num_carry=2"), std::string::npos) << text;
  // The pruned program computes the same carry.
  const Array xs = jnp::arange(4, float32);
  const Arrays got = EvalJaxpr(*r.jaxpr, j.consts, {xs});
  EXPECT_TRUE(jnp::allclose(got[0], f(xs).first, 0, 0));
}

// JAX's _cond_dce_rule: an output nobody reads goes from every branch, and operands only it
// read stop being operands.
TEST(DceRules, CondDropsUnusedOutputsInEveryBranch) {
  auto f = [](const Array& p, const Array& x, const Array& y) {
    return lax::cond(
        p > 0, [](const Array& a, const Array& b) { return std::pair{jnp::sin(a), jnp::exp(b)}; },
        [](const Array& a, const Array& b) { return std::pair{jnp::cos(a), jnp::log(b)}; }, x, y);
  };
  const ClosedJaxpr j = make_jaxpr(f)(Array(1.0f), Array(2.0f), Array(3.0f));
  const DceResult r = DceJaxpr(*j.jaxpr, {true, false});
  const std::string text = r.jaxpr->ToString();
  EXPECT_EQ(Count(text, " exp "), 0u) << text;
  EXPECT_EQ(Count(text, " log "), 0u) << text;
  EXPECT_EQ(Count(text, " sin "), 1u) << text;
  EXPECT_EQ(Count(text, " cos "), 1u) << text;
  EXPECT_EQ(r.used_inputs, (std::vector<bool>{true, true, false}));
  for (float p : {1.0f, -1.0f}) {
    const Arrays got = EvalJaxpr(*r.jaxpr, j.consts, {Array(p), Array(2.0f)});
    EXPECT_TRUE(jnp::allclose(got[0], f(Array(p), Array(2.0f), Array(3.0f)).first, 0, 0));
  }
}


// The DCE rule for while: with only `a` used, the loop keeps `a`, the index the cond reads
// and `k`, which a's update reads; `b` goes with its update (the sin) and the const `c` only
// b's update read. The pruned loop computes the same `a`.
TEST(DceRules, WhileDropsCarriesNothingNeeds) {
  using Carry = std::tuple<Array, Array, Array, Array>;
  auto f = [](const Array& x, const Array& c) {
    auto [i, a, b, k] = lax::while_loop([](const Carry& s) { return std::get<0>(s) < 5; },
                                        [&](const Carry& s) {
                                          const auto& [i, a, b, k] = s;
                                          return Carry{i + 1, a + k * x, jnp::sin(b) * c, k * 2.0f};
                                        },
                                        Carry{Array(int32_t{0}), Array(0.0f), Array(1.0f), Array(1.0f)});
    return std::tuple{a, b, i};
  };
  const ClosedJaxpr j = make_jaxpr(f)(Array(3.0f), Array(2.0f));
  const std::string before = j.ToString();
  ASSERT_EQ(Count(before, " sin "), 1u) << before;
  const DceResult r = DceJaxpr(*j.jaxpr, {true, false, false});
  const std::string text = r.jaxpr->ToString();
  EXPECT_EQ(Count(text, " sin "), 0u) << text;
  EXPECT_EQ(Count(text, " mul "), 2u) << text;  // k * x and k * 2
  EXPECT_EQ(r.used_inputs, (std::vector<bool>{true, false}));
  EXPECT_NE(text.find("_:i32[] b:f32[] _:f32[] = while["), std::string::npos) << text;
  EXPECT_NE(text.find("body_nconsts=1"), std::string::npos) << text;
  const Arrays got = EvalJaxpr(*r.jaxpr, j.consts, {Array(3.0f)});
  EXPECT_TRUE(jnp::allclose(got[0], std::get<0>(f(Array(3.0f), Array(2.0f))), 0, 0));
  // Nothing used: the loop goes.
  EXPECT_EQ(DceJaxpr(*j.jaxpr, {false, false, false}).jaxpr->eqns.size(), 0u);
}

// A loop with an effect keeps every carry: the effect may read any of them.
TEST(DceRules, WhileWithAnEffectKeepsItsCarries) {
  using Carry = std::pair<Array, Array>;
  auto f = [](const Array& x) {
    auto [i, a] = lax::while_loop([](const Carry& s) { return s.first < 3; },
                                  [](const Carry& s) {
                                    debug::print("i: {}", s.first);
                                    return Carry{s.first + 1, jnp::sin(s.second)};
                                  },
                                  Carry{Array(int32_t{0}), x});
    return a;
  };
  const ClosedJaxpr j = make_jaxpr(f)(Array(1.0f));
  const std::string text = DceJaxpr(*j.jaxpr, {false}).jaxpr->ToString();
  EXPECT_NE(text.find("debug_callback"), std::string::npos) << text;
  EXPECT_EQ(Count(text, " sin "), 1u) << text;
}

// JAX's DCE rule for pjit: the inner jaxpr keeps what the used outputs need and the call
// only the operands they read.
TEST(DceRules, JitPrunesItsInnerJaxpr) {
  auto g = jit([](const Array& a, const Array& b) { return std::pair{jnp::sin(a), jnp::exp(b)}; });
  auto f = [&](const Array& x, const Array& y) { return g(x, y); };
  const ClosedJaxpr j = make_jaxpr(f)(Array(1.0f), Array(2.0f));
  const std::string before = j.ToString();
  ASSERT_EQ(Count(before, " exp "), 1u) << before;
  const DceResult r = DceJaxpr(*j.jaxpr, {true, false});
  const std::string text = r.jaxpr->ToString();
  EXPECT_EQ(Count(text, " exp "), 0u) << text;
  EXPECT_EQ(Count(text, " sin "), 1u) << text;
  EXPECT_EQ(r.used_inputs, (std::vector<bool>{true, false}));
  EXPECT_NE(text.find("donated_invars=(0,)"), std::string::npos) << text;
  const Arrays got = EvalJaxpr(*r.jaxpr, j.consts, {Array(1.0f)});
  EXPECT_TRUE(jnp::allclose(got[0], jnp::sin(Array(1.0f)), 0, 0));
  EXPECT_EQ(DceJaxpr(*j.jaxpr, {false, false}).jaxpr->eqns.size(), 0u);
}

// JAX's remat_dce: a checkpoint's body is pruned as a closed call's.
TEST(DceRules, CheckpointPrunesItsBody) {
  auto g = checkpoint([](const Array& a, const Array& b) { return std::pair{jnp::sin(a), jnp::exp(b)}; });
  auto f = [&](const Array& x, const Array& y) { return g(x, y); };
  const ClosedJaxpr j = make_jaxpr(f)(Array(1.0f), Array(2.0f));
  const std::string before = j.ToString();
  ASSERT_EQ(Count(before, " exp "), 1u) << before;
  ASSERT_EQ(Count(before, "checkpoint["), 1u) << before;
  const DceResult r = DceJaxpr(*j.jaxpr, {true, false});
  const std::string text = r.jaxpr->ToString();
  EXPECT_EQ(Count(text, " exp "), 0u) << text;
  EXPECT_EQ(Count(text, " sin "), 1u) << text;
  EXPECT_EQ(r.used_inputs, (std::vector<bool>{true, false}));
  const Arrays got = EvalJaxpr(*r.jaxpr, j.consts, {Array(1.0f)});
  EXPECT_TRUE(jnp::allclose(got[0], jnp::sin(Array(1.0f)), 0, 0));
}

}  // namespace
}  // namespace jx::dce_test

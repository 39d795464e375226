// jx::checkpoint with JAX's policies and checkpoint_name: the example of
// https://docs.jax.dev/en/latest/gradient-checkpointing.html (f of three g(W, x) =
// sin(W @ x) layers), with the backward pass's recomputed equations counted to show that each
// policy saves exactly what it says; gradients equal the plain function's in every case.
#include "jx/lax/checkpoint_policies.h"

#include <algorithm>
#include <map>

#include <gtest/gtest.h>
#include <jx/jx.h>

namespace jx::checkpoint_policies_test {
namespace {

namespace jnp = jx::numpy;

using Params = std::tuple<Array, Array, Array>;

Array G(const Array& w, const Array& x) { return jnp::sin(jnp::dot(w, x)); }
Array F(const Params& w, const Array& x) { return G(std::get<2>(w), G(std::get<1>(w), G(std::get<0>(w), x))); }
// g with its matmul output named, as checkpoint_name(y, name="dot").
Array GNamed(const Array& w, const Array& x, const std::string& name) {
  return jnp::sin(checkpoint_name(jnp::dot(w, x), name));
}
Array FNamed(const Params& w, const Array& x) {
  return GNamed(std::get<2>(w), GNamed(std::get<1>(w), GNamed(std::get<0>(w), x, "a"), "b"), "c");
}

Params Weights() {
  return {jnp::sin(jnp::arange(20).astype(float32).reshape({5, 4})), jnp::cos(jnp::arange(30).astype(float32).reshape({6, 5})),
          jnp::sin(jnp::arange(42).astype(float32).reshape({7, 6}) * 0.5f)};
}

// Primitive name -> count over the backward pass: the checkpoint[differentiated=True]
// equations of grad's jaxpr (what reverse mode recomputes next to the cotangents).
std::map<std::string, int> BackwardCounts(const ClosedJaxpr& j) {
  std::map<std::string, int> counts;
  for (const Eqn& e : j.jaxpr->eqns) {
    if (e.primitive.name() != "checkpoint" || !e.params.GetBool("differentiated")) continue;
    const auto* inner = dynamic_cast<const JaxprParam*>(e.params.GetObject("jaxpr").get());
    for (const Eqn& b : inner->closed().jaxpr->eqns) ++counts[std::string(b.primitive.name())];
  }
  return counts;
}

template <typename Fn>
std::map<std::string, int> CountsFor(Fn f) {
  const Params w = Weights();
  const Array x = jnp::ones({4});
  auto loss = [&](const Params& p) { return jnp::sum(f(p, x)); };
  // Same gradient as without checkpoint, for every policy.
  const Params want = grad([&](const Params& p) { return jnp::sum(F(p, x)); })(w);
  const Params got = grad(loss)(w);
  EXPECT_TRUE(jnp::allclose(std::get<0>(got), std::get<0>(want), 1e-5, 1e-6));
  EXPECT_TRUE(jnp::allclose(std::get<1>(got), std::get<1>(want), 1e-5, 1e-6));
  EXPECT_TRUE(jnp::allclose(std::get<2>(got), std::get<2>(want), 1e-5, 1e-6));
  return BackwardCounts(make_jaxpr(grad(loss))(w));
}

TEST(CheckpointPolicyTest, NothingSaveableRecomputesEveryLayer) {
  // jax.checkpoint(f): the three matmuls and the two sins feeding the next layer are recomputed
  // (the last layer's sin is f's output, which the backward pass does not read).
  auto counts = CountsFor([](const Params& w, const Array& x) { return checkpoint(F)(w, x); });
  auto same = CountsFor([](const Params& w, const Array& x) { return checkpoint(F, policies::nothing_saveable)(w, x); });
  EXPECT_EQ(counts["sin"], 2);
  EXPECT_EQ(counts["cos"], 3);
  EXPECT_EQ(same["sin"], 2);
  EXPECT_EQ(same["dot_general"], counts["dot_general"]);
}

TEST(CheckpointPolicyTest, DotsSaveableRecomputesNoMatmul) {
  auto nothing = CountsFor([](const Params& w, const Array& x) { return checkpoint(F)(w, x); });
  auto dots = CountsFor([](const Params& w, const Array& x) { return checkpoint(F, policies::dots_saveable)(w, x); });
  // The three forward matmuls are read, not recomputed; the sins (inputs of the next matmul's
  // cotangent) still are.
  EXPECT_EQ(nothing["dot_general"] - dots["dot_general"], 3);
  EXPECT_EQ(dots["sin"], 2);
  auto alias = CountsFor([](const Params& w, const Array& x) { return checkpoint(F, policies::checkpoint_dots)(w, x); });
  EXPECT_EQ(alias["dot_general"], dots["dot_general"]);
  // Matrix-vector products have no batch dims: the same as dots_saveable.
  auto no_batch = CountsFor(
      [](const Params& w, const Array& x) { return checkpoint(F, policies::dots_with_no_batch_dims_saveable)(w, x); });
  EXPECT_EQ(no_batch["dot_general"], dots["dot_general"]);
}

TEST(CheckpointPolicyTest, EverythingSaveableRecomputesNothing) {
  auto counts =
      CountsFor([](const Params& w, const Array& x) { return checkpoint(F, policies::everything_saveable)(w, x); });
  EXPECT_EQ(counts["sin"], 0);
  EXPECT_EQ(counts["cos"], 0);
}

TEST(CheckpointPolicyTest, NamesSelectWhatIsSaved) {
  auto all_names = CountsFor(
      [](const Params& w, const Array& x) { return checkpoint(FNamed, policies::save_only_these_names("a", "b", "c"))(w, x); });
  auto one_name =
      CountsFor([](const Params& w, const Array& x) { return checkpoint(FNamed, policies::save_only_these_names("b"))(w, x); });
  auto but_b = CountsFor(
      [](const Params& w, const Array& x) { return checkpoint(FNamed, policies::save_any_names_but_these("b"))(w, x); });
  auto nothing = CountsFor([](const Params& w, const Array& x) { return checkpoint(FNamed)(w, x); });
  // Each saved name is one matmul output not recomputed.
  EXPECT_EQ(nothing["dot_general"] - all_names["dot_general"], 3);
  EXPECT_EQ(nothing["dot_general"] - one_name["dot_general"], 1);
  EXPECT_EQ(nothing["dot_general"] - but_b["dot_general"], 2);
  // checkpoint_name is the identity, also under jit, and shows in the jaxpr.
  Array x = jnp::arange(3).astype(float32);
  EXPECT_TRUE(jnp::array_equal(jit([](const Array& v) { return ad_checkpoint::checkpoint_name(v * 2.0f, "twice"); })(x),
                               x * 2.0f));
  const std::string named = make_jaxpr([](const Array& v) { return checkpoint_name(v, "h"); })(x).ToString();
  EXPECT_NE(named.find("name[name=h]"), std::string::npos) << named;
  // The policy prints in the checkpoint equation.
  const std::string text =
      make_jaxpr([](const Array& v) { return checkpoint([](const Array& u) { return jnp::sin(u); }, policies::dots_saveable)(v); })(x)
          .ToString();
  EXPECT_NE(text.find("policy=dots_saveable"), std::string::npos) << text;
}

// jax.ad_checkpoint.print_saved_residuals(jax.checkpoint(f), W1, W2, W3, x) lists only the
// arguments; with dots_saveable the three matmul outputs are saved too.
TEST(CheckpointPolicyTest, SavedResiduals) {
  const Params w = Weights();
  const Array x = jnp::ones({4});
  auto remat = [](const Params& p, const Array& v) { return checkpoint(F)(p, v); };
  std::vector<std::string> lines = ad_checkpoint::saved_residuals(remat, w, x);
  EXPECT_EQ(lines, (std::vector<std::string>{"f32[5,4] from the argument 0", "f32[6,5] from the argument 1",
                                             "f32[7,6] from the argument 2", "f32[4] from the argument 3"}));
  auto dots = [](const Params& p, const Array& v) { return checkpoint(F, policies::dots_saveable)(p, v); };
  lines = ad_checkpoint::saved_residuals(dots, w, x);
  int computed = 0;
  for (const std::string& l : lines) computed += l.find("computed in the forward pass") != std::string::npos;
  EXPECT_EQ(computed, 3) << ::testing::PrintToString(lines);
  for (const char* want : {"f32[5] computed", "f32[6] computed", "f32[7] computed"}) {
    EXPECT_NE(::testing::PrintToString(lines).find(want), std::string::npos) << ::testing::PrintToString(lines);
  }
}

// A policy sees the equations inside a scan body (JAX's saveable policies reach into scan's
// jaxpr through partial_eval_jaxpr_custom): the known scan saves what the body's split keeps,
// stacked over the steps. Both policies keep each step's carry (a body input, as JAX's
// scan rule does); dots_saveable keeps each step's matmul output too (one more
// "f32[3,4] computed in the forward pass"), nothing_saveable recomputes it. The gradients are
// the un-checkpointed ones either way.
TEST(CheckpointPolicyTest, PoliciesReachIntoScanBodies) {
  const Array w = jnp::sin(jnp::arange(16).astype(float32).reshape({4, 4}));
  const Array xs = jnp::cos(jnp::arange(12).astype(float32).reshape({3, 4}));
  auto body = [](const Array& w, const Array& xs) {
    auto step = [&](const Array& c, const Array& x) {
      Array h = jnp::sin(jnp::dot(w, c) + x);
      return std::pair{h, h};
    };
    return jnp::sum(lax::scan(step, jnp::zeros({4}), xs).second);
  };
  auto count = [](const std::vector<std::string>& lines, const std::string& want) {
    return std::count(lines.begin(), lines.end(), want);
  };
  auto dots = [&](const Array& w, const Array& xs) { return checkpoint(body, policies::dots_saveable)(w, xs); };
  auto nothing = [&](const Array& w, const Array& xs) { return checkpoint(body, policies::nothing_saveable)(w, xs); };
  const std::vector<std::string> saved_dots = ad_checkpoint::saved_residuals(dots, w, xs);
  const std::vector<std::string> saved_nothing = ad_checkpoint::saved_residuals(nothing, w, xs);
  const std::string stacked = "f32[3,4] computed in the forward pass";
  EXPECT_EQ(count(saved_dots, stacked), count(saved_nothing, stacked) + 1)
      << ::testing::PrintToString(saved_dots) << " vs " << ::testing::PrintToString(saved_nothing);
  const auto want = grad(body, argnums{0, 1})(w, xs);
  for (const auto& got : {grad(dots, argnums{0, 1})(w, xs), grad(nothing, argnums{0, 1})(w, xs)}) {
    EXPECT_TRUE(jnp::allclose(std::get<0>(got), std::get<0>(want), 1e-6, 1e-6));
    EXPECT_TRUE(jnp::allclose(std::get<1>(got), std::get<1>(want), 1e-6, 1e-6));
  }
}

// How many of the saved residuals' lines are exactly `want`.
int64_t CountLines(const std::vector<std::string>& lines, const std::string& want) {
  return std::count(lines.begin(), lines.end(), want);
}

// The step of the tests below: h = sin(W @ c + x), the matmul output what dots_saveable keeps.
Array Layer(const Array& w, const Array& c, const Array& x) { return jnp::sin(jnp::dot(w, c) + x); }

// Checks that dots_saveable saves `extra` more "<shape> computed in the forward pass" residuals
// than nothing_saveable for `body`, and that both give the un-checkpointed gradients.
template <typename Body>
void ExpectDotsSavedInside(Body body, const Array& w, const Array& xs, const std::string& line, int64_t extra) {
  auto dots = [&](const Array& a, const Array& b) { return checkpoint(body, policies::dots_saveable)(a, b); };
  auto nothing = [&](const Array& a, const Array& b) { return checkpoint(body, policies::nothing_saveable)(a, b); };
  const std::vector<std::string> saved_dots = ad_checkpoint::saved_residuals(dots, w, xs);
  const std::vector<std::string> saved_nothing = ad_checkpoint::saved_residuals(nothing, w, xs);
  EXPECT_EQ(CountLines(saved_dots, line), CountLines(saved_nothing, line) + extra)
      << ::testing::PrintToString(saved_dots) << " vs " << ::testing::PrintToString(saved_nothing);
  const auto want = grad(body, argnums{0, 1})(w, xs);
  for (const auto& got : {grad(dots, argnums{0, 1})(w, xs), grad(nothing, argnums{0, 1})(w, xs)}) {
    EXPECT_TRUE(jnp::allclose(std::get<0>(got), std::get<0>(want), 1e-6, 1e-6));
    EXPECT_TRUE(jnp::allclose(std::get<1>(got), std::get<1>(want), 1e-6, 1e-6));
  }
}

// Through a cond (JAX's _cond_partial_eval_custom splits every branch under the policy and
// joins their residuals): the taken branch's matmul output is saved under dots_saveable.
TEST(CheckpointPolicyTest, PoliciesReachIntoCondBranches) {
  const Array w = jnp::sin(jnp::arange(16).astype(float32).reshape({4, 4}));
  const Array x = jnp::cos(jnp::arange(4).astype(float32));
  auto body = [](const Array& w, const Array& x) {
    return jnp::sum(lax::cond(
        jnp::sum(x) > 0, [&](const Array& v) { return Layer(w, v, v); }, [&](const Array& v) { return Layer(w, v, -v); },
        x));
  };
  ExpectDotsSavedInside(body, w, x, "f32[4] computed in the forward pass", 1);
}

// Through a jit body (JAX's pjit partial_eval_jaxpr_custom rule splits the inner jaxpr).
TEST(CheckpointPolicyTest, PoliciesReachIntoJitBodies) {
  const Array w = jnp::sin(jnp::arange(16).astype(float32).reshape({4, 4}));
  const Array x = jnp::cos(jnp::arange(4).astype(float32));
  auto body = [](const Array& w, const Array& x) {
    return jnp::sum(jit([](const Array& a, const Array& v) { return Layer(a, v, v); })(w, x));
  };
  ExpectDotsSavedInside(body, w, x, "f32[4] computed in the forward pass", 1);
}

// Two deep: a cond inside a scan body; each step's matmul output is saved, stacked over the
// three steps.
TEST(CheckpointPolicyTest, PoliciesReachTwoDeep) {
  const Array w = jnp::sin(jnp::arange(16).astype(float32).reshape({4, 4}));
  const Array xs = jnp::cos(jnp::arange(12).astype(float32).reshape({3, 4}));
  auto body = [](const Array& w, const Array& xs) {
    auto step = [&](const Array& c, const Array& x) {
      Array h = lax::cond(
          jnp::sum(x) > 0, [&](const Array& v) { return Layer(w, v, x); }, [&](const Array& v) { return Layer(w, v, -x); },
          c);
      return std::pair{h, h};
    };
    return jnp::sum(lax::scan(step, jnp::zeros({4}), xs).second);
  };
  ExpectDotsSavedInside(body, w, xs, "f32[3,4] computed in the forward pass", 1);
}

TEST(CheckpointPolicyTest, HigherOrderAndVmap) {
  auto f = checkpoint([](const Array& x) { return jnp::sin(checkpoint_name(jnp::sin(x), "s")) * x; },
                      policies::save_only_these_names("s"));
  Array x = jnp::linspace(-1.0, 1.0, 5, true, float64);
  check_grads([&](const Array& v) { return f(v); }, std::tuple{x}, 2);
  Array g = vmap(grad([&](const Array& v) { return f(v); }))(x);
  Array want = vmap(grad([](const Array& v) { return jnp::sin(jnp::sin(v)) * v; }))(x);
  EXPECT_TRUE(jnp::allclose(g, want, 1e-12, 1e-12));
}

}  // namespace
}  // namespace jx::checkpoint_policies_test

// grad of a scan (issue 16 item 1): the forward body runs once per step (one forward scan
// saving residuals, one backward scan), and residuals that are loop-invariant consts or the
// xs themselves are passed as they are, never re-stacked per step by a scan of their own.
// "Runs" counts equations as executed: an equation inside a scan counts once per step.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>

#include "jx/jx.h"

namespace jx {
namespace {

namespace jnp = jx::numpy;

int64_t Count(const std::string& text, const std::string& what) {
  int64_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// How many times each primitive's equations run when `jaxpr` runs `times` times: a scan body
// runs `length` times per run of its scan, other sub-jaxprs (pjit, cond branches, custom
// rules) once.
void CountRuns(const Jaxpr& jaxpr, int64_t times, std::map<std::string, int64_t>& runs) {
  for (const Eqn& eqn : jaxpr.eqns) {
    const std::string name(eqn.primitive.name());
    runs[name] += times;
    const int64_t body_times = name == "scan" ? times * eqn.params.GetInt("length") : times;
    auto visit = [&](const Param& p) {
      if (const auto* obj = std::get_if<std::shared_ptr<const ParamObject>>(&p.value)) {
        if (const auto* sub = dynamic_cast<const JaxprParam*>(obj->get())) CountRuns(*sub->closed().jaxpr, body_times, runs);
      }
    };
    for (const auto& [key, value] : eqn.params) {
      visit(value);
      if (const auto* list = std::get_if<ParamList>(&value.value)) {
        for (const Param& p : *list) visit(p);
      }
    }
  }
}

std::map<std::string, int64_t> Runs(const ClosedJaxpr& closed) {
  std::map<std::string, int64_t> runs;
  CountRuns(*closed.jaxpr, 1, runs);
  return runs;
}

Array RnnLoss(const Array& w, const Array& h0, const Array& xs) {
  auto [h, hs] = lax::scan(
      [w](const Array& h, const Array& x) {
        Array h2 = jnp::tanh(jnp::matmul(h, w) + x);
        return std::pair{h2, h2};
      },
      h0, xs);
  return jnp::sum(hs);
}

TEST(ScanGradTest, RnnGradRunsOneForwardAndOneBackwardScan) {
  const Array w = jx::random::normal(jx::random::key(0), {8, 8}) * 0.3f;
  const Array h0 = jnp::zeros({8});
  const Array xs = jx::random::normal(jx::random::key(1), {20, 8});
  const std::string text = make_jaxpr(jx::grad(RnnLoss, jx::argnums{0, 1}))(w, h0, xs).ToString();
  EXPECT_EQ(Count(text, "= scan["), 2) << text;
  // The weight is a const of the backward scan, not a [20, 8, 8] stack of copies.
  EXPECT_EQ(Count(text, "f32[20,8,8]"), 0) << text;
  // And the gradients are right.
  jx::check_grads([&](const Array& w_, const Array& h_) { return RnnLoss(w_, h_, xs); }, std::tuple{w, h0}, 1);
}

// Executed, the forward body's tanh runs once per step (the backward scan reads its saved
// 1 - tanh^2, it does not run the forward again); the matmuls: one forward and two backward
// (the hidden state's cotangent and the weight's) per step.
TEST(ScanGradTest, RnnGradRunsTheForwardBodyOncePerStep) {
  const Array w = jx::random::normal(jx::random::key(0), {8, 8}) * 0.3f;
  const Array h0 = jnp::zeros({8});
  const Array xs = jx::random::normal(jx::random::key(1), {20, 8});
  std::map<std::string, int64_t> runs = Runs(make_jaxpr(jx::grad(RnnLoss, jx::argnums{0, 1}))(w, h0, xs));
  EXPECT_EQ(runs["tanh"], 20);
  EXPECT_EQ(runs["dot_general"], 60);
  runs = Runs(make_jaxpr(RnnLoss)(w, h0, xs));
  EXPECT_EQ(runs["tanh"], 20);
  EXPECT_EQ(runs["dot_general"], 20);
}

// fori_loop with static bounds (a scan over the trip index): the same, and the same gradients
// as the loop unrolled by hand.
TEST(ScanGradTest, ForiLoopGradRunsTheForwardBodyOncePerStep) {
  const Array w = jx::random::normal(jx::random::key(3), {6, 6}) * 0.4f;
  const Array v0 = jx::random::normal(jx::random::key(4), {6});
  auto loop = [](const Array& w, const Array& v0) {
    return jnp::sum(lax::fori_loop(0, 7, [w](const Array&, const Array& v) { return jnp::tanh(jnp::matmul(v, w)); }, v0));
  };
  auto unrolled = [](const Array& w, const Array& v0) {
    Array v = v0;
    for (int i = 0; i < 7; ++i) v = jnp::tanh(jnp::matmul(v, w));
    return jnp::sum(v);
  };
  std::map<std::string, int64_t> runs = Runs(make_jaxpr(jx::grad(loop, jx::argnums{0, 1}))(w, v0));
  EXPECT_EQ(runs["scan"], 2);
  EXPECT_EQ(runs["tanh"], 7);
  EXPECT_EQ(runs["dot_general"], 21);
  const auto [gw, gv] = jx::grad(loop, jx::argnums{0, 1})(w, v0);
  const auto [uw, uv] = jx::grad(unrolled, jx::argnums{0, 1})(w, v0);
  EXPECT_TRUE(jnp::allclose(gw, uw, 1e-6, 1e-6));
  EXPECT_TRUE(jnp::allclose(gv, uv, 1e-6, 1e-6));
  jx::check_grads(loop, std::tuple{w, v0}, 1);
}

}  // namespace
}  // namespace jx

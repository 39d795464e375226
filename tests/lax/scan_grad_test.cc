// grad of a scan (issue 16 item 1): the forward body runs once per step (one forward scan
// saving residuals, one backward scan), and residuals that are loop-invariant consts or the
// xs themselves are passed as they are, never re-stacked per step by a scan of their own.
// "Runs" counts equations as executed: an equation inside a scan counts once per step. Under
// jit on the CPU, the weight cotangent the backward loop accumulated as one outer product per
// step (dW += h_t^T g_t) is one dot over the steps after the loop (WhileLoopOuterProductToDot
// in the CPU pipeline), the stacks the loops fill start with no zero fill, and the gradients
// equal eager's.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "jx/jx.h"

namespace jx::scan_grad_test {
namespace {

namespace jnp = jx::numpy;

int64_t Count(const std::string& text, const std::string& what) {
  int64_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

void ExpectAllClose(const Array& got, const Array& want, double tol) {
  ASSERT_EQ(got.shape(), want.shape());
  ASSERT_EQ(got.dtype(), want.dtype());
  const std::vector<double> g = got.astype(float64).to_vector<double>();
  const std::vector<double> w = want.astype(float64).to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], w[i], tol * (1 + std::fabs(w[i]))) << "element " << i;
}

// The computation of the optimized module named `name` (up to its closing brace).
std::string Computation(const std::string& module, const std::string& name) {
  const size_t at = module.find("%" + name + " ");
  if (at == std::string::npos) return "";
  return module.substr(at, module.find("\n}", at) - at);
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

// v <- tanh(v W) seven times with fori_loop's static bounds; the loss reads only the end.
Array ForiLoss(const Array& w, const Array& v0) {
  return jnp::sum(lax::fori_loop(0, 7, [w](const Array&, const Array& v) { return jnp::tanh(jnp::matmul(v, w)); }, v0));
}

// fori_loop with static bounds (a scan over the trip index): the same, and the same gradients
// as the loop unrolled by hand.
TEST(ScanGradTest, ForiLoopGradRunsTheForwardBodyOncePerStep) {
  const Array w = jx::random::normal(jx::random::key(3), {6, 6}) * 0.4f;
  const Array v0 = jx::random::normal(jx::random::key(4), {6});
  auto loop = ForiLoss;
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

// Two carries, one of which is also the ys (its h_{t-1} residual comes from the shifted ys),
// the other accumulating; a const-only residual (exp(w)); forward, reverse and zero steps:
// the gradients, eager and under jit, equal the loop unrolled by hand.
TEST(ScanGradTest, ResidualFormsKeepTheGradientsOfTheUnrolledLoop) {
  using Carry = std::pair<Array, Array>;
  for (const int64_t steps : {int64_t{0}, int64_t{1}, int64_t{6}}) {
    for (const bool reverse : {false, true}) {
      SCOPED_TRACE(::testing::Message() << steps << " steps" << (reverse ? ", reverse" : ""));
      auto loss = [reverse](const Array& w, const Array& h0, const Array& xs) {
        auto [carry, hs] = lax::scan(
            [w](const Carry& c, const Array& x) {
              Array h = jnp::sin(c.first * jnp::exp(w) + x);
              return std::pair{Carry{h, c.second + h * c.first}, h};
            },
            Carry{h0, jnp::zeros({3})}, xs, {.reverse = reverse});
        return jnp::sum(hs) + jnp::sum(carry.second);
      };
      auto unrolled = [reverse, steps](const Array& w, const Array& h0, const Array& xs) {
        Array h = h0, acc = jnp::zeros({3}), total = jnp::zeros({});
        for (int64_t t = 0; t < steps; ++t) {
          Array h2 = jnp::sin(h * jnp::exp(w) + xs[reverse ? steps - 1 - t : t]);
          acc = acc + h2 * h;
          h = h2;
          total = total + jnp::sum(h2);
        }
        return total + jnp::sum(acc);
      };
      const Array w = jx::random::normal(jx::random::key(5), {3}) * 0.3f;
      const Array h0 = jx::random::normal(jx::random::key(6), {3});
      const Array xs = jx::random::normal(jx::random::key(7), {steps, 3});
      const auto [gw, gh] = jx::grad(loss, jx::argnums{0, 1})(w, h0, xs);
      const auto [uw, uh] = jx::grad(unrolled, jx::argnums{0, 1})(w, h0, xs);
      ExpectAllClose(gw, uw, 1e-5);
      ExpectAllClose(gh, uh, 1e-5);
      // And compiled (the stacks the loops fill start as buffers).
      const auto [jw, jh] = jit(jx::grad(loss, jx::argnums{0, 1}))(w, h0, xs);
      ExpectAllClose(jw, uw, 1e-5);
      ExpectAllClose(jh, uh, 1e-5);
    }
  }
}

TEST(ScanGradJitTest, RnnWeightCotangentIsOneDotAfterTheBackwardLoop) {
  const Array w = jx::random::normal(jx::random::key(0), {16, 16}) * 0.3f;
  const Array h0 = jx::random::normal(jx::random::key(2), {16});
  const Array xs = jx::random::normal(jx::random::key(1), {40, 16});
  auto grad_fn = jx::grad(RnnLoss, jx::argnums{0, 1});
  auto jitted = jit(grad_fn);
  const std::string hlo = jitted.lower(w, h0, xs).compile().as_text();
  // The backward loop's body (the second loop) holds no [16,16] update; the entry contracts
  // the 40 steps' rows of h (the forward's residual stack) and of the backward's per-step
  // cotangent into the weight's cotangent.
  const std::string backward = Computation(hlo, "scan_body.1");
  ASSERT_FALSE(backward.empty()) << hlo;
  EXPECT_EQ(backward.find("f32[16,16]{1,0} add("), std::string::npos) << backward;
  EXPECT_EQ(backward.find("f32[16,16]{1,0} fusion("), std::string::npos) << backward;
  EXPECT_NE(hlo.find("f32[16,16]{1,0} dot(f32[40,16]{1,0}"), std::string::npos) << hlo;
  // Its state is (trip, W, stacked per-step cotangents, h cotangent, residual 1 - h^2): the
  // ones cotangent of the summed outputs is a splat in the body (WhileLoopConstantSinking),
  // and neither it nor the residual stack of h the dot reads after the loop is carried
  // (WhileLoopSimplifier).
  EXPECT_EQ(backward.rfind("%scan_body.1 (state.", 0), 0u) << backward;
  EXPECT_NE(backward.find("-> (s32[], f32[16,16], f32[40,16], f32[16], f32[40,16]) {"), std::string::npos)
      << backward;
  // The stacks the loops fill row by row (the forward's hs and 1 - h^2, the backward's
  // per-step cotangents) start as buffers: no zero fill of a [40, 16] stack before either loop
  // (WhileLoopUnreadInitElimination).
  const std::string entry = Computation(hlo, "main");
  ASSERT_FALSE(entry.empty()) << hlo;
  EXPECT_EQ(Count(entry, "f32[40,16]{1,0} broadcast("), 0) << entry;
  EXPECT_EQ(Count(entry, "custom_call_target=\"AllocateBuffer\""), 3) << entry;
  const auto [gw, gh] = jitted(w, h0, xs);
  const auto [ew, eh] = grad_fn(w, h0, xs);
  // The steps' outer products are summed in the GEMM's order instead of one after another.
  ExpectAllClose(gw, ew, 1e-5);
  ExpectAllClose(gh, eh, 1e-5);
  // And both are the float64 gradient, to float32's rounding.
  const auto [dw, dh] = grad_fn(w.astype(float64), h0.astype(float64), xs.astype(float64));
  ExpectAllClose(gw, dw.astype(float32), 1e-4);
  ExpectAllClose(gh, dh.astype(float32), 1e-4);
}

TEST(ScanGradJitTest, ForiLoopWeightCotangentIsOneDotAfterTheBackwardLoop) {
  const Array w = jx::random::normal(jx::random::key(3), {12, 12}) * 0.4f;
  const Array v0 = jx::random::normal(jx::random::key(4), {12});
  auto grad_fn = jx::grad(ForiLoss, jx::argnums{0, 1});
  auto jitted = jit(grad_fn);
  EXPECT_NE(jitted.lower(w, v0).compile().as_text().find("f32[12,12]{1,0} dot(f32[7,12]{1,0}"), std::string::npos);
  const auto [gw, gv] = jitted(w, v0);
  const auto [ew, ev] = grad_fn(w, v0);
  ExpectAllClose(gw, ew, 1e-5);
  ExpectAllClose(gv, ev, 1e-5);
}


// The scan equations of a jaxpr, in order.
std::vector<const Eqn*> Scans(const ClosedJaxpr& closed) {
  std::vector<const Eqn*> scans;
  for (const Eqn& e : closed.jaxpr->eqns) {
    if (e.primitive.name() == "scan") scans.push_back(&e);
  }
  return scans;
}

// JAX's hoisting of loop-invariant residuals: sin(w) and its derivative cos(w) depend on the
// weight alone, so they are computed once before the forward loop and reach both loops as
// consts, never as [steps, 8, 8] stacks the forward loop writes per step.
TEST(ScanGradTest, LoopInvariantResidualsAreComputedOnceBeforeTheLoop) {
  auto loss = [](const Array& w, const Array& h0, const Array& xs) {
    auto [h, hs] = lax::scan(
        [w](const Array& h, const Array& x) {
          Array h2 = jnp::tanh(jnp::matmul(h, jnp::sin(w)) + x);
          return std::pair{h2, h2};
        },
        h0, xs);
    return jnp::sum(hs);
  };
  const Array w = jx::random::normal(jx::random::key(0), {8, 8}) * 0.3f;
  const Array h0 = jx::random::normal(jx::random::key(2), {8});
  const Array xs = jx::random::normal(jx::random::key(1), {20, 8});
  const ClosedJaxpr grad_jaxpr = make_jaxpr(jx::grad(loss, jx::argnums{0, 1}))(w, h0, xs);
  const std::string text = grad_jaxpr.ToString();
  EXPECT_EQ(Count(text, "f32[20,8,8]"), 0) << text;
  std::map<std::string, int64_t> runs = Runs(grad_jaxpr);
  EXPECT_EQ(runs["sin"], 1) << text;
  EXPECT_EQ(runs["cos"], 1) << text;
  EXPECT_EQ(runs["scan"], 2) << text;
  EXPECT_EQ(runs["tanh"], 20) << text;
  // Both are equations of the outer jaxpr, ahead of the forward scan.
  ASSERT_GE(grad_jaxpr.jaxpr->eqns.size(), 3u);
  EXPECT_EQ(grad_jaxpr.jaxpr->eqns[0].primitive.name(), "sin") << text;
  EXPECT_EQ(grad_jaxpr.jaxpr->eqns[1].primitive.name(), "cos") << text;
  EXPECT_EQ(grad_jaxpr.jaxpr->eqns[2].primitive.name(), "scan") << text;
  jx::check_grads([&](const Array& w_, const Array& h_) { return loss(w_, h_, xs); }, std::tuple{w, h0}, 1);
}

// The carry entering each step (the RNN's h_{t-1}, reshaped to a row for the matmul) is a
// residual of the weight's cotangent. Its update is also the ys, so the backward loop reads
// the ys shifted by one step with h0 in front (JAX forwards residuals that are already
// outputs): the forward loop writes two stacks per step (hs and 1 - h^2), not a third.
TEST(ScanGradTest, CarryResidualIsTheShiftedYsNotASecondStack) {
  for (const bool reverse : {false, true}) {
    SCOPED_TRACE(reverse ? "reverse" : "forward");
    auto loss = [reverse](const Array& w, const Array& h0, const Array& xs) {
      auto [h, hs] = lax::scan(
          [w](const Array& h, const Array& x) {
            Array h2 = jnp::tanh(jnp::matmul(h, w) + x);
            return std::pair{h2, h2};
          },
          h0, xs, {.reverse = reverse});
      return jnp::sum(hs * hs);
    };
    const Array w = jx::random::normal(jx::random::key(0), {8, 8}) * 0.3f;
    const Array h0 = jx::random::normal(jx::random::key(2), {8});
    const Array xs = jx::random::normal(jx::random::key(1), {20, 8});
    const ClosedJaxpr grad_jaxpr = make_jaxpr(jx::grad(loss, jx::argnums{0, 1}))(w, h0, xs);
    const std::string text = grad_jaxpr.ToString();
    const std::vector<const Eqn*> scans = Scans(grad_jaxpr);
    ASSERT_EQ(scans.size(), 2u) << text;
    // (final h, hs, 1 - h^2): no [20, 1, 8] stack of h_{t-1}.
    EXPECT_EQ(scans[0]->outputs.size(), 3u) << text;
    EXPECT_EQ(Count(text, "f32[20,1,8]"), 0) << text;
    // The ys moved one row on (one pad), h0 written into the row that opens.
    EXPECT_EQ(Count(text, "= pad["), 1) << text;
    EXPECT_EQ(Count(text, "= dynamic_update_slice"), 1) << text;
    jx::check_grads([&](const Array& w_, const Array& h_) { return loss(w_, h_, xs); }, std::tuple{w, h0}, 1);
    // Equal to the loop unrolled by hand.
    auto unrolled = [reverse](const Array& w, const Array& h0, const Array& xs) {
      Array h = h0, total = jnp::zeros({});
      for (int64_t t = 0; t < 20; ++t) {
        const int64_t i = reverse ? 19 - t : t;
        h = jnp::tanh(jnp::matmul(h, w) + xs[i]);
        total = total + jnp::sum(h * h);
      }
      return total;
    };
    const auto [gw, gh] = jx::grad(loss, jx::argnums{0, 1})(w, h0, xs);
    const auto [uw, uh] = jx::grad(unrolled, jx::argnums{0, 1})(w, h0, xs);
    ExpectAllClose(gw, uw, 1e-5);
    ExpectAllClose(gh, uh, 1e-5);
  }
}

// A residual that is an xs slice is the xs: neither loop stacks a copy of them.
TEST(ScanGradTest, XsResidualsAreTheXsThemselves) {
  auto loss = [](const Array& h0, const Array& xs) {
    auto [h, hs] = lax::scan(
        [](const Array& h, const Array& x) {
          Array h2 = jnp::sin(h * x);
          return std::pair{h2, h2};
        },
        h0, xs);
    return jnp::sum(hs);
  };
  const Array h0 = jx::random::normal(jx::random::key(2), {8});
  const Array xs = jx::random::normal(jx::random::key(1), {20, 8});
  const ClosedJaxpr grad_jaxpr = make_jaxpr(jx::grad(loss))(h0, xs);
  const std::string text = grad_jaxpr.ToString();
  const std::vector<const Eqn*> scans = Scans(grad_jaxpr);
  ASSERT_EQ(scans.size(), 2u) << text;
  // The forward loop: (final h, hs, cos(h x)); the xs reach the backward loop as they are.
  EXPECT_EQ(scans[0]->outputs.size(), 3u) << text;
  jx::check_grads([&](const Array& h_) { return loss(h_, xs); }, std::tuple{h0}, 1);
}

}  // namespace
}  // namespace jx::scan_grad_test

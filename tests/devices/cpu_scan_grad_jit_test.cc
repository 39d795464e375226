// grad of a scan and of a fori_loop with static bounds under jit on the CPU (issue 16 item 1):
// the weight cotangent the backward loop accumulated as one outer product per step
// (dW += h_t^T g_t) is one dot over the steps after the loop (WhileLoopOuterProductToDot in the
// CPU pipeline), and the gradients equal eager's.
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <jx/jx.h>

namespace jx {
namespace {

namespace jnp = jx::numpy;

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

Array RnnLoss(const Array& w, const Array& h0, const Array& xs) {
  auto [h, hs] = lax::scan(
      [w](const Array& h, const Array& x) {
        Array h2 = jnp::tanh(jnp::matmul(h, w) + x);
        return std::pair{h2, h2};
      },
      h0, xs);
  return jnp::sum(hs);
}

TEST(CpuScanGradJitTest, RnnWeightCotangentIsOneDotAfterTheBackwardLoop) {
  const Array w = jx::random::normal(jx::random::key(0), {16, 16}) * 0.3f;
  const Array h0 = jx::random::normal(jx::random::key(2), {16});
  const Array xs = jx::random::normal(jx::random::key(1), {40, 16});
  auto grad_fn = jx::grad(RnnLoss, jx::argnums{0, 1});
  auto jitted = jit(grad_fn);
  const std::string hlo = jitted.lower(w, h0, xs).compile().as_text();
  // The backward loop's body (the second loop) holds no [16,16] update; the entry contracts
  // the two stacks of 40 steps into the weight's cotangent.
  const std::string backward = Computation(hlo, "scan_body.1");
  ASSERT_FALSE(backward.empty()) << hlo;
  EXPECT_EQ(backward.find("f32[16,16]{1,0} add("), std::string::npos) << backward;
  EXPECT_EQ(backward.find("f32[16,16]{1,0} fusion("), std::string::npos) << backward;
  EXPECT_NE(hlo.find("f32[16,16]{1,0} dot(f32[40,16]{1,0}"), std::string::npos) << hlo;
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

// fori_loop with static bounds: v <- tanh(v W) six times; the loss reads only the end.
TEST(CpuScanGradJitTest, ForiLoopWeightCotangentIsOneDotAfterTheBackwardLoop) {
  const Array w = jx::random::normal(jx::random::key(3), {12, 12}) * 0.4f;
  const Array v0 = jx::random::normal(jx::random::key(4), {12});
  auto loss = [](const Array& w, const Array& v0) {
    return jnp::sum(lax::fori_loop(0, 6, [w](const Array&, const Array& v) { return jnp::tanh(jnp::matmul(v, w)); }, v0));
  };
  auto grad_fn = jx::grad(loss, jx::argnums{0, 1});
  auto jitted = jit(grad_fn);
  EXPECT_NE(jitted.lower(w, v0).compile().as_text().find("f32[12,12]{1,0} dot(f32[6,12]{1,0}"), std::string::npos);
  const auto [gw, gv] = jitted(w, v0);
  const auto [ew, ev] = grad_fn(w, v0);
  ExpectAllClose(gw, ew, 1e-5);
  ExpectAllClose(gv, ev, 1e-5);
}

}  // namespace
}  // namespace jx

// grad of a scan (issue 16 item 1): the forward body runs once per step (one forward scan
// saving residuals, one backward scan), and residuals that are loop-invariant consts or the
// xs themselves are passed as they are, never re-stacked per step by a scan of their own.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace jx

// jit of a gradient taken outside shard_map: the backward pass is a second shard_map whose
// body takes the forward pass's residuals, each split as the forward body holds it. With a
// weight split over one axis and the data over another (Megatron under data parallelism),
// the compiled gradient equals the eager one and the unsharded one.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <tuple>
#include <vector>

#include "jx/jx.h"

namespace jx::shard_map_grad_jit_test {
namespace {

namespace jnp = jx::numpy;

void ExpectClose(const Array& got, const Array& want, double tol) {
  ASSERT_EQ(got.shape(), want.shape());
  const std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], w[i], tol * (1 + std::abs(w[i]))) << "element " << i;
}

Array Ramp(Shape shape, double scale) {
  const int64_t n = NumElements(shape);
  return (jnp::sin(jnp::arange(n, float32) * scale) * 0.5f).reshape(shape);
}

TEST(ShardMapGradJitTest, JitOfGradOutsideShardMapWithSplitWeights) {
  tpu::Pod pod = tpu::make_pod("v5e", {4, 2});
  Mesh mesh = make_mesh({4, 2}, {"data", "model"}, pod.devices());
  auto sharded = shard_map(
      [](const Array& w1, const Array& w2, const Array& x) {
        const Array out = lax::psum(jnp::matmul(jnp::tanh(jnp::matmul(x, w1)), w2), "model");
        return lax::psum(jnp::sum(out * out), "data");
      },
      mesh, in_specs{P(none, "model"), P("model", none), P("data", none)}, out_specs{P()});
  auto ref = [](const Array& a, const Array& b, const Array& x) {
    const Array out = jnp::matmul(jnp::tanh(jnp::matmul(x, a)), b);
    return jnp::sum(out * out);
  };
  const Array w1 = Ramp({8, 6}, 0.3), w2 = Ramp({6, 5}, 0.7), x = Ramp({8, 8}, 0.2);
  default_matmul_precision highest("highest");
  auto g = [&](const Array& a, const Array& b, const Array& x_) {
    auto [g1, g2] = grad([&](const Array& a_, const Array& b_) { return sharded(a_, b_, x_); }, argnums{0, 1})(a, b);
    return std::tuple{g1, g2};
  };
  auto [r1, r2] = grad(ref, argnums{0, 1})(w1, w2, x);
  auto [e1, e2] = g(w1, w2, x);
  ExpectClose(e1, r1, 1e-4);
  ExpectClose(e2, r2, 1e-4);
  auto [j1, j2] = jit(g)(w1, w2, x);
  ExpectClose(j1, r1, 1e-4);
  ExpectClose(j2, r2, 1e-4);
}

// The same with a shard_map manual over "model" only (axis_names): "data" stays automatic,
// the body sees the whole batch on every chip of a "data" row.
TEST(ShardMapGradJitTest, PartialManualShardMapInsideAJitOfItsGrad) {
  tpu::Pod pod = tpu::make_pod("v5e", {4, 2});
  Mesh mesh = make_mesh({4, 2}, {"data", "model"}, pod.devices());
  auto sharded = shard_map(
      [](const Array& w1, const Array& w2, const Array& x) {
        const Array out = lax::psum(jnp::matmul(jnp::tanh(jnp::matmul(x, w1)), w2), "model");
        return jnp::sum(out * out);
      },
      mesh, in_specs{P(none, "model"), P("model", none), P()}, out_specs{P()}, {.axis_names = {"model"}});
  auto ref = [](const Array& a, const Array& b, const Array& x) {
    const Array out = jnp::matmul(jnp::tanh(jnp::matmul(x, a)), b);
    return jnp::sum(out * out);
  };
  const Array w1 = Ramp({8, 6}, 0.3), w2 = Ramp({6, 5}, 0.7), x = Ramp({8, 8}, 0.2);
  default_matmul_precision highest("highest");
  auto g = [&](const Array& a, const Array& b, const Array& x_) {
    return grad([&](const Array& a_) { return sharded(a_, b, x_); })(a);
  };
  ExpectClose(jit(g)(w1, w2, x), grad(ref)(w1, w2, x), 1e-4);
}

}  // namespace
}  // namespace jx::shard_map_grad_jit_test

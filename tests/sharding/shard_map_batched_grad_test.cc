// grad of vmap of shard_map with a body that mixes a varying operand and a device-dependent
// value (axis_index): the cotangent of each example is its own, never summed over the
// mesh axis (a bug the opinfo compositions column found, issue 12).
#include <gtest/gtest.h>

#include <vector>

#include "jx/jx.h"

namespace jx::shard_map_batched_grad_test {
namespace {

namespace jnp = jx::numpy;

class ShardMapBatchedGradTest : public ::testing::Test {
 protected:
  tpu::Pod pod_ = tpu::make_pod("v5e", {4, 2});
  Mesh mesh_ = make_mesh({4, 2}, {"i", "j"}, pod_.devices());
};

TEST_F(ShardMapBatchedGradTest, GradOfVmapOfAxisIndexBodyIsPerExample) {
  auto op = shard_map([](const Array& x) { return x + lax::axis_index("i").astype(x.dtype()); }, mesh_,
                      in_specs{P("i")}, out_specs{P("i")});
  Array xs = jnp::arange(16, float64).reshape({2, 8});  // 2 examples of f64[8]
  Array r = jnp::arange(16, float64).reshape({2, 8}) * 0.5;
  Array g = jx::grad([&](const Array& x) { return jnp::sum(jx::vmap(op)(x) * r); })(xs);
  EXPECT_EQ(g.to_vector<double>(), r.to_vector<double>());
  // The same without vmap, per example.
  Array g0 = jx::grad([&](const Array& x) { return jnp::sum(op(x) * r[0]); })(xs[0]);
  EXPECT_EQ(g0.to_vector<double>(), r[0].to_vector<double>());
}

}  // namespace
}  // namespace jx::shard_map_batched_grad_test

// jit(shard_map(f)): the body compiled once into one program for the mesh's 8 chips, run on
// all of them at once, equals the eager shard_map (which runs the body op by op per chip).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "jx/devices/tpu/pod_program.h"
#include "jx/jx.h"
#include "jx/sharding/shard_map.h"
#include "jx/sharding/shard_map_compiled.h"

namespace jx {
namespace {

namespace jnp = jx::numpy;

TEST(ShardMapCompiledTest, OneSpmdProgramEqualsEagerShardMap) {
  tpu::Pod pod = tpu::make_pod("v5e", {4, 2});
  Mesh mesh = make_mesh({4, 2}, {"x", "y"}, pod.devices());
  auto f = [](const Array& a, const Array& b) {
    const Array c = lax::psum(jnp::matmul(a, b), "y");
    return c + lax::axis_index("x").astype(float32);
  };
  auto sm = shard_map(f, mesh, in_specs{P("x", "y"), P("y", none)}, out_specs{P("x", none)});
  const Array keys = random::split(random::key(3), 2);
  const Array a = random::normal(keys[0], {16, 8}), b = random::normal(keys[1], {8, 4});
  const Array eager = sm(a, b);
  const ClosedJaxpr j = make_jaxpr(sm)(a, b);
  ASSERT_EQ(j.jaxpr->eqns.size(), 1u);
  const Eqn& eqn = j.jaxpr->eqns.front();
  ASSERT_EQ(eqn.primitive, kShardMap);
  const Arrays compiled = shard_map_internal::ShardMapCompiled({a, b}, eqn.params, j.jaxpr->out_avals());
  ASSERT_EQ(compiled.size(), 1u);
  EXPECT_TRUE(compiled[0].sharding()->Equals(*eager.sharding()));
  EXPECT_EQ(compiled[0].shape(), (Shape{16, 4}));
  // Compared on the host (eager ops on sharded arrays are spmd's).
  const Device* host = devices("cpu")[0];
  const Array got = device_put(compiled[0], host), want = device_put(eager, host);
  EXPECT_TRUE(jnp::allclose(got, want, 1e-5, 1e-5)) << got << "\n" << want;
  // The chips' MXU numbers: bf16-rounded inputs, f32 sums (the psum adds the two halves).
  const Array a16 = a.astype(bfloat16).astype(float32), b16 = b.astype(bfloat16).astype(float32);
  EXPECT_TRUE(jnp::allclose(got, jnp::matmul(a16, b16) + jnp::repeat(jnp::arange(4), 4).astype(float32)
                                                                 .reshape({16, 1}),
                            1e-4, 1e-4));
  // Compiled once: the second call fetches the same program.
  EXPECT_EQ(shard_map_internal::CompileShardMap(eqn.params), shard_map_internal::CompileShardMap(eqn.params));
  auto program = std::dynamic_pointer_cast<const tpu::PodProgram>(shard_map_internal::CompileShardMap(eqn.params));
  ASSERT_NE(program, nullptr);
  EXPECT_EQ(program->chips().size(), 8u);
  EXPECT_GT(program->cost_analysis().communication_seconds, 0);
}

}  // namespace
}  // namespace jx

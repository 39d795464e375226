// jit(shard_map(f)): the body compiled once into one program for the mesh's 8 chips, run on
// all of them at once, equals the eager shard_map (which runs the body op by op per chip).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "jx/devices/tpu/pod_program.h"
#include "jx/jx.h"
#include "jx/sharding/shard_map.h"
#include "jx/sharding/shard_map_compiled.h"

namespace jx::shard_map_compiled_test {
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

TEST(ShardMapCompiledTest, AShardMapInsideAPerDeviceProgramIsInlined) {
  tpu::Pod pod = tpu::make_pod("v5e", {4, 2});
  Mesh mesh = make_mesh({4, 2}, {"x", "y"}, pod.devices());
  // Replicated in and out: the body's per-device type is the program's.
  auto sm = shard_map([](const Array& v) { return lax::psum(v, "x") * 2.0f; }, mesh, in_specs{P()}, out_specs{P()});
  const ClosedJaxpr j = make_jaxpr([&](const Array& v) { return sm(v) + 1.0f; })(jnp::zeros({4}));
  auto lowered = pod.client().Lower(j, {.name = "per_device", .device_assignment = pod.devices()});
  EXPECT_THAT(lowered->as_text(), ::testing::HasSubstr("replica_groups={{0,2,4,6},{1,3,5,7}}"));
  auto program = std::dynamic_pointer_cast<const tpu::PodProgram>(lowered->Compile());
  ASSERT_NE(program, nullptr);
  const Array x = jnp::array(std::vector<float>{1, 2, 3, 4}, {4});
  const Arrays outs = program->Execute({x});  // every chip gets x
  ASSERT_EQ(outs.size(), 8u);
  const Array eager = device_put(sm(x), devices("cpu")[0]) + 1.0f;
  for (const Array& out : outs) {
    EXPECT_EQ(out.to_vector<float>(), (std::vector<float>{9, 17, 25, 33}));
    EXPECT_EQ(out.to_vector<float>(), eager.to_vector<float>());
  }
}

TEST(ShardMapCompiledTest, AShardMapOverGlobalValuesIsNotLoweredAsIs) {
  tpu::Pod pod = tpu::make_pod("v5e", {4, 2});
  Mesh mesh = make_mesh({4, 2}, {"x", "y"}, pod.devices());
  auto sm = shard_map([](const Array& v) { return v * 2.0f; }, mesh, in_specs{P("x")}, out_specs{P("x")});
  const ClosedJaxpr j = make_jaxpr(sm)(jnp::zeros({8}));
  try {
    pod.client().Lower(j, {.name = "global", .device_assignment = {pod.devices()[0]}});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_THAT(std::string(e.what()), ::testing::HasSubstr("lower the per-device program"));
  }
}

}  // namespace
}  // namespace jx::shard_map_compiled_test

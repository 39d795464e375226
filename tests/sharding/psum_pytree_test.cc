// psum of a pytree (several arrays in one call) inside jit(shard_map) on the 8 chips of a v5e
// 4x2 slice: the program all-reduces every leaf in one collective (one all-reduce of several
// operands, as XLA's AllReduceCombiner makes of JAX's per-leaf all-reduces), timed as one,
// and equals the eager shard_map.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "jx/devices/tpu/pod_program.h"
#include "jx/jx.h"
#include "jx/sharding/shard_map_compiled.h"
#include "jx/sharding/shard_map_internal.h"

namespace jx::psum_pytree_test {
namespace {

namespace jnp = jx::numpy;

int64_t Count(const std::string& text, const std::string& what) {
  int64_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(PsumPytreeTest, SeveralArraysAllReduceAsOneCollective) {
  tpu::Pod pod = tpu::make_pod("v5e", {4, 2});
  Mesh mesh = make_mesh({8}, {"data"}, pod.devices());
  auto body = [](const Array& a, const Array& b) {
    return lax::psum(std::vector<Array>{a * 2.0f, jnp::sin(b)}, "data");
  };
  auto sm = shard_map(body, mesh, in_specs{P("data"), P("data")}, out_specs{P()});
  const Array a = jnp::arange(64, float32).reshape({16, 4}), b = jnp::arange(8, float32) * 0.25f;
  const std::vector<Array> eager = sm(a, b);
  const ClosedJaxpr j = make_jaxpr(sm)(a, b);
  ASSERT_EQ(j.jaxpr->eqns.size(), 1u);
  const Eqn& eqn = j.jaxpr->eqns.front();
  auto program = std::dynamic_pointer_cast<const tpu::PodProgram>(shard_map_internal::CompileShardMap(eqn.params));
  ASSERT_NE(program, nullptr);
  const std::string hlo = program->as_text();
  EXPECT_EQ(Count(hlo, "all-reduce-start("), 1) << hlo;
  EXPECT_EQ(Count(hlo, "all-reduce("), 0) << hlo;
  EXPECT_THAT(hlo, ::testing::ContainsRegex("\\(f32\\[2,4\\]\\{[^}]*\\}, f32\\[1\\]\\{[^}]*\\}\\) all-reduce-start\\("))
      << hlo;

  const Arrays compiled = shard_map_internal::ShardMapCompiled({a, b}, eqn.params, j.jaxpr->out_avals());
  ASSERT_EQ(compiled.size(), 2u);
  const Device* host = devices("cpu")[0];
  for (size_t k = 0; k < 2; ++k) {
    EXPECT_TRUE(jnp::allclose(device_put(compiled[k], host), device_put(eager[k], host), 1e-6, 1e-6))
        << compiled[k] << "\nvs\n" << eager[k];
  }
  // By hand: the sum over the 8 blocks of 2a is 2 x (the rows summed 8 at a time).
  EXPECT_EQ(device_put(compiled[0], host).to_vector<float>()[0], 2.0f * (0 + 8 + 16 + 24 + 32 + 40 + 48 + 56));

  // One collective in the step, moving both leaves' bytes.
  const tpu::StepReport step = program->last_step();
  ASSERT_EQ(step.collectives.size(), 1u) << step.ToString();
  EXPECT_EQ(step.collectives[0].kind, "all-reduce");
  EXPECT_EQ(step.collectives[0].bytes, (2 * 4 + 1) * 4);
}

}  // namespace
}  // namespace jx::psum_pytree_test

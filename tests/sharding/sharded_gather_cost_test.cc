// device_put of a sharded array back to one chip of its slice moves each shard over the ICI
// to that chip, timed as an all-gather over the chips involved (what the target's links take
// in per second), and the chips' clocks move past it. To the host nothing is modeled.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "jx/devices/interconnect/collective_cost.h"
#include "jx/devices/tpu/tpu_chip.h"
#include "jx/devices/tpu/tpu_client.h"
#include "jx/jx.h"

namespace jx::sharded_gather_cost_test {
namespace {

namespace jnp = jx::numpy;

double Now(const Device* d) { return dynamic_cast<const tpu::TpuChip&>(*d).activity().now_seconds; }

TEST(ShardedGatherCostTest, GatherToAChipIsCostedOnTheTorus) {
  tpu::Pod pod = tpu::make_pod("v5e", {2, 2});
  Mesh mesh = make_mesh({4}, {"x"}, pod.devices());
  const Array x = device_put(jnp::arange(32, float32).reshape({8, 4}), NamedSharding(mesh, P("x", none)));
  const Device* target = mesh.devices()[0];
  const auto& client = dynamic_cast<const tpu::TpuClient&>(target->client());
  auto vertex = [&](const Device* d) {
    const auto& chips = client.chips();
    return std::find_if(chips.begin(), chips.end(), [d](const auto& c) { return c.get() == d; }) - chips.begin();
  };
  // Chips 1..3 each send their [2, 4] f32 shard (32 bytes) to chip 0: an all-gather of the
  // 128-byte array over the 4 chips (the 2x2 torus, latency-bound at this size).
  std::vector<std::vector<int64_t>> group(1);
  for (const Device* d : mesh.devices()) group[0].push_back(vertex(d));
  std::sort(group[0].begin(), group[0].end());
  const double want = ici::CostCollective(client.torus(), ici::CollectiveKind::kAllGather, group, 128).seconds;
  ASSERT_GT(want, 0);
  double start = 0;
  for (const Device* d : mesh.devices()) start = std::max(start, Now(d));
  const Array whole = device_put(x, target);
  EXPECT_EQ(whole.to_vector<float>(), jnp::arange(32, float32).to_vector<float>());
  for (const Device* d : mesh.devices()) EXPECT_DOUBLE_EQ(Now(d), start + want) << d->ToString();
  // To the host: no chip moves.
  const Array on_host = device_put(x, DefaultDevice());
  for (const Device* d : mesh.devices()) EXPECT_DOUBLE_EQ(Now(d), start + want) << d->ToString();
  EXPECT_EQ(on_host.to_vector<float>(), whole.to_vector<float>());
}

}  // namespace
}  // namespace jx::sharded_gather_cost_test

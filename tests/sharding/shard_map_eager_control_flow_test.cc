// Eager shard_map (the lockstep path, op by op per chip) with collectives inside scan, while,
// cond and jit bodies: equal to the compiled program; and eager collectives advance the
// chips' clocks by the interconnect model's time, group by group.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "jx/devices/interconnect/collective_cost.h"
#include "jx/devices/tpu/tpu_chip.h"
#include "jx/devices/tpu/tpu_client.h"
#include "jx/jx.h"

namespace jx::shard_map_eager_control_flow_test {
namespace {

namespace jnp = jx::numpy;
using ::testing::HasSubstr;

Array Host(const Array& x) { return device_put(x, DefaultDevice()); }

double Now(const Device* d) { return dynamic_cast<const tpu::TpuChip&>(*d).activity().now_seconds; }

class ShardMapEagerControlFlowTest : public ::testing::Test {
 protected:
  tpu::Pod pod_ = tpu::make_pod("v5e", {4, 2});
  Mesh mesh_ = make_mesh({4, 2}, {"x", "y"}, pod_.devices());
  Array x_ = jnp::sin(jnp::arange(64, float32) * 0.3f).reshape({8, 8});

  template <typename F>
  void ExpectEagerEqualsJit(F f, const PartitionSpec& in, const PartitionSpec& out) {
    auto sm = shard_map(f, mesh_, in_specs{in}, out_specs{out});
    const Array eager = sm(x_);
    const Array compiled = jit(sm)(x_);
    EXPECT_TRUE(jnp::allclose(Host(eager), Host(compiled), 1e-5, 1e-5)) << Host(eager) << "\nvs\n" << Host(compiled);
  }
};

TEST_F(ShardMapEagerControlFlowTest, ScanWithAPsumInItsBody) {
  auto f = [](const Array& v) {
    auto step = [](const Array& c, const Array& row) {
      Array next = c + lax::psum(jnp::tanh(row), "x");
      return std::pair<Array, Array>{next, lax::pmax(next, "y")};
    };
    auto [c, ys] = lax::scan(step, jnp::zeros({v.shape()[1]}), v);
    return ys + c;
  };
  ExpectEagerEqualsJit(f, P("x", "y"), P("x", "y"));
}

TEST_F(ShardMapEagerControlFlowTest, ForiLoopWithAPpermute) {
  auto f = [](const Array& v) {
    return lax::fori_loop(0, 3, [](const Array&, const Array& c) {
      return lax::ppermute(c, "x", {{0, 1}, {1, 2}, {2, 3}, {3, 0}}) * 0.5f + c;
    }, v);
  };
  ExpectEagerEqualsJit(f, P("x", "y"), P("x", "y"));
}

TEST_F(ShardMapEagerControlFlowTest, WhileWithAReplicatedPredicate) {
  auto f = [](const Array& v) {
    using C = std::pair<Array, Array>;
    return lax::while_loop([](const C& c) { return lax::psum(jnp::sum(c.second), {"x", "y"}) < 100.0f; },
                           [](const C& c) { return C{c.first + 1, c.second * 2.0f + 1.0f}; }, C{Array(0), v})
        .second;
  };
  ExpectEagerEqualsJit(f, P("x", "y"), P("x", "y"));
}

TEST_F(ShardMapEagerControlFlowTest, CondWithCollectivesInBothBranches) {
  auto f = [](const Array& v) {
    const Array total = lax::psum(jnp::sum(v), {"x", "y"});
    return lax::cond(total > 0.0f, [](const Array& a) { return lax::psum(a, "x"); },
                     [](const Array& a) { return lax::pmax(a, "x"); }, v);
  };
  ExpectEagerEqualsJit(f, P("x", "y"), P("x", "y"));
}

TEST_F(ShardMapEagerControlFlowTest, ABranchIndexThatDiffersAcrossDevicesIsAnError) {
  auto f = [](const Array& v) {
    return lax::cond(lax::axis_index("x") > 1, [](const Array& a) { return lax::psum(a, "x"); },
                     [](const Array& a) { return a; }, v);
  };
  auto sm = shard_map(f, mesh_, in_specs{P("x", "y")}, out_specs{P("x", "y")}, {.check_vma = false});
  try {
    sm(x_);
    FAIL() << "expected a ValueError";
  } catch (const ValueError& e) {
    EXPECT_THAT(e.what(), HasSubstr("branch index differs across devices"));
  }
}

TEST_F(ShardMapEagerControlFlowTest, EagerCollectivesAdvanceTheChipClocks) {
  // A psum of a [2, 4] f32 block over "x" (4 chips per group): every chip's clock moves past
  // its group's latest chip by the torus model's all-reduce time; the host step adds nothing.
  auto sm = shard_map([](const Array& v) { return lax::psum(v, "x"); }, mesh_, in_specs{P("x", "y")},
                      out_specs{P(none, "y")});
  const Array placed = device_put(x_, NamedSharding(mesh_, P("x", "y")));
  std::vector<double> before;
  for (const Device* d : pod_.devices()) before.push_back(Now(d));
  const Array out = sm(placed);
  ASSERT_EQ(out.shape(), (Shape{2, 8}));
  const auto& client = dynamic_cast<const tpu::TpuClient&>(pod_.devices()[0]->client());
  std::vector<std::vector<int64_t>> groups = mesh_.AxisGroups({"x"});
  for (auto& g : groups) {
    for (int64_t& i : g) {
      const auto& chips = client.chips();
      const Device* d = mesh_.devices()[static_cast<size_t>(i)];
      i = std::find_if(chips.begin(), chips.end(), [d](const auto& c) { return c.get() == d; }) - chips.begin();
    }
  }
  const double psum_s = ici::CostCollective(client.torus(), ici::CollectiveKind::kAllReduce, groups, 2 * 4 * 4).seconds;
  ASSERT_GT(psum_s, 0);
  double latest = 0;
  for (size_t d = 0; d < before.size(); ++d) latest = std::max(latest, before[d]);
  for (size_t d = 0; d < before.size(); ++d) {
    // At least the collective's time after this chip's own start, and at most after the
    // latest start plus the slowest chip's block ops (a few microseconds).
    EXPECT_GE(Now(pod_.devices()[d]) - before[d], psum_s) << "chip " << d;
    EXPECT_LT(Now(pod_.devices()[d]) - latest, psum_s + 1e-3) << "chip " << d;
  }
}

}  // namespace
}  // namespace jx::shard_map_eager_control_flow_test

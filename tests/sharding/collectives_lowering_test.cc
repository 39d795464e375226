// The collective primitives lowered to HLO collectives: a per-device function traced in a
// shard_map body's axis environment (mesh x:4, y:2 on a v5e 4x2 pod), lowered once for the 8
// chips and run there, gives on every chip what shard_map's eager evaluation of each
// collective gives on the same per-device values.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "jx/compiler/hlo/hlo_attributes.h"
#include "jx/devices/tpu/pod_program.h"
#include "jx/jx.h"
#include "jx/sharding/collective_eval.h"
#include "jx/sharding/collectives.h"
#include "jx/sharding/manual_context.h"

namespace jx::collectives_lowering_test {
namespace {

using ::testing::HasSubstr;
namespace jnp = jx::numpy;

constexpr int kChips = 8;

std::vector<Array> PerDevice(const Array& x0) {
  const Array x[] = {x0};
  return {lax::psum(x[0], "y"),
          lax::pmax(x[0], AxisNames{"x", "y"}),
          lax::all_gather(x[0], "x", 0, /*tiled=*/true),
          lax::all_gather(x[0], "y", 1, /*tiled=*/false),
          lax::psum_scatter(x[0], "x", 0, /*tiled=*/true),
          lax::all_to_all(x[0], "x", 0, 1, /*tiled=*/true),
          lax::ppermute(x[0], "x", {{0, 1}, {1, 2}, {2, 3}, {3, 0}}),
          lax::axis_index(AxisNames{"y", "x"})};
}

TEST(CollectivesLoweringTest, LoweredCollectivesOnAPodEqualEagerShardMap) {
  tpu::Pod pod = tpu::make_pod("v5e", {4, 2});
  auto mesh = std::make_shared<CollectiveMesh>(std::vector<std::string>{"x", "y"}, std::vector<int64_t>{4, 2},
                                               std::vector<std::string>{"x", "y"});
  ClosedJaxpr jaxpr = [&] {
    shard_map_internal::ManualContextScope scope({mesh, /*check_vma=*/false});
    return make_jaxpr([](const Array& a) { return PerDevice(a); })(jnp::zeros({4, 8}));
  }();
  // Partition d's value: distinct per device.
  std::vector<Array> inputs;
  for (int d = 0; d < kChips; ++d) {
    inputs.push_back(jnp::arange(32).astype(float32).reshape({4, 8}) * (d + 1.0f) + 100.0f * d);
  }
  std::vector<Arrays> args;
  for (int d = 0; d < kChips; ++d) args.push_back({device_put(inputs[d], pod.devices()[d])});
  auto lowered = pod.client().Lower(jaxpr, {.name = "spmd", .device_assignment = pod.devices()});
  const std::string hlo = lowered->as_text();
  for (std::string_view op : {"all-reduce(", "all-gather(", "reduce-scatter(", "all-to-all(", "collective-permute(",
                              "partition-id()"}) {
    EXPECT_THAT(hlo, HasSubstr(op));
  }
  EXPECT_THAT(hlo, HasSubstr("replica_groups={{0,1},{2,3},{4,5},{6,7}}"));  // psum over y
  auto program = std::dynamic_pointer_cast<const tpu::PodProgram>(lowered->Compile());
  ASSERT_NE(program, nullptr);
  EXPECT_EQ(lowered->Compile(), program);  // compiled once, cached
  const std::vector<Arrays> outs = program->ExecuteShards(args);
  // Eager: each equation's collective over the devices' values.
  const Jaxpr& j = *jaxpr.jaxpr;
  size_t out_index = 0;
  for (const Eqn& eqn : j.eqns) {
    if (!lax::IsCollective(eqn.primitive)) continue;
    SCOPED_TRACE(std::string(eqn.primitive.name()));
    const std::vector<Array> want = shard_map_internal::EvalCollective(
        eqn.primitive, eqn.primitive == lax::kAxisIndex ? std::vector<Array>{} : inputs, eqn.params);
    for (int d = 0; d < kChips; ++d) {
      const Array& got = outs[d][out_index];
      EXPECT_EQ(got.shape(), want[d].shape()) << d;
      EXPECT_TRUE(jnp::array_equal(got, want[d])) << "device " << d << "\n" << got << "\n" << want[d];
    }
    ++out_index;
  }
  EXPECT_EQ(out_index, 8u);
}

// The lowering's replica groups (the iota form, no id listed) are the groups the eager
// collectives run over, for every choice and order of axes.
TEST(CollectivesLoweringTest, IotaGroupsAreTheMeshGroups) {
  const CollectiveMesh mesh({"x", "y", "z"}, {3, 4, 2}, {});
  const std::vector<std::vector<std::string>> choices = {{"x"},      {"y"},      {"z"},           {"x", "y"},     {"y", "x"},
                                                         {"z", "x"}, {"x", "z"}, {"y", "z", "x"}, {"x", "y", "z"}};
  for (const std::vector<std::string>& axes : choices) {
    const hlo::ReplicaGroups groups = mesh.IotaGroups(axes);
    SCOPED_TRACE(hlo::ReplicaGroupsToString(groups));
    ASSERT_NE(groups.iota(), nullptr);
    EXPECT_EQ(groups.ToLists(), mesh.Groups(axes));
  }
  EXPECT_THROW(mesh.IotaGroups({"x", "x"}), ValueError);
  EXPECT_THROW(mesh.IotaGroups({"w"}), ValueError);
}

}  // namespace
}  // namespace jx::collectives_lowering_test

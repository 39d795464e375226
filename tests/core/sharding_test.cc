// core's side of sharding: types that record a sharding or varying manual axes print as
// JAX's, and a sharded ConcreteArray assembles its global value from its shards (tested
// with a two-piece sharding over the host device, standing in for a mesh's devices).
#include <gtest/gtest.h>
#include <jx/jx.h>

#include "jx/core/device.h"
#include "jx/core/sharding.h"

namespace jx::sharding_test {
namespace {

TEST(ShardedTypeTest, PrintsMeshAxesAndVaryingAxesAsJax) {
  ShapedArray a{{8, 4}, float32};
  a.spec = {{"x"}, {}};
  EXPECT_EQ(a.str(), "f32[8@x,4]");
  EXPECT_EQ(a.long_str(), "float32[8@x,4]");
  a.spec = {{"x", "y"}, {}};
  EXPECT_EQ(a.str(), "f32[8@(x,y),4]");
  ShapedArray local{{2, 2}, float32};
  local.vma = {"i", "j"};
  EXPECT_EQ(local.str(), "f32[2,2]{V:(i,j)}");
  local.vma = {"x"};
  EXPECT_EQ(local.str(), "f32[2,2]{V:x}");
  EXPECT_EQ(ShapedArray({{2, 3}, bfloat16}).long_str(), "bfloat16[2,3]");
  EXPECT_NE(a, ShapedArray({{8, 4}, float32}));  // the sharding is part of the type
}

// Rows [0, 2) and [2, 4) of a 4x3 array, both held by the host device.
class TwoRowBlocks final : public Sharding {
 public:
  TwoRowBlocks() : devices_{devices()[0], devices()[0]} {}
  const std::vector<const Device*>& device_set() const override { return devices_; }
  std::vector<ShardIndex> devices_indices(const Shape& s) const override {
    return {{{0, s[0] / 2}, {0, s[1]}}, {{s[0] / 2, s[0]}, {0, s[1]}}};
  }
  Shape shard_shape(const Shape& s) const override { return {s[0] / 2, s[1]}; }
  bool is_fully_replicated() const override { return false; }
  std::vector<std::vector<std::string>> TypeSpec(int64_t) const override { return {{"x"}, {}}; }
  std::string ToString() const override { return "TwoRowBlocks"; }
  bool Equals(const Sharding& o) const override { return &o == this; }
  size_t Hash() const override { return 0; }

 private:
  std::vector<const Device*> devices_;
};

TEST(ShardedArrayTest, AssemblesTheGlobalValueFromItsShards) {
  auto sharding = std::make_shared<TwoRowBlocks>();
  const float top[] = {0, 1, 2, 3, 4, 5};
  const float bottom[] = {6, 7, 8, 9, 10, 11};
  std::vector<Shard> shards(2);
  const auto indices = sharding->devices_indices({4, 3});
  shards[0] = {devices()[0], indices[0], 0, Array::FromData(top, {2, 3}, float32)};
  shards[1] = {devices()[0], indices[1], 0, Array::FromData(bottom, {2, 3}, float32)};
  ShapedArray aval{{4, 3}, float32};
  aval.spec = sharding->TypeSpec(2);
  Array x(std::make_shared<ConcreteArray>(aval, sharding, shards));
  EXPECT_TRUE(x.committed());
  EXPECT_EQ(x.sharding().get(), sharding.get());
  EXPECT_EQ(x.addressable_shards().size(), 2u);
  EXPECT_EQ(x.devices().size(), 2u);
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}));
}

TEST(ShardedArrayTest, AnUnshardedArrayIsOneShardOnItsDevice) {
  Array x = Array::FromData(std::vector<float>{1, 2}.data(), {2}, float32);
  auto s = x.sharding();
  EXPECT_EQ(s->device_set(), std::vector<const Device*>{devices()[0]});
  EXPECT_TRUE(s->is_fully_replicated());
  EXPECT_EQ(s->ToString(), "SingleDeviceSharding(device=CpuDevice(id=0))");
  auto shards = x.addressable_shards();
  ASSERT_EQ(shards.size(), 1u);
  EXPECT_EQ(shards[0].index, (ShardIndex{{0, 2}}));
  EXPECT_EQ(shards[0].data.impl(), x.impl());
}

}  // namespace
}  // namespace jx::sharding_test

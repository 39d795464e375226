// Sharded arrays: device_put to a NamedSharding puts each device's piece in its chip's HBM,
// committed there; the shards hold the right data; device_put back to one device, to the
// host and to another sharding gives the original value; types and printing as JAX's.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "jx/jx.h"

namespace jx::sharded_array_test {
namespace {

namespace jnp = jx::numpy;
using ::testing::HasSubstr;

template <typename T>
std::string Str(const T& v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

// The [start, stop) block of a row-major (rows, cols) matrix.
std::vector<float> Block(const std::vector<float>& m, int64_t cols, const ShardIndex& index) {
  std::vector<float> out;
  for (int64_t r = index[0].first; r < index[0].second; ++r) {
    for (int64_t c = index[1].first; c < index[1].second; ++c) out.push_back(m[r * cols + c]);
  }
  return out;
}

class ShardedArrayTest : public ::testing::TestWithParam<int> {
 protected:
  tpu::Pod pod_ = tpu::make_pod("v5e", {4, 2});
  Mesh mesh_ = make_mesh({4, 2}, {"x", "y"}, pod_.devices());
};

struct Case {
  PartitionSpec spec;
  std::string type;  // jx::typeof
  int64_t copies;    // devices holding each element
};

const std::vector<Case>& Cases() {
  static const auto* cases = new std::vector<Case>{
      {P("x"), "float32[8@x,4]", 2},
      {P("x", "y"), "float32[8@x,4@y]", 1},
      {P({"x", "y"}, none), "float32[8@(x,y),4]", 1},
      {P(none, "y"), "float32[8,4@y]", 4},
      {P(), "float32[8,4]", 8},
  };
  return *cases;
}

TEST_P(ShardedArrayTest, PiecesLiveOnTheirChipsAndRoundTrip) {
  const Case& c = Cases()[GetParam()];
  NamedSharding s(mesh_, c.spec);
  Array x = jnp::arange(32, float32).reshape({8, 4});
  const std::vector<float> values = x.to_vector<float>();
  std::vector<int64_t> before;
  for (const Device* d : pod_.devices()) before.push_back(d->memory_stats().bytes_in_use);

  Array xs = device_put(x, s);
  EXPECT_EQ(Str(typeof(xs)), c.type);
  EXPECT_EQ(xs.shape(), (Shape{8, 4}));
  EXPECT_TRUE(xs.committed());
  EXPECT_EQ(xs.committed_device(), nullptr);
  EXPECT_EQ(xs.devices(), mesh_.devices());
  EXPECT_TRUE(xs.sharding()->Equals(s));
  EXPECT_EQ(xs.sharding()->ToString(), s.ToString());

  const Shape piece = s.shard_shape({8, 4});
  const int64_t piece_bytes = NumElements(piece) * 4;
  const std::vector<Shard> shards = xs.addressable_shards();
  ASSERT_EQ(shards.size(), 8u);
  std::map<ShardIndex, int64_t> copies;
  for (size_t k = 0; k < shards.size(); ++k) {
    const Shard& shard = shards[k];
    EXPECT_EQ(shard.device, mesh_.devices()[k]);
    EXPECT_EQ(shard.index, s.devices_indices({8, 4})[k]);
    EXPECT_EQ(shard.replica_id, copies[shard.index]++);
    EXPECT_EQ(shard.data.shape(), piece);
    EXPECT_TRUE(shard.data.committed());
    EXPECT_EQ(shard.data.committed_device(), shard.device);
    EXPECT_EQ(shard.data.aval().spec.size(), 0u);
    EXPECT_EQ(shard.data.to_vector<float>(), Block(values, 4, shard.index)) << "shard " << k;
    // Each chip's HBM holds its piece.
    EXPECT_EQ(shard.device->memory_stats().bytes_in_use - before[k], piece_bytes) << "chip " << k;
  }
  for (const auto& [index, n] : copies) EXPECT_EQ(n, c.copies);

  // To other shardings (from the pieces), back to the host and to one chip: the original value.
  for (const Case& other : Cases()) {
    Array re = device_put(device_put(x, s), NamedSharding(mesh_, other.spec));
    for (const Shard& shard : re.addressable_shards()) EXPECT_EQ(shard.data.to_vector<float>(), Block(values, 4, shard.index));
  }
  EXPECT_EQ(xs.to_vector<float>(), values);
  Array host = device_put(xs);
  EXPECT_FALSE(host.committed());
  EXPECT_EQ(Str(typeof(host)), "float32[8,4]");
  EXPECT_EQ(host.to_vector<float>(), values);
  const Device* chip = pod_.devices()[5];
  const int64_t chip_before = chip->memory_stats().bytes_in_use;
  Array one = device_put(xs, chip);
  EXPECT_EQ(one.devices(), std::vector<const Device*>{chip});
  EXPECT_TRUE(one.committed());
  EXPECT_EQ(one.aval().spec.size(), 0u);
  EXPECT_EQ(one.to_vector<float>(), values);
  EXPECT_EQ(chip->memory_stats().bytes_in_use - chip_before, 32 * 4);
  for (const Case& other : Cases()) {
    Array re = device_put(xs, NamedSharding(mesh_, other.spec));
    EXPECT_EQ(Str(typeof(re)), other.type);
    EXPECT_EQ(re.to_vector<float>(), values);
    for (const Shard& shard : re.addressable_shards()) EXPECT_EQ(shard.data.to_vector<float>(), Block(values, 4, shard.index));
  }
  // Putting an array back on its own sharding is a no-op.
  EXPECT_EQ(device_put(xs, s).impl(), xs.impl());

  // Printing shows the global value.
  EXPECT_EQ(xs.repr(), x.repr());
  EXPECT_EQ(xs.str(), x.str());
}

INSTANTIATE_TEST_SUITE_P(Specs, ShardedArrayTest, ::testing::Range(0, 5));

TEST(ShardedArrayMemoryTest, ShardsAreFreedWithTheArray) {
  tpu::Pod pod = tpu::make_pod("v5e", {4, 2});
  Mesh mesh = make_mesh({4, 2}, {"x", "y"}, pod.devices());
  const Device* chip = pod.devices()[3];
  const int64_t before = chip->memory_stats().bytes_in_use;
  {
    Array xs = device_put(jnp::ones({64, 16}), NamedSharding(mesh, P("x", "y")));
    EXPECT_EQ(chip->memory_stats().bytes_in_use - before, 16 * 8 * 4);
  }
  EXPECT_EQ(chip->memory_stats().bytes_in_use, before);
}

TEST(ShardedArrayMemoryTest, ExhaustionLeavesNothingAllocated) {
  tpu::Pod pod = tpu::make_pod("v5e", {4, 2}, {.hbm_bytes = 4096});
  Mesh mesh = make_mesh({4, 2}, {"x", "y"}, pod.devices());
  Array filler = device_put(jnp::ones({1000}), pod.devices()[6]);  // 4000 of chip 6's 4096 bytes
  std::vector<int64_t> before;
  for (const Device* d : pod.devices()) before.push_back(d->memory_stats().bytes_in_use);
  try {
    device_put(jnp::ones({8, 64}), NamedSharding(mesh, P("x")));  // 512 bytes per chip
    FAIL() << "expected ResourceExhaustedError";
  } catch (const ResourceExhaustedError& e) {
    EXPECT_THAT(std::string(e.what()), HasSubstr(pod.devices()[6]->ToString()));
  }
  for (size_t k = 0; k < before.size(); ++k) EXPECT_EQ(pod.devices()[k]->memory_stats().bytes_in_use, before[k]);
}

// JAX's make_array_from_single_device_arrays: the pieces of a sharded array back into one,
// and every mismatch (count, shape, device) a ValueError.
TEST(ShardedArrayMemoryTest, MakeArrayFromSingleDeviceArrays) {
  tpu::Pod pod = tpu::make_pod("v5e", {4, 2});
  Mesh mesh = make_mesh({4, 2}, {"x", "y"}, pod.devices());
  NamedSharding rows(mesh, P("x", none));
  const Array x = jnp::arange(32, float32).reshape({8, 4});
  std::vector<Array> pieces;
  for (const Shard& s : device_put(x, rows).addressable_shards()) pieces.push_back(s.data);
  const Array y = make_array_from_single_device_arrays({8, 4}, rows, pieces);
  EXPECT_EQ(y.to_vector<float>(), x.to_vector<float>());
  EXPECT_EQ(Str(typeof(y)), "float32[8@x,4]");
  std::vector<Array> too_few(pieces.begin(), pieces.begin() + 7);
  EXPECT_THROW(make_array_from_single_device_arrays({8, 4}, rows, too_few), ValueError);
  std::vector<Array> swapped = pieces;
  std::swap(swapped[0], swapped[2]);  // right shapes, wrong chips
  try {
    make_array_from_single_device_arrays({8, 4}, rows, swapped);
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    EXPECT_THAT(std::string(e.what()), HasSubstr("array 0 is f32[2,4] on TPU_"));
  }
  EXPECT_THROW(make_array_from_single_device_arrays({16, 4}, rows, pieces), ValueError);  // shard shape 4x4
}

TEST(ShardedArrayTest3D, V4MeshOfFourBySixteen) {
  tpu::Pod pod = tpu::make_pod("v4", {4, 4, 4});
  Mesh mesh = make_mesh({4, 16}, {"data", "model"}, pod.devices());
  Array x = jnp::arange(8 * 32, float32).reshape({8, 32});
  const std::vector<float> values = x.to_vector<float>();
  Array xs = device_put(x, NamedSharding(mesh, P("data", "model")));
  EXPECT_EQ(Str(typeof(xs)), "float32[8@data,32@model]");
  for (const Shard& shard : xs.addressable_shards()) {
    const std::vector<int64_t> pos = mesh.position_of(shard.device);
    EXPECT_EQ(shard.index, (ShardIndex{{2 * pos[0], 2 * pos[0] + 2}, {2 * pos[1], 2 * pos[1] + 2}}));
    EXPECT_EQ(shard.data.to_vector<float>(), Block(values, 32, shard.index));
  }
  EXPECT_EQ(device_put(xs, jx::devices("cpu")[0]).to_vector<float>(), values);
  // Resharding builds each new piece from the old pieces.
  Array ys = device_put(xs, NamedSharding(mesh, P(none, "model")));
  EXPECT_EQ(Str(typeof(ys)), "float32[8,32@model]");
  for (const Shard& shard : ys.addressable_shards()) {
    EXPECT_EQ(shard.data.to_vector<float>(), Block(values, 32, shard.index));
  }
  EXPECT_EQ(ys.to_vector<float>(), values);
}

TEST(ShardedArrayPlacementTest, FromAChipAndAsAPytree) {
  tpu::Pod pod = tpu::make_pod("v5e", {4, 2});
  Mesh mesh = make_mesh({4, 2}, {"x", "y"}, pod.devices());
  Array on_chip = device_put(jnp::arange(16, int32).reshape({4, 4}), pod.devices()[2]);
  Array xs = device_put(on_chip, NamedSharding(mesh, P(none, "y")));
  EXPECT_EQ(xs.dtype(), int32);
  EXPECT_EQ(Str(typeof(xs)), "int32[4,4@y]");
  EXPECT_EQ(xs.to_vector<int32_t>(), on_chip.to_vector<int32_t>());

  std::vector<Array> tree{jnp::ones({8}), jnp::zeros({4, 2})};
  std::vector<Array> placed = device_put(tree, NamedSharding(mesh, P("x")));
  EXPECT_EQ(Str(typeof(placed[0])), "float32[8@x]");
  EXPECT_EQ(Str(typeof(placed[1])), "float32[4@x,2]");
  // One sharding per leaf.
  std::vector<Array> each = device_put(tree, {NamedSharding(mesh, P("x")), NamedSharding(mesh, P(none, "y"))});
  EXPECT_EQ(Str(typeof(each[0])), "float32[8@x]");
  EXPECT_EQ(Str(typeof(each[1])), "float32[4,2@y]");
  try {
    device_put(tree, std::vector<NamedSharding>{NamedSharding(mesh, P())});
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    EXPECT_THAT(std::string(e.what()), HasSubstr("[device_put] got 1 shardings for a pytree of 2 arrays"));
  }
}

TEST(ShardedArrayErrorsTest, DevicePutNamesTheDimension) {
  tpu::Pod pod = tpu::make_pod("v5e", {4, 2});
  Mesh mesh = make_mesh({4, 2}, {"x", "y"}, pod.devices());
  NamedSharding s(mesh, P("x", "y"));
  try {
    device_put(jnp::ones({8, 3}), s);
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_EQ(std::string(e.what()), "[device_put] the sharding " + s.ToString() +
                                         " implies that the global size of dimension 1 should be divisible by 2, "
                                         "but it is equal to 3 (full shape: (8, 3))");
  }
  EXPECT_THROW(device_put(jnp::ones({8}), s), ShapeError);  // spec longer than the rank
  // Nothing is silently replicated: the error leaves every chip as it was.
  for (const Device* d : pod.devices()) EXPECT_EQ(d->memory_stats().bytes_in_use, 0);
}

TEST(ShardedArrayTypeTest, TypeofOfTracersAndJaxprs) {
  tpu::Pod pod = tpu::make_pod("v5e", {4, 2});
  Mesh mesh = make_mesh({4, 2}, {"x", "y"}, pod.devices());
  Array xs = device_put(jnp::ones({8, 4}), NamedSharding(mesh, P("x", none)));
  std::string traced;
  ClosedJaxpr j = make_jaxpr([&](const Array& a) {
    traced = Str(typeof(a));
    return a;
  })(xs);
  EXPECT_EQ(traced, "float32[8@x,4]");
  EXPECT_THAT(Str(j), HasSubstr("a:f32[8@x,4]"));
  Array ys = device_put(jnp::ones({8, 4}), NamedSharding(mesh, P({"x", "y"})));
  EXPECT_EQ(Str(typeof(ys)), "float32[8@(x,y),4]");
  EXPECT_THAT(Str(make_jaxpr([](const Array& a) { return a; })(ys)), HasSubstr("a:f32[8@(x,y),4]"));
  EXPECT_EQ(Str(typeof(jnp::ones({3}))), "float32[3]");
}

TEST(ShardedArrayDeletionTest, ADonatedShardDeletesTheArray) {
  tpu::Pod pod = tpu::make_pod("v5e", {4, 2});
  Mesh mesh = make_mesh({4, 2}, {"x", "y"}, pod.devices());
  Array xs = device_put(jnp::ones({8, 4}), NamedSharding(mesh, P("x", "y")));
  EXPECT_FALSE(xs.is_deleted());
  // What a jit call donating the array does to each shard: its memory moves to the result.
  std::vector<std::shared_ptr<Buffer>> taken;
  for (const Shard& shard : xs.addressable_shards()) taken.push_back(shard.data.buffer()->TakeStorage());
  EXPECT_TRUE(xs.is_deleted());
  EXPECT_THAT(xs.str(), HasSubstr("<deleted>"));
  try {
    xs.to_vector<float>();
    FAIL() << "expected RuntimeError";
  } catch (const RuntimeError& e) {
    EXPECT_THAT(std::string(e.what()), HasSubstr("Array has been deleted with shape=f32[8@x,4@y]"));
  }
  EXPECT_THROW(device_put(xs), RuntimeError);
  EXPECT_THROW(device_put(xs, NamedSharding(mesh, P())), RuntimeError);
}

}  // namespace
}  // namespace jx::sharded_array_test

// shard_map with each collective gives the results JAX's documentation shows
// (docs/new_docs/201/shard-map.md, "Collectives tutorial": psum over one and two axes,
// all_gather tiled and untiled, psum_scatter, ppermute, all_to_all, axis_index), evaluated
// eagerly on the chips of a simulated v5e pod: every device's block on its chip, the
// collectives moving the values between chips.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "jx/jx.h"

namespace jx::shard_map_collectives_test {
namespace {

namespace jnp = jx::numpy;
using ::testing::ElementsAreArray;

class ShardMapCollectivesTest : public ::testing::Test {
 protected:
  tpu::Pod pod_ = tpu::make_pod("v5e", {4, 2});
  std::vector<const Device*> chips_ = pod_.devices();
  Mesh mesh1d_ = make_mesh({4}, {"i"}, std::vector<const Device*>(chips_.begin(), chips_.begin() + 4));
  Mesh mesh2d_ = make_mesh({2, 2}, {"i", "j"}, std::vector<const Device*>(chips_.begin(), chips_.begin() + 4));
  Array x16_ = jnp::array(std::vector<int32_t>{3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 1, 2});
};

// f1: psum over 'i' with out_specs P(): every block is the sum of the four blocks.
TEST_F(ShardMapCollectivesTest, PsumOneAxis) {
  auto f1 = shard_map([](const Array& x) { return lax::psum(x, "i"); }, mesh1d_, in_specs{P("i")}, out_specs{P()});
  Array y = f1(x16_);
  EXPECT_THAT(y.to_vector<int32_t>(), ElementsAreArray({22, 20, 12, 17}));
  EXPECT_EQ(y.shape(), (Shape{4}));
  EXPECT_EQ(y.sharding()->ToString().find("NamedSharding"), 0u);
}

// f2: psum over 'i' of P('i', 'j') blocks, out_specs P(None, 'j').
TEST_F(ShardMapCollectivesTest, PsumOverOneOfTwoAxes) {
  auto f2 = shard_map([](const Array& x) { return lax::psum(x, "i"); }, mesh2d_, in_specs{P("i", "j")},
                      out_specs{P(none, "j")});
  Array y = f2(jnp::arange(16, int32).reshape({4, 4}));
  // Blocks (i=0): rows 0-1, (i=1): rows 2-3, summed: [[8,10,12,14],[16,18,20,22]].
  EXPECT_EQ(y.shape(), (Shape{2, 4}));
  EXPECT_THAT(y.to_vector<int32_t>(), ElementsAreArray({8, 10, 12, 14, 16, 18, 20, 22}));
}

// f3: psum over ('i', 'j'), out_specs P(None, None).
TEST_F(ShardMapCollectivesTest, PsumOverBothAxes) {
  auto f3 = shard_map([](const Array& x) { return lax::psum(x, {"i", "j"}); }, mesh2d_, in_specs{P("i", "j")},
                      out_specs{P(none, none)});
  Array y = f3(jnp::arange(16, int32).reshape({4, 4}));
  // The four 2x2 blocks summed: [[0+2+8+10, 1+3+9+11], [4+6+12+14, 5+7+13+15]].
  EXPECT_EQ(y.shape(), (Shape{2, 2}));
  EXPECT_THAT(y.to_vector<int32_t>(), ElementsAreArray({20, 24, 36, 40}));
}

// psum of an invariant value over an axis of size N is N times it.
TEST_F(ShardMapCollectivesTest, PsumOfInvariantIsSizeTimesValue) {
  auto f = shard_map([](const Array& x) { return lax::psum(x, "i"); }, mesh1d_, in_specs{P()}, out_specs{P()});
  Array y = f(jnp::array(std::vector<float>{1.f, 2.f}));
  EXPECT_THAT(y.to_vector<float>(), ElementsAreArray({4.f, 8.f}));
}

// f4: all_gather tiled=True, out_specs P('i'): each block is the whole [3, 9, 5, 2].
TEST_F(ShardMapCollectivesTest, AllGatherTiled) {
  auto f4 = shard_map([](const Array& x) { return lax::all_gather(x, "i", 0, /*tiled=*/true); }, mesh1d_,
                      in_specs{P("i")}, out_specs{P("i")});
  Array y = f4(jnp::array(std::vector<int32_t>{3, 9, 5, 2}));
  EXPECT_THAT(y.to_vector<int32_t>(), ElementsAreArray({3, 9, 5, 2, 3, 9, 5, 2, 3, 9, 5, 2, 3, 9, 5, 2}));
}

// f5: all_gather tiled=False stacks along a new axis: each block (4, 1).
TEST_F(ShardMapCollectivesTest, AllGatherUntiled) {
  auto f5 = shard_map([](const Array& x) { return lax::all_gather(x, "i"); }, mesh1d_, in_specs{P("i")},
                      out_specs{P("i")});
  Array y = f5(jnp::array(std::vector<int32_t>{3, 9, 5, 2}));
  EXPECT_EQ(y.shape(), (Shape{16, 1}));
  EXPECT_THAT(y.to_vector<int32_t>(), ElementsAreArray({3, 9, 5, 2, 3, 9, 5, 2, 3, 9, 5, 2, 3, 9, 5, 2}));
}

// f6: psum_scatter tiled=True: the final result equals the psum example's (out_specs P('i')).
TEST_F(ShardMapCollectivesTest, PsumScatterTiled) {
  auto f6 = shard_map([](const Array& x) { return lax::psum_scatter(x, "i", 0, /*tiled=*/true); }, mesh1d_,
                      in_specs{P("i")}, out_specs{P("i")});
  Array y = f6(x16_);
  EXPECT_THAT(y.to_vector<int32_t>(), ElementsAreArray({22, 20, 12, 17}));
}

// psum_scatter untiled: the scatter dimension (of the axis size) is removed.
TEST_F(ShardMapCollectivesTest, PsumScatterUntiled) {
  auto f = shard_map([](const Array& x) { return lax::psum_scatter(x.reshape({1, 4}), "i", 1); }, mesh1d_,
                     in_specs{P("i")}, out_specs{P("i")});
  Array y = f(x16_);
  EXPECT_EQ(y.shape(), (Shape{4}));
  EXPECT_THAT(y.to_vector<int32_t>(), ElementsAreArray({22, 20, 12, 17}));
}

// ppermute with a cyclic shift (the doc's shift example): block i goes to i+1 mod 4.
TEST_F(ShardMapCollectivesTest, PpermuteShift) {
  auto f = shard_map([](const Array& x) { return lax::ppermute(x, "i", {{0, 1}, {1, 2}, {2, 3}, {3, 0}}); }, mesh1d_,
                     in_specs{P("i")}, out_specs{P("i")});
  Array y = f(jnp::arange(8, float32));
  EXPECT_THAT(y.to_vector<float>(), ElementsAreArray({6.f, 7.f, 0.f, 1.f, 2.f, 3.f, 4.f, 5.f}));
}

// Devices that receive nothing get zeros.
TEST_F(ShardMapCollectivesTest, PpermutePartialGivesZeros) {
  auto f = shard_map([](const Array& x) { return lax::ppermute(x, "i", {{0, 1}, {1, 2}}); }, mesh1d_,
                     in_specs{P("i")}, out_specs{P("i")});
  Array y = f(jnp::arange(4, float32) + 1.f);
  EXPECT_THAT(y.to_vector<float>(), ElementsAreArray({0.f, 1.f, 2.f, 0.f}));
}

// all_to_all (the doc's example): device i's block j goes to device j's slot i, a block
// transpose of the (4, 4) matrix of blocks.
TEST_F(ShardMapCollectivesTest, AllToAll) {
  auto f = shard_map([](const Array& x) { return lax::all_to_all(x, "i", 0, 0, /*tiled=*/true); }, mesh1d_,
                     in_specs{P("i")}, out_specs{P("i")});
  Array y = f(jnp::arange(16, int32));
  EXPECT_THAT(y.to_vector<int32_t>(), ElementsAreArray({0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15}));
}

// Untiled all_to_all: split_axis (of the axis size) removed, a new concat_axis inserted.
TEST_F(ShardMapCollectivesTest, AllToAllUntiledSwapsAxes) {
  auto f = shard_map([](const Array& x) { return lax::all_to_all(x.reshape({4, 1}), "i", 0, 1); }, mesh1d_,
                     in_specs{P("i")}, out_specs{P("i")});
  Array y = f(jnp::arange(16, int32));
  EXPECT_EQ(y.shape(), (Shape{4, 4}));
  // Device k gets element k of every device's block: row k is column k of the blocks.
  EXPECT_THAT(y.to_vector<int32_t>(), ElementsAreArray({0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15}));
}

TEST_F(ShardMapCollectivesTest, AxisIndexOneAxis) {
  auto f = shard_map([](const Array& x) { return x * 0 + lax::axis_index("i"); }, mesh1d_, in_specs{P("i")},
                     out_specs{P("i")});
  EXPECT_THAT(f(jnp::zeros({4}, int32)).to_vector<int32_t>(), ElementsAreArray({0, 1, 2, 3}));
}

// Over two axes the index is row-major over the axes as given.
TEST_F(ShardMapCollectivesTest, AxisIndexTwoAxes) {
  auto f = shard_map([](const Array& x) { return x * 0 + lax::axis_index({"i", "j"}); }, mesh2d_,
                     in_specs{P({"i", "j"})}, out_specs{P({"i", "j"})});
  EXPECT_THAT(f(jnp::zeros({4}, int32)).to_vector<int32_t>(), ElementsAreArray({0, 1, 2, 3}));
  auto g = shard_map([](const Array& x) { return x * 0 + lax::axis_index({"j", "i"}); }, mesh2d_,
                     in_specs{P({"i", "j"})}, out_specs{P({"i", "j"})});
  EXPECT_THAT(g(jnp::zeros({4}, int32)).to_vector<int32_t>(), ElementsAreArray({0, 2, 1, 3}));
}

TEST_F(ShardMapCollectivesTest, PmaxPminPmean) {
  auto f = shard_map(
      [](const Array& x) { return std::make_tuple(lax::pmax(x, "i"), lax::pmin(x, "i"), lax::pmean(x, "i")); },
      mesh1d_, in_specs{P("i")}, out_specs{P(), P(), P()});
  auto [mx, mn, mean] = f(jnp::array(std::vector<float>{3, 1, 4, 1, 5, 9, 2, 6}));
  EXPECT_THAT(mx.to_vector<float>(), ElementsAreArray({5.f, 9.f}));
  EXPECT_THAT(mn.to_vector<float>(), ElementsAreArray({2.f, 1.f}));
  EXPECT_THAT(mean.to_vector<float>(), ElementsAreArray({3.5f, 4.25f}));
}

// The body's ops run on the chips: each chip's clock advances.
TEST_F(ShardMapCollectivesTest, BodyRunsOnEveryChip) {
  auto f = shard_map([](const Array& x) { return lax::psum(jnp::sin(x), "i"); }, mesh1d_, in_specs{P("i")},
                     out_specs{P()});
  Array y = f(jnp::arange(16, float32));
  for (const Shard& s : y.addressable_shards()) EXPECT_EQ(s.data.committed_device(), s.device);
  EXPECT_EQ(y.devices().size(), 4u);
}

}  // namespace
}  // namespace jx::shard_map_collectives_test

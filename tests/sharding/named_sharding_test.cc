// PartitionSpec and NamedSharding on a v5e 4x2 mesh: each spec's per-device indices, shard
// shape, replica structure and type; JAX's printing; JAX's errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "jx/jx.h"

namespace jx::named_sharding_test {
namespace {

using ::testing::HasSubstr;

template <typename F>
std::string ErrorOf(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

class NamedShardingTest : public ::testing::Test {
 protected:
  tpu::Pod pod_ = tpu::make_pod("v5e", {4, 2});
  Mesh mesh_ = make_mesh({4, 2}, {"x", "y"}, pod_.devices());
  const Shape shape_{8, 4};
};

TEST(PartitionSpecTest, PrintsAsJax) {
  EXPECT_EQ(P().ToString(), "PartitionSpec()");
  EXPECT_EQ(P("x").ToString(), "PartitionSpec('x',)");
  EXPECT_EQ(P("x", none).ToString(), "PartitionSpec('x', None)");
  EXPECT_EQ(P(none, "y").ToString(), "PartitionSpec(None, 'y')");
  EXPECT_EQ(P({"x", "y"}).ToString(), "PartitionSpec(('x', 'y'),)");
  EXPECT_EQ(P({"x", "y"}, none).ToString(), "PartitionSpec(('x', 'y'), None)");
  EXPECT_EQ(P({"x", "y"}, none).axes(), (std::vector<std::string>{"x", "y"}));
  EXPECT_TRUE(P("x")[5].is_none());
}

TEST_F(NamedShardingTest, RowsOverX) {
  NamedSharding s(mesh_, P("x", none));
  EXPECT_EQ(s.ToString(), "NamedSharding(mesh=Mesh('x': 4, 'y': 2, axis_types=(Explicit, Explicit)), "
                          "spec=PartitionSpec('x', None))");
  EXPECT_EQ(s.shard_shape(shape_), (Shape{2, 4}));
  const std::vector<ShardIndex> idx = s.devices_indices(shape_);
  ASSERT_EQ(idx.size(), 8u);
  for (int64_t i = 0; i < 4; ++i) {
    for (int64_t j = 0; j < 2; ++j) EXPECT_EQ(idx[i * 2 + j], (ShardIndex{{2 * i, 2 * i + 2}, {0, 4}}));
  }
  EXPECT_EQ(s.TypeSpec(2), (std::vector<std::vector<std::string>>{{"x"}, {}}));
  EXPECT_FALSE(s.is_fully_replicated());
  EXPECT_EQ(s.device_set(), mesh_.devices());
  EXPECT_EQ(s.num_pieces(0), 4);
  EXPECT_EQ(s.num_pieces(1), 1);
}

TEST_F(NamedShardingTest, BothDims) {
  NamedSharding s(mesh_, P("x", "y"));
  EXPECT_EQ(s.shard_shape(shape_), (Shape{2, 2}));
  const std::vector<ShardIndex> idx = s.devices_indices(shape_);
  for (int64_t i = 0; i < 4; ++i) {
    for (int64_t j = 0; j < 2; ++j) EXPECT_EQ(idx[i * 2 + j], (ShardIndex{{2 * i, 2 * i + 2}, {2 * j, 2 * j + 2}}));
  }
  EXPECT_EQ(s.TypeSpec(2), (std::vector<std::vector<std::string>>{{"x"}, {"y"}}));
}

TEST_F(NamedShardingTest, TwoAxesOnOneDimXMajor) {
  NamedSharding s(mesh_, P({"x", "y"}, none));
  EXPECT_EQ(s.shard_shape(shape_), (Shape{1, 4}));
  const std::vector<ShardIndex> idx = s.devices_indices(shape_);
  for (int64_t i = 0; i < 4; ++i) {
    for (int64_t j = 0; j < 2; ++j) EXPECT_EQ(idx[i * 2 + j], (ShardIndex{{i * 2 + j, i * 2 + j + 1}, {0, 4}}));
  }
  EXPECT_EQ(s.TypeSpec(2), (std::vector<std::vector<std::string>>{{"x", "y"}, {}}));
  // y major instead: the piece is y * 4 + x.
  NamedSharding t(mesh_, P({"y", "x"}, none));
  const std::vector<ShardIndex> tidx = t.devices_indices(shape_);
  for (int64_t i = 0; i < 4; ++i) {
    for (int64_t j = 0; j < 2; ++j) EXPECT_EQ(tidx[i * 2 + j][0], (std::pair<int64_t, int64_t>{j * 4 + i, j * 4 + i + 1}));
  }
}

TEST_F(NamedShardingTest, ColumnsOverY) {
  NamedSharding s(mesh_, P(none, "y"));
  EXPECT_EQ(s.shard_shape(shape_), (Shape{8, 2}));
  const std::vector<ShardIndex> idx = s.devices_indices(shape_);
  for (int64_t i = 0; i < 4; ++i) {
    for (int64_t j = 0; j < 2; ++j) EXPECT_EQ(idx[i * 2 + j], (ShardIndex{{0, 8}, {2 * j, 2 * j + 2}}));
  }
  EXPECT_EQ(s.TypeSpec(2), (std::vector<std::vector<std::string>>{{}, {"y"}}));
}

TEST_F(NamedShardingTest, Replicated) {
  NamedSharding s(mesh_, P());
  EXPECT_EQ(s.shard_shape(shape_), shape_);
  for (const ShardIndex& index : s.devices_indices(shape_)) EXPECT_EQ(index, (ShardIndex{{0, 8}, {0, 4}}));
  EXPECT_TRUE(s.is_fully_replicated());
  EXPECT_TRUE(s.TypeSpec(2).empty());  // the type records no sharding: float32[8,4]
  EXPECT_EQ(s.devices_indices({}).size(), 8u);  // scalars too
  // Axes of size 1 split nothing.
  Mesh thin(pod_.devices(), {8, 1}, {"x", "y"});
  EXPECT_TRUE(NamedSharding(thin, P(none, "y")).is_fully_replicated());
}

TEST_F(NamedShardingTest, AutoAxesStayOutOfTypes) {
  Mesh mixed(pod_.devices(), {4, 2}, {"x", "y"}, {AxisType::kExplicit, AxisType::kAuto});
  EXPECT_EQ(NamedSharding(mixed, P("x", "y")).TypeSpec(2), (std::vector<std::vector<std::string>>{{"x"}, {}}));
  EXPECT_TRUE(NamedSharding(mixed, P(none, "y")).TypeSpec(2).empty());
}

TEST_F(NamedShardingTest, EqualityIgnoresTrailingNones) {
  NamedSharding a(mesh_, P("x"));
  NamedSharding b(mesh_, P("x", none));
  NamedSharding c(mesh_, P("y"));
  EXPECT_TRUE(a.Equals(b));
  EXPECT_EQ(a.Hash(), b.Hash());
  EXPECT_FALSE(a.Equals(c));
  EXPECT_FALSE(a.Equals(SingleDeviceSharding(pod_.devices()[0])));
  EXPECT_FALSE(a.Equals(NamedSharding(make_mesh({2, 4}, {"x", "y"}, pod_.devices()), P("x"))));
}

TEST_F(NamedShardingTest, UnknownAxisListsTheMeshAxes) {
  EXPECT_EQ(ErrorOf([&] { NamedSharding(mesh_, P("z")); }),
            "[NamedSharding] Resource axis: z of PartitionSpec('z',) is not found in mesh: ('x', 'y').");
  EXPECT_THROW(NamedSharding(mesh_, P({"x", "w"}, none)), ValueError);
}

TEST_F(NamedShardingTest, AxisUsedTwice) {
  EXPECT_EQ(ErrorOf([&] { NamedSharding(mesh_, P("x", "x")); }),
            "[NamedSharding] A single NamedSharding spec specification can map every mesh axis to at most one "
            "positional dimension, but PartitionSpec('x', 'x') has duplicate entries for `x`");
  EXPECT_THROW(NamedSharding(mesh_, P({"y", "y"})), ValueError);
}

TEST_F(NamedShardingTest, SpecLongerThanRank) {
  NamedSharding s(mesh_, P("x", "y"));
  EXPECT_EQ(ErrorOf([&] { s.shard_shape({8}); }),
            "[NamedSharding] Sharding " + s.ToString() +
                " is only valid for values of rank at least 2, but was applied to a value of rank 1.");
  EXPECT_THAT(ErrorOf([&] { NamedSharding(mesh_, P("x")).devices_indices({}); }),
              HasSubstr("For scalars the PartitionSpec should be P()"));
}

TEST_F(NamedShardingTest, ShapesThatDoNotDivide) {
  NamedSharding s(mesh_, P("x", none));
  EXPECT_EQ(ErrorOf([&] { s.devices_indices({6, 4}); }),
            "[NamedSharding] the sharding " + s.ToString() +
                " implies that the global size of dimension 0 should be divisible by 4, but it is equal to 6 "
                "(full shape: (6, 4))");
  NamedSharding both(mesh_, P(none, {"x", "y"}));
  EXPECT_THAT(ErrorOf([&] { both.shard_shape({8, 4}); }),
              HasSubstr("dimension 1 should be divisible by 8, but it is equal to 4 (full shape: (8, 4))"));
  EXPECT_THROW(both.shard_shape({8, 4}), ShapeError);
}

}  // namespace
}  // namespace jx::named_sharding_test

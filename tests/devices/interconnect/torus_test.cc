// ici::Torus: TPU.md's wraparound rule per generation, the graph's links, chip order as
// Pod::devices(), neighbours, dimension-ordered routing (minimal: checked against Boost's BFS
// distances) and its errors.
#include "jx/devices/interconnect/torus.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <boost/graph/breadth_first_search.hpp>

#include "jx/core/errors.h"
#include "jx/devices/tpu/chip_specs.h"
#include "jx/devices/tpu/pod.h"

namespace jx::ici::torus_test {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

Torus Slice(const char* generation, const std::vector<int64_t>& shape) {
  return Torus::ForSlice(tpu::ChipSpec(generation), shape);
}

template <typename F>
std::string ValueErrorOf(F f) {
  try {
    f();
  } catch (const ValueError& e) {
    return e.what();
  }
  return "no ValueError";
}

TEST(TorusTest, V5eAndV6eWrapAnAxisOnlyAtItsFullSize16) {
  EXPECT_THAT(Slice("v5e", {16, 16}).wraparound(), ElementsAre(true, true));
  EXPECT_THAT(Slice("v5e", {8, 16}).wraparound(), ElementsAre(false, true));
  EXPECT_THAT(Slice("v5e", {16, 8}).wraparound(), ElementsAre(true, false));
  EXPECT_THAT(Slice("v5e", {4, 2}).wraparound(), ElementsAre(false, false));
  EXPECT_THAT(Slice("v5e", {1, 1}).wraparound(), ElementsAre(false, false));
  EXPECT_THAT(Slice("v6e", {16, 16}).wraparound(), ElementsAre(true, true));
  EXPECT_THAT(Slice("v6e", {4, 16}).wraparound(), ElementsAre(false, true));
  // v3 follows the 2D rule at its 32x32-chip full pod; its core axis (one device per
  // TensorCore) is a line of 2.
  EXPECT_THAT(Slice("v3", {32, 32}).wraparound(), ElementsAre(true, true, false));
  EXPECT_THAT(Slice("v3", {16, 32}).wraparound(), ElementsAre(false, true, false));
}

// v2/v3: a vertex per TensorCore; the last axis joins a chip's two cores on the chip (no ICI
// hop latency), routes cross it last.
TEST(TorusTest, V3CoresAreJoinedOnTheChip) {
  const Torus t = Slice("v3", {2, 2});
  EXPECT_THAT(t.shape(), ElementsAre(2, 2, 2));
  EXPECT_EQ(t.core_axis(), 2);
  EXPECT_EQ(Slice("v5e", {2, 2}).core_axis(), -1);
  const std::vector<Link> pair = t.Route(t.ChipAt({1, 0, 0}), t.ChipAt({1, 0, 1}));
  ASSERT_EQ(pair.size(), 1u);
  EXPECT_TRUE(pair[0].on_chip);
  EXPECT_EQ(t.params(pair[0]).hop_latency_s, 0);
  EXPECT_DOUBLE_EQ(t.params(pair[0]).bandwidth, 1e11);
  EXPECT_THAT(t.Describe(pair[0]), HasSubstr("axis 2 +, on-chip"));
  // Core 0 of chip (0,0) to core 1 of chip (1,1): two ICI hops, then onto core 1.
  const std::vector<Link> across = t.Route(t.ChipAt({0, 0, 0}), t.ChipAt({1, 1, 1}));
  ASSERT_EQ(across.size(), 3u);
  EXPECT_FALSE(across[0].on_chip);
  EXPECT_FALSE(across[1].on_chip);
  EXPECT_TRUE(across[2].on_chip);
  EXPECT_DOUBLE_EQ(t.params(across[0]).hop_latency_s, 1e-6);
  EXPECT_THAT(t.ToString(), HasSubstr("axis 2 cores (on-chip"));
  EXPECT_THAT(ValueErrorOf([] { Torus({2, 2}, {false, false}, {.bandwidth = 1}, "x", LinkParams{.bandwidth = 0}); }),
              HasSubstr("core link parameters need bandwidth > 0"));
}

TEST(TorusTest, V4V5pV7WrapSlicesOfWholeCubesOnly) {
  EXPECT_THAT(Slice("v4", {4, 4, 4}).wraparound(), ElementsAre(true, true, true));
  EXPECT_THAT(Slice("v4", {4, 4, 8}).wraparound(), ElementsAre(true, true, true));
  EXPECT_THAT(Slice("v4", {2, 2, 2}).wraparound(), ElementsAre(false, false, false));
  EXPECT_THAT(Slice("v4", {2, 2, 4}).wraparound(), ElementsAre(false, false, false));
  EXPECT_THAT(Slice("v4", {2, 2, 1}).wraparound(), ElementsAre(false, false, false));
  EXPECT_THAT(Slice("v5p", {8, 8, 16}).wraparound(), ElementsAre(true, true, true));
  EXPECT_THAT(Slice("v5p", {2, 4, 4}).wraparound(), ElementsAre(false, false, false));
  // v7's fourth axis is its cores: never a ring.
  EXPECT_THAT(Slice("v7", {4, 4, 4}).wraparound(), ElementsAre(true, true, true, false));
  EXPECT_THAT(Slice("v7", {2, 2, 4}).wraparound(), ElementsAre(false, false, false, false));
}

// v7: three chip axes and the core axis. A route corrects x, y, z over ICI (each the shorter
// way round its ring), then crosses to the other core on the chip; hops on the chip cost no
// ICI latency.
TEST(TorusTest, V7CoresAreJoinedOnTheChipOfA3DTorus) {
  const Torus t = Slice("v7", {4, 4, 4});
  EXPECT_THAT(t.shape(), ElementsAre(4, 4, 4, 2));
  EXPECT_EQ(t.core_axis(), 3);
  EXPECT_EQ(t.num_chips(), 128);  // vertices: TensorCores
  const std::vector<Link> route = t.Route(t.ChipAt({0, 0, 0, 0}), t.ChipAt({3, 1, 2, 1}));
  ASSERT_EQ(route.size(), 5u);  // x: 1 hop the - way (wraparound), y: 1, z: 2, then the core
  EXPECT_EQ(route[0].axis, 0);
  EXPECT_TRUE(route[0].wraparound);
  EXPECT_EQ(route[1].axis, 1);
  EXPECT_EQ(route[2].axis, 2);
  EXPECT_EQ(route[3].axis, 2);
  EXPECT_TRUE(route[4].on_chip);
  for (size_t i = 0; i < 4; ++i) EXPECT_FALSE(route[i].on_chip);
  EXPECT_EQ(t.Hops(t.ChipAt({0, 0, 0, 0}), t.ChipAt({3, 1, 2, 1})), 5);
  EXPECT_EQ(t.params(route[4]).hop_latency_s, 0);
  EXPECT_DOUBLE_EQ(t.params(route[4]).bandwidth, 9e10);
  EXPECT_DOUBLE_EQ(t.params(route[0]).hop_latency_s, 1e-6);
  EXPECT_EQ(t.Neighbors(t.ChipAt({1, 1, 1, 0})).size(), 7u);  // 6 ICI neighbours, 1 core
  EXPECT_THAT(t.ToString(), HasSubstr("v7 4x4x4x2 torus: axis 0 ring, axis 1 ring, axis 2 ring, axis 3 cores (on-chip"));
}

TEST(TorusTest, LinkParametersComeFromTheChipSpec) {
  // TPU.md: one-way W per link; ~1 us per hop; the ppermute fits 4.55 us + b / 86.3 GB/s
  // (v5p) and 2.29 us + b / 86.8 GB/s (v6e) on 90 GB/s links.
  const Torus v5p = Slice("v5p", {4, 4, 4});
  EXPECT_DOUBLE_EQ(v5p.link().bandwidth, 9e10);
  EXPECT_DOUBLE_EQ(v5p.link().hop_latency_s, 1e-6);
  EXPECT_DOUBLE_EQ(v5p.link().fixed_s, 4.55e-6);
  EXPECT_NEAR(v5p.link().effective_bandwidth(), 86.3e9, 1e6);
  const Torus v6e = Slice("v6e", {4, 4});
  EXPECT_DOUBLE_EQ(v6e.link().fixed_s, 2.29e-6);
  EXPECT_NEAR(v6e.link().effective_bandwidth(), 86.8e9, 1e6);
  const Torus v5e = Slice("v5e", {4, 2});
  EXPECT_DOUBLE_EQ(v5e.link().bandwidth, 4.5e10);
  EXPECT_GT(v5e.link().efficiency, 0.95);
  EXPECT_LT(v5e.link().efficiency, 0.97);
  EXPECT_EQ(v5e.name(), "v5e");
  EXPECT_EQ(v5e.ToString(), "v5e 4x2 torus: axis 0 line, axis 1 line; 4.5e+10 B/s per one-way link");
}

TEST(TorusTest, TheGraphHasTwoOneWayLinksPerNeighbouringPair) {
  // 4x2 without wraparound: axis 0 has 3 neighbouring pairs in each of 2 columns, axis 1 one
  // pair in each of 4 rows: 10 pairs, 20 one-way links.
  const Torus line = Slice("v5e", {4, 2});
  EXPECT_EQ(boost::num_vertices(line.graph()), 8u);
  EXPECT_EQ(boost::num_edges(line.graph()), 20u);
  EXPECT_EQ(line.num_links(), 20);
  // 16x16 with wraparound: every chip has 4 outgoing links.
  const Torus ring = Slice("v5e", {16, 16});
  EXPECT_EQ(ring.num_links(), 256 * 4);
  for (int64_t chip = 0; chip < ring.num_chips(); ++chip) {
    EXPECT_EQ(boost::out_degree(static_cast<Torus::Graph::vertex_descriptor>(chip), ring.graph()), 4u);
    EXPECT_EQ(boost::in_degree(static_cast<Torus::Graph::vertex_descriptor>(chip), ring.graph()), 4u);
  }
  // A 3D cube: 6 links per chip.
  EXPECT_EQ(Slice("v4", {4, 4, 4}).num_links(), 64 * 6);
  // Every edge's bundle is its link, and ids index links().
  for (auto [e, end] = boost::edges(ring.graph()); e != end; ++e) {
    const Link& l = ring.graph()[*e];
    EXPECT_EQ(static_cast<int64_t>(boost::source(*e, ring.graph())), l.src);
    EXPECT_EQ(static_cast<int64_t>(boost::target(*e, ring.graph())), l.dst);
    EXPECT_EQ(ring.links()[static_cast<size_t>(l.id)].dst, l.dst);
  }
}

TEST(TorusTest, ChipsAreRowMajorLikePodDevices) {
  const Torus t = Slice("v5e", {4, 2});
  EXPECT_THAT(t.Coords(0), ElementsAre(0, 0));
  EXPECT_THAT(t.Coords(1), ElementsAre(0, 1));
  EXPECT_THAT(t.Coords(3), ElementsAre(1, 1));
  EXPECT_THAT(t.Coords(7), ElementsAre(3, 1));
  EXPECT_EQ(t.ChipAt({2, 1}), 5);
  const Torus cube = Slice("v4", {2, 3, 4});
  for (int64_t chip = 0; chip < cube.num_chips(); ++chip) EXPECT_EQ(cube.ChipAt(cube.Coords(chip)), chip);
  EXPECT_THAT(cube.Coords(23), ElementsAre(1, 2, 3));
  EXPECT_THAT(cube.Coords(4), ElementsAre(0, 1, 0));

  tpu::Pod pod = tpu::make_pod("v5e", {4, 2});
  const Torus& torus = pod.torus();
  EXPECT_EQ(&torus, &pod.client().torus());  // built once, with the client
  EXPECT_THAT(torus.shape(), ElementsAre(4, 2));
  const std::vector<const Device*> devices = pod.devices();
  ASSERT_EQ(static_cast<int64_t>(devices.size()), torus.num_chips());
  for (size_t i = 0; i < devices.size(); ++i) EXPECT_EQ(torus.Coords(static_cast<int64_t>(i)), pod.coords(devices[i]));
  EXPECT_THAT(tpu::make_pod("v5e", {16, 16}).torus().wraparound(), ElementsAre(true, true));
}

TEST(TorusTest, Neighbours) {
  // 4x2 without wraparound: the corner (0,0) reaches (1,0) = chip 2 and (0,1) = chip 1.
  const Torus line = Slice("v5e", {4, 2});
  EXPECT_THAT(line.Neighbors(0), ElementsAre(2, 1));
  EXPECT_THAT(line.Neighbors(5), ElementsAre(3, 7, 4));  // (2,1): (1,1), (3,1), (2,0)
  EXPECT_EQ(line.Neighbor(0, 0, -1), std::nullopt);      // past the end of a line
  EXPECT_EQ(line.Neighbor(0, 0, +1), 2);
  // 16x16: (0,0) has (15,0), (1,0), (0,15), (0,1), the first and third over wraparound links.
  const Torus ring = Slice("v5e", {16, 16});
  EXPECT_THAT(ring.Neighbors(0), ElementsAre(240, 16, 15, 1));
  const Link* wrap = ring.FindLink(0, 240);
  ASSERT_NE(wrap, nullptr);
  EXPECT_TRUE(wrap->wraparound);
  EXPECT_EQ(wrap->axis, 0);
  EXPECT_EQ(wrap->direction, -1);
  EXPECT_EQ(ring.Describe(*wrap), "chip 0 (0,0) -> chip 240 (15,0), axis 0 -, wraparound");
  EXPECT_FALSE(ring.FindLink(0, 16)->wraparound);
  EXPECT_EQ(ring.FindLink(0, 17), nullptr);  // diagonal: not neighbours
}

TEST(TorusTest, RoutesAreDimensionOrderedTheShorterWayRound) {
  // 8x16 (axis 1 wraps): (0,0) -> (2,15) corrects axis 0 first, (0,0)->(1,0)->(2,0), then
  // axis 1 the - way over the wraparound link (2,0)->(2,15): 3 hops instead of 2 + 15.
  const Torus t = Slice("v5e", {8, 16});
  const std::vector<Link> route = t.Route(t.ChipAt({0, 0}), t.ChipAt({2, 15}));
  ASSERT_EQ(route.size(), 3u);
  EXPECT_EQ(route[0].dst, t.ChipAt({1, 0}));
  EXPECT_EQ(route[1].dst, t.ChipAt({2, 0}));
  EXPECT_EQ(route[2].dst, t.ChipAt({2, 15}));
  EXPECT_EQ(route[2].axis, 1);
  EXPECT_EQ(route[2].direction, -1);
  EXPECT_TRUE(route[2].wraparound);
  EXPECT_EQ(t.Hops(t.ChipAt({0, 0}), t.ChipAt({2, 15})), 3);
  // A line goes the only way: (7,0) -> (0,0) is 7 hops on axis 0.
  EXPECT_EQ(t.Hops(t.ChipAt({7, 0}), t.ChipAt({0, 0})), 7);
  EXPECT_EQ(t.AxisOffset(0, 7, 0), -7);
  // Half way round a ring is a tie, taken the + way.
  EXPECT_EQ(t.AxisOffset(1, 3, 11), 8);
  EXPECT_TRUE(t.AxisTie(1, 3, 11));
  EXPECT_FALSE(t.AxisTie(1, 3, 10));
  EXPECT_EQ(t.AxisOffset(1, 3, 12), -7);
  EXPECT_TRUE(t.Route(5, 5).empty());
  // The other way round the tie, asked for explicitly.
  const std::vector<Link> back = t.Route(t.ChipAt({0, 3}), t.ChipAt({0, 11}), {+1, -1});
  ASSERT_EQ(back.size(), 8u);
  EXPECT_EQ(back.front().direction, -1);
  EXPECT_THAT(ValueErrorOf([&] {
                t.Route(t.ChipAt({0, 0}), t.ChipAt({3, 0}), {-1, +1});
              }),
              HasSubstr("axis 0 of the 8x16 torus is a line"));
}

// Every route is a connected chain of links from src to dst, axes in order, and as short as
// the graph's shortest path (Boost's breadth-first search): dimension-ordered routing on a
// torus is minimal.
void ExpectMinimalDimensionOrderedRoutes(const Torus& t) {
  const auto n = static_cast<size_t>(t.num_chips());
  for (int64_t src = 0; src < t.num_chips(); ++src) {
    std::vector<int64_t> distance(n, 0);
    boost::breadth_first_search(
        t.graph(), static_cast<Torus::Graph::vertex_descriptor>(src),
        boost::visitor(boost::make_bfs_visitor(boost::record_distances(distance.data(), boost::on_tree_edge()))));
    for (int64_t dst = 0; dst < t.num_chips(); ++dst) {
      const std::vector<Link> route = t.Route(src, dst);
      ASSERT_EQ(static_cast<int64_t>(route.size()), distance[static_cast<size_t>(dst)])
          << t.ToString() << ": " << src << " -> " << dst;
      EXPECT_EQ(t.Hops(src, dst), distance[static_cast<size_t>(dst)]);
      int64_t at = src;
      int axis = 0;
      for (const Link& l : route) {
        EXPECT_EQ(l.src, at);
        EXPECT_EQ(t.FindLink(l.src, l.dst)->id, l.id);
        EXPECT_GE(l.axis, axis);
        axis = l.axis;
        at = l.dst;
      }
      EXPECT_EQ(at, dst);
    }
  }
}

TEST(TorusTest, RoutesAreShortestPaths) {
  ExpectMinimalDimensionOrderedRoutes(Slice("v5e", {4, 2}));
  ExpectMinimalDimensionOrderedRoutes(Slice("v5e", {8, 16}));
  ExpectMinimalDimensionOrderedRoutes(Slice("v4", {4, 4, 4}));
  ExpectMinimalDimensionOrderedRoutes(Slice("v4", {2, 2, 4}));
  ExpectMinimalDimensionOrderedRoutes(Torus({5, 3}, {true, true}, {.bandwidth = 1e9}, "odd"));
}

TEST(TorusTest, Errors) {
  const Torus t = Slice("v5e", {4, 2});
  EXPECT_THAT(ValueErrorOf([&] { t.Coords(8); }), HasSubstr("chip 8 is not on the 4x2 v5e torus (chips 0..7)"));
  EXPECT_THAT(ValueErrorOf([&] { t.ChipAt({4, 0}); }), HasSubstr("position (4,0) is not on the 4x2 torus"));
  EXPECT_THAT(ValueErrorOf([&] { t.Route(0, -1); }), HasSubstr("chip -1 is not on"));
  EXPECT_THAT(ValueErrorOf([&] { t.wraps(2); }), HasSubstr("axis 2 is not an axis of the 4x2 torus"));
  EXPECT_THAT(ValueErrorOf([&] { Slice("v5e", {4, 4, 4}); }), HasSubstr("v5e chips form a 2D torus"));
  EXPECT_THAT(ValueErrorOf([] {
                Torus({2, 4}, {true, false}, {.bandwidth = 1e9});
              }),
              HasSubstr("axis 0 of 2 chips cannot wrap"));
  EXPECT_THAT(ValueErrorOf([] { Torus({0, 4}, {false, false}, {.bandwidth = 1e9}); }), HasSubstr("axis 0 has 0 chips"));
  EXPECT_THAT(ValueErrorOf([] { Torus({4, 4}, {false, false}, {.bandwidth = 0}); }), HasSubstr("bandwidth > 0"));
}

}  // namespace
}  // namespace jx::ici::torus_test

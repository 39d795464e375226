// Collective and ppermute times on the torus against TPU.md's formulas ("Collectives"),
// derived by hand in each test's comment and compared within 10%. Constants (TPU.md and the
// chip spec table):
//   v5e: W = 45 GB/s one-way per link, eta = 86.8/90 (the v6e fit, reused for 2D chips), so
//        eta*W = 43.4 GB/s; t0 = 2.29 us; t_hop = 1 us.
//   v4:  W = 45 GB/s, eta = 86.3/90 (the v5p fit, reused for 3D chips): eta*W = 43.15 GB/s;
//        t0 = 4.55 us; t_hop = 1 us.
// Model: collective T = t0 + max(latency, bandwidth); ppermute T = t0 + hops*t_hop +
// bytes/(ports*eta*W); W_bidi = 2W.
#include "jx/devices/interconnect/collective_cost.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "jx/core/errors.h"
#include "jx/devices/interconnect/torus.h"
#include "jx/devices/tpu/chip_specs.h"

namespace jx::ici::collective_cost_test {
namespace {

using ::testing::HasSubstr;

constexpr double kV5eEtaW = 43.4e9;
constexpr double kV5eT0 = 2.29e-6;
constexpr double kV4EtaW = 43.15e9;
constexpr double kV4T0 = 4.55e-6;
constexpr double kHop = 1e-6;
constexpr int64_t kMiB = 1 << 20;

Torus Slice(const char* generation, const std::vector<int64_t>& shape) {
  return Torus::ForSlice(tpu::ChipSpec(generation), shape);
}

// Every chip of `t` grouped by the coordinates of the axes not in `axes` (the groups of a
// collective over torus axes `axes`), chips in row-major order within a group.
std::vector<std::vector<int64_t>> GroupsOver(const Torus& t, const std::vector<int>& axes) {
  std::vector<std::vector<int64_t>> groups;
  std::vector<std::vector<int64_t>> keys;
  for (int64_t chip = 0; chip < t.num_chips(); ++chip) {
    std::vector<int64_t> key = t.Coords(chip);
    for (int a : axes) key[static_cast<size_t>(a)] = -1;
    size_t g = 0;
    while (g < keys.size() && keys[g] != key) ++g;
    if (g == keys.size()) {
      keys.push_back(key);
      groups.emplace_back();
    }
    groups[g].push_back(chip);
  }
  return groups;
}

void ExpectWithin10Percent(double model, double by_hand) {
  EXPECT_NEAR(model, by_hand, 0.10 * by_hand) << "model " << model << " s, by hand " << by_hand << " s";
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

TEST(CollectiveCostTest, AllGatherOnAWrappingAxisIsABidirectionalRing) {
  // v5e 16x16, 16 groups, each one row along axis 1 (a ring of N = 16), V = 64 MiB.
  // TPU.md: T ~ V / W_bidi = V / (2 eta W) = 67108864 / (2 * 43.4e9) = 773.2 us, independent
  // of N; latency N/2 = 8 hops = 8 us < 773 us, so bandwidth-bound: T = t0 + 773.2 us
  // = 775.5 us. Each shard goes 8 hops one way and 7 the other, so the busiest link carries
  // 8 shards of V/16 = V/2, and all links together (N-1) V per group.
  const Torus t = Slice("v5e", {16, 16});
  const int64_t v = 64 * kMiB;
  const CollectiveCost c = CostCollective(t, CollectiveKind::kAllGather, GroupsOver(t, {1}), v);
  ExpectWithin10Percent(c.seconds, kV5eT0 + 67108864 / (2 * kV5eEtaW));
  EXPECT_EQ(c.op, "all-gather");
  EXPECT_EQ(c.algorithm, "bidi ring over torus axis 1 (wraps), 16 groups at once");
  EXPECT_FALSE(c.latency_bound);
  EXPECT_EQ(c.hops, 8);
  EXPECT_DOUBLE_EQ(c.latency_s, 8e-6);
  EXPECT_DOUBLE_EQ(c.fixed_s, kV5eT0);
  EXPECT_EQ(c.max_link_bytes(), v / 2);
  EXPECT_EQ(c.total_link_bytes(), 16 * 15 * v);
  // Only axis 1's links carry data: 256 chips x 2 directions.
  EXPECT_EQ(c.link_bytes.size(), 512u);
  for (const LinkBytes& l : c.link_bytes) EXPECT_EQ(t.links()[static_cast<size_t>(l.link)].axis, 1);
  EXPECT_THAT(c.ToString(), HasSubstr("all-gather 0.000775 s = t0 2.29e-06 + max(latency 8e-06, bandwidth"));
}

TEST(CollectiveCostTest, AllGatherOnALineCostsNMinus1ShardsPerLink) {
  // v5e 8x16, groups along axis 0 (8 chips, no wraparound: a line), V = 64 MiB.
  // TPU.md: the far edge's data crosses N-1 hops: T ~ (N-1)(V/N) / W with eta:
  // 7 * 8388608 / 43.4e9 = 1353.0 us; latency N-1 = 7 hops = 7 us. T = t0 + 1353.0 us.
  // The end links carry 7 of the 8 shards: 7/8 V.
  const Torus t = Slice("v5e", {8, 16});
  const int64_t v = 64 * kMiB;
  const CollectiveCost c = CostCollective(t, CollectiveKind::kAllGather, GroupsOver(t, {0}), v);
  ExpectWithin10Percent(c.seconds, kV5eT0 + 7.0 * (67108864 / 8.0) / kV5eEtaW);
  EXPECT_EQ(c.algorithm, "line over torus axis 0 (no wraparound), 16 groups at once");
  EXPECT_EQ(c.hops, 7);
  EXPECT_EQ(c.max_link_bytes(), 7 * v / 8);
  EXPECT_EQ(c.total_link_bytes(), 16 * 7 * v);
}

TEST(CollectiveCostTest, WraparoundMakesTheSameAxisFaster) {
  // v4 4x4x4 (whole cube: every axis wraps) vs v4 2x2x4 (smaller than a cube: none), one
  // group of the 4 chips along axis 2, V = 16 MiB = 16777216 B.
  // Ring (N = 4): V / (2 eta W) = 16777216 / 86.3e9 = 194.4 us; T = t0 + 194.4 us.
  // Line (N = 4): 3 (V/4) / (eta W) = 0.75 * 16777216 / 43.15e9 = 291.6 us; T = t0 + 291.6 us.
  // Link by link on the line (chips z = 0..3): + links carry 1, 2, 3 shards of V/4, - links
  // 3, 2, 1.
  const int64_t v = 16 * kMiB;
  const Torus cube = Slice("v4", {4, 4, 4});
  const CollectiveCost ring = CostCollective(cube, CollectiveKind::kAllGather, {{0, 1, 2, 3}}, v);
  ExpectWithin10Percent(ring.seconds, kV4T0 + 16777216 / (2 * kV4EtaW));
  EXPECT_EQ(ring.algorithm, "bidi ring over torus axis 2 (wraps)");
  EXPECT_EQ(ring.hops, 2);

  const Torus small = Slice("v4", {2, 2, 4});
  const CollectiveCost line = CostCollective(small, CollectiveKind::kAllGather, {{0, 1, 2, 3}}, v);
  ExpectWithin10Percent(line.seconds, kV4T0 + 0.75 * 16777216 / kV4EtaW);
  EXPECT_EQ(line.algorithm, "line over torus axis 2 (no wraparound)");
  EXPECT_EQ(line.hops, 3);
  ASSERT_EQ(line.link_bytes.size(), 6u);
  for (const LinkBytes& l : line.link_bytes) {
    const Link& link = small.links()[static_cast<size_t>(l.link)];
    const int64_t shards = link.direction > 0 ? link.dst : 4 - link.dst - 1;  // z of dst: 1..3 / 2..0
    EXPECT_EQ(l.bytes, shards * v / 4) << small.Describe(link);
  }
  ExpectWithin10Percent(line.bandwidth_s / ring.bandwidth_s, 1.5);
}

TEST(CollectiveCostTest, PartOfARingIsALine) {
  // 4 consecutive chips of a 16-chip ring (v5e 16x16, row 0, columns 14, 15, 0, 1: across the
  // wraparound link) gather as a line of 4: 3 (V/4) / (eta W), 3 hops. V = 1 MiB:
  // 0.75 * 1048576 / 43.4e9 = 18.1 us; latency 3 us; T = t0 + 18.1 us.
  const Torus t = Slice("v5e", {16, 16});
  const CollectiveCost c = CostCollective(t, CollectiveKind::kAllGather, {{14, 15, 0, 1}}, kMiB);
  ExpectWithin10Percent(c.seconds, kV5eT0 + 0.75 * 1048576 / kV5eEtaW);
  EXPECT_EQ(c.algorithm, "line over torus axis 1 (4 chips of its 16-chip ring)");
  EXPECT_EQ(c.hops, 3);
}

TEST(CollectiveCostTest, SmallMessagesAreLatencyBound) {
  // TPU.md: below about W * 1 us per hop (45 kB on v5e) a collective is latency-bound:
  // T = max(t_hop * N/2, V / W_bidi).
  // v5e 16x16 rows (rings of 16), V = 16 KiB: bandwidth 16384 / (2 * 43.4e9) = 0.19 us,
  // latency 16/2 hops * 1 us = 8 us: T = t0 + 8 us = 10.29 us.
  const Torus t = Slice("v5e", {16, 16});
  const CollectiveCost ring = CostCollective(t, CollectiveKind::kAllGather, GroupsOver(t, {1}), 16 * 1024);
  ExpectWithin10Percent(ring.seconds, kV5eT0 + 8 * kHop);
  EXPECT_TRUE(ring.latency_bound);
  EXPECT_LT(ring.bandwidth_s, 0.1 * ring.latency_s);
  // A line of 8 (v5e 8x16, axis 0), V = 16 KiB: 7 hops = 7 us vs 7 * 2048 / 43.4e9 = 0.33
  // us: T = t0 + 7 us = 9.29 us.
  const Torus l = Slice("v5e", {8, 16});
  const CollectiveCost line = CostCollective(l, CollectiveKind::kAllGather, GroupsOver(l, {0}), 16 * 1024);
  ExpectWithin10Percent(line.seconds, kV5eT0 + 7 * kHop);
  EXPECT_TRUE(line.latency_bound);
  // At 64 MiB the same ring is bandwidth-bound.
  EXPECT_FALSE(CostCollective(t, CollectiveKind::kAllGather, GroupsOver(t, {1}), 64 * kMiB).latency_bound);
}

TEST(CollectiveCostTest, TwoAxesAtOnceDoubleTheBandwidth) {
  // v5e 16x16, one group of all 256 chips (k = 2 rings), V = 256 MiB = 268435456 B.
  // TPU.md: over k torus axes T ~ max(t_hop * sum N_i/2, V / (k W_bidi)):
  // latency (8 + 8) hops = 16 us; bandwidth 268435456 / (2 * 2 * 43.4e9) = 1546.3 us.
  // T = t0 + 1546.3 us: half of one axis' time for the same V.
  const Torus t = Slice("v5e", {16, 16});
  const int64_t v = 256 * kMiB;
  const CollectiveCost c = CostCollective(t, CollectiveKind::kAllGather, {}, v);
  ExpectWithin10Percent(c.seconds, kV5eT0 + 268435456 / (4 * kV5eEtaW));
  EXPECT_EQ(c.algorithm, "multi-axis over torus axes 0 (bidi ring), 1 (bidi ring)");
  EXPECT_EQ(c.hops, 16);
  const CollectiveCost one_axis = CostCollective(t, CollectiveKind::kAllGather, GroupsOver(t, {1}), v);
  ExpectWithin10Percent(c.bandwidth_s, one_axis.bandwidth_s / 2);
  // Every chip still receives (N-1)/N of V: the links carry (N-1) V in all (each shard
  // crosses N-1 links), now on both axes' links.
  EXPECT_NEAR(static_cast<double>(c.total_link_bytes()), 255.0 * static_cast<double>(v), 1e-6 * 255.0 * v);
  // The default (empty) groups are one group of every chip.
  std::vector<int64_t> everyone;
  for (int64_t chip = 0; chip < 256; ++chip) everyone.push_back(chip);
  EXPECT_DOUBLE_EQ(CostCollective(t, CollectiveKind::kAllGather, {everyone}, v).seconds, c.seconds);
}

TEST(CollectiveCostTest, ThreeAxesOfACube) {
  // v4 4x4x4 (every axis wraps), one group of all 64 chips, k = 3 rings, V = 64 MiB.
  // TPU.md: T ~ max(t_hop * (2 + 2 + 2), V / (3 W_bidi)): 67108864 / (6 * 43.15e9) = 259.2 us
  // vs 6 us: T = t0 + 259.2 us.
  const Torus t = Slice("v4", {4, 4, 4});
  const CollectiveCost c = CostCollective(t, CollectiveKind::kAllGather, {}, 64 * kMiB);
  ExpectWithin10Percent(c.seconds, kV4T0 + 67108864 / (6 * kV4EtaW));
  EXPECT_EQ(c.hops, 6);
  EXPECT_EQ(c.algorithm, "multi-axis over torus axes 0 (bidi ring), 1 (bidi ring), 2 (bidi ring)");
  // Two of the three axes (groups = the 4 planes z = const of 16 chips): k = 2,
  // 67108864 / (4 * 43.15e9) = 388.8 us; latency 4 us.
  const CollectiveCost planes = CostCollective(t, CollectiveKind::kAllGather, GroupsOver(t, {0, 1}), 64 * kMiB);
  ExpectWithin10Percent(planes.seconds, kV4T0 + 67108864 / (4 * kV4EtaW));
  EXPECT_EQ(planes.hops, 4);
}

TEST(CollectiveCostTest, ACubeWithoutWraparound) {
  // v4 2x2x2 (smaller than a cube: no wraparound), all 8 chips, V = 8 MiB. Each axis is a
  // line of 2, which moves (2-1)(V/2) / W = V / (2W): the rate of a bidi ring (V / W_bidi),
  // so TPU.md's k-axis formula holds with k = 3: 8388608 / (6 * 43.15e9) = 32.4 us; latency
  // 1 + 1 + 1 = 3 hops = 3 us. T = t0 + 32.4 us.
  const Torus t = Slice("v4", {2, 2, 2});
  const CollectiveCost c = CostCollective(t, CollectiveKind::kAllGather, {}, 8 * kMiB);
  ExpectWithin10Percent(c.seconds, kV4T0 + 8388608 / (6 * kV4EtaW));
  EXPECT_EQ(c.hops, 3);
  EXPECT_EQ(c.algorithm,
            "multi-axis over torus axes 0 (line, no wraparound), 1 (line, no wraparound), 2 (line, no wraparound)");
}

TEST(CollectiveCostTest, AllReduceIsReduceScatterPlusAllGather) {
  // TPU.md: ReduceScatter costs what AllGather costs; AllReduce = RS + AG ~ 2V / W_bidi.
  // v5e 16x16 rows, V = 64 MiB: 2 * 67108864 / (2 * 43.4e9) = 1546.3 us; T = t0 + 1546.3 us
  // (t0 once: one collective); twice the all-gather's bytes on every link.
  const Torus t = Slice("v5e", {16, 16});
  const auto rows = GroupsOver(t, {1});
  const int64_t v = 64 * kMiB;
  const CollectiveCost ag = CostCollective(t, CollectiveKind::kAllGather, rows, v);
  const CollectiveCost rs = CostCollective(t, CollectiveKind::kReduceScatter, rows, v);
  const CollectiveCost ar = CostCollective(t, CollectiveKind::kAllReduce, rows, v);
  EXPECT_DOUBLE_EQ(rs.seconds, ag.seconds);
  EXPECT_EQ(rs.max_link_bytes(), ag.max_link_bytes());
  ExpectWithin10Percent(ar.seconds, kV5eT0 + 2.0 * 67108864 / (2 * kV5eEtaW));
  EXPECT_DOUBLE_EQ(ar.seconds - ar.fixed_s, 2 * (ag.seconds - ag.fixed_s));
  EXPECT_EQ(ar.max_link_bytes(), 2 * ag.max_link_bytes());
  EXPECT_EQ(ar.hops, 2 * ag.hops);
  EXPECT_EQ(ar.op, "all-reduce");
  EXPECT_EQ(ar.algorithm, "reduce-scatter + all-gather: bidi ring over torus axis 1 (wraps), 16 groups at once");
  // Multi-axis too: all 256 chips, V = 256 MiB: 2 * 268435456 / (2 * 2 * 43.4e9) = 3092.5 us.
  ExpectWithin10Percent(CostCollective(t, CollectiveKind::kAllReduce, {}, 256 * kMiB).seconds,
                        kV5eT0 + 2.0 * 268435456 / (4 * kV5eEtaW));
}

TEST(CollectiveCostTest, AllToAllIsAQuarterOfAllGatherOnABidirectionalRing) {
  // TPU.md: AllToAll on a bidirectional ring ~ AllGather / 4. v5e 16x16 rows (rings of 16),
  // V = 64 MiB, every chip sending V/256 to each of the 15 others by the shorter way (8 apart:
  // half each way). A + link carries the pairs 1..7 apart that cross it (1 + ... + 7 = 28)
  // and half of the 8 that are 8 apart: 32 pieces of V/256 = V/8, so
  // T = t0 + (V/8) / (eta W) = t0 + 67108864 / (8 * 43.4e9) = t0 + 193.3 us
  // = t0 + (V / W_bidi) / 4. Latency: 8 hops.
  const Torus t = Slice("v5e", {16, 16});
  const int64_t v = 64 * kMiB;
  const CollectiveCost a2a = CostCollective(t, CollectiveKind::kAllToAll, GroupsOver(t, {1}), v);
  ExpectWithin10Percent(a2a.seconds, kV5eT0 + 67108864 / (8 * kV5eEtaW));
  EXPECT_EQ(a2a.max_link_bytes(), v / 8);
  EXPECT_EQ(a2a.hops, 8);
  EXPECT_EQ(a2a.op, "all-to-all");
  EXPECT_EQ(a2a.algorithm, "routed pairwise within bidi ring over torus axis 1 (wraps), 16 groups at once");
  const CollectiveCost ag = CostCollective(t, CollectiveKind::kAllGather, GroupsOver(t, {1}), v);
  ExpectWithin10Percent(a2a.bandwidth_s, ag.bandwidth_s / 4);
  // On a line of 8 (v5e 8x16 axis 0) the middle + link carries the 4 x 4 pairs from the first
  // half to the second: 16 pieces of V/64 = V/4: T = t0 + 67108864 / (4 * 43.4e9) = t0 +
  // 386.6 us; latency 7 hops.
  const Torus l = Slice("v5e", {8, 16});
  const CollectiveCost line = CostCollective(l, CollectiveKind::kAllToAll, GroupsOver(l, {0}), v);
  ExpectWithin10Percent(line.seconds, kV5eT0 + 67108864 / (4 * kV5eEtaW));
  EXPECT_EQ(line.max_link_bytes(), v / 4);
  EXPECT_EQ(line.hops, 7);
}

// The all-to-all's bytes on every link, counted pair by pair in the test: every chip sends
// V/N^2 to every other chip of its group along Torus::Route, half each way round a ring where
// both ways are equally short.
std::vector<double> AllToAllLoadsByHand(const Torus& t, const std::vector<std::vector<int64_t>>& groups, double v) {
  std::vector<double> loads(static_cast<size_t>(t.num_links()), 0.0);
  for (const auto& group : groups) {
    const double piece = v / static_cast<double>(group.size() * group.size());
    for (int64_t src : group) {
      for (int64_t dst : group) {
        if (src == dst) continue;
        const std::vector<int64_t> from = t.Coords(src), to = t.Coords(dst);
        std::vector<std::vector<int>> ways(1);
        for (int a = 0; a < t.rank(); ++a) {
          const size_t ua = static_cast<size_t>(a);
          const int shorter = t.AxisOffset(a, from[ua], to[ua]) < 0 ? -1 : +1;
          std::vector<std::vector<int>> next;
          for (const std::vector<int>& w : ways) {
            next.push_back(w);
            next.back().push_back(shorter);
            if (t.AxisTie(a, from[ua], to[ua])) {
              next.push_back(w);
              next.back().push_back(-shorter);
            }
          }
          ways = next;
        }
        for (const std::vector<int>& w : ways) {
          for (const Link& l : t.Route(src, dst, w)) {
            loads[static_cast<size_t>(l.id)] += piece / static_cast<double>(ways.size());
          }
        }
      }
    }
  }
  return loads;
}

void ExpectAllToAllLoadsByHand(const Torus& t, const std::vector<std::vector<int64_t>>& groups) {
  const int64_t v = 64 * kMiB;
  const CollectiveCost c = CostCollective(t, CollectiveKind::kAllToAll, groups, v);
  std::vector<std::vector<int64_t>> all = groups;
  if (all.empty()) {  // one group of every chip
    all.emplace_back();
    for (int64_t chip = 0; chip < t.num_chips(); ++chip) all.back().push_back(chip);
  }
  const std::vector<double> by_hand = AllToAllLoadsByHand(t, all, static_cast<double>(v));
  std::vector<double> model(by_hand.size(), 0.0);
  for (const LinkBytes& l : c.link_bytes) model[static_cast<size_t>(l.link)] = static_cast<double>(l.bytes);
  double busiest = 0;
  for (size_t id = 0; id < by_hand.size(); ++id) {
    EXPECT_NEAR(model[id], by_hand[id], 1.0) << c.algorithm << ": " << t.Describe(t.links()[id]);
    busiest = std::max(busiest, by_hand[id]);
  }
  // Bandwidth-bound at 64 MiB: T = t0 + busiest / (eta W).
  ExpectWithin10Percent(c.seconds, t.link().fixed_s + busiest / t.link().effective_bandwidth());
}

TEST(CollectiveCostTest, AllToAllLoadsMatchPairByPairRouting) {
  // Sub-grids are costed per axis without enumerating pairs; scattered groups pair by pair.
  // Both must equal the routes counted one by one.
  const Torus cube = Slice("v4", {4, 4, 4});
  ExpectAllToAllLoadsByHand(cube, {});
  ExpectAllToAllLoadsByHand(cube, GroupsOver(cube, {0, 2}));
  const Torus v5e = Slice("v5e", {8, 16});
  ExpectAllToAllLoadsByHand(v5e, GroupsOver(v5e, {0, 1}));
  // Columns 3..14 of rows 0..1: a segment of 12 of the 16-ring's chips, whose shortest routes
  // leave the segment over the wraparound links.
  std::vector<int64_t> segment;
  for (int64_t r = 0; r < 2; ++r) {
    for (int64_t col = 3; col <= 14; ++col) segment.push_back(v5e.ChipAt({r, col}));
  }
  ExpectAllToAllLoadsByHand(v5e, {segment});
  // Scattered: every other chip of row 0 and of row 5.
  ExpectAllToAllLoadsByHand(v5e, {{0, 2, 4, 6, 8, 10}, {80, 82, 84, 87}});
}

TEST(CollectiveCostTest, ScatteredGroupsAreRoutedRingsAndShareLinks) {
  // v5e 4x2 (no wraparound), column 0 = chips 0, 2, 4, 6 at rows 0..3. Group {0, 4} (rows 0
  // and 2) is not a contiguous sub-grid: a ring of 2 routed over the torus, each step 2 hops:
  // 0 -> 4 over links 0->2->4, 4 -> 0 over 4->2->0; each direction carries one shard of V/2.
  // Alone: T = t0 + max(2 us, (V/2) / (eta W)); V = 8 MiB: 4194304 / 43.4e9 = 96.6 us.
  const Torus t = Slice("v5e", {4, 2});
  const int64_t v = 8 * kMiB;
  const CollectiveCost alone = CostCollective(t, CollectiveKind::kAllGather, {{0, 4}}, v);
  ExpectWithin10Percent(alone.seconds, kV5eT0 + 4194304 / kV5eEtaW);
  EXPECT_EQ(alone.algorithm, "bidi ring of 2 chips routed over the torus");
  EXPECT_EQ(alone.hops, 2);
  // With group {2, 6} (rows 1 and 3) at the same time: 2 -> 6 goes 2->4->6 and 6 -> 2 goes
  // 6->4->2, so links 2->4 and 4->2 carry both groups' shards: V in all, and both groups
  // take twice as long: T = t0 + 8388608 / 43.4e9 = t0 + 193.3 us.
  const CollectiveCost shared = CostCollective(t, CollectiveKind::kAllGather, {{0, 4}, {2, 6}}, v);
  ExpectWithin10Percent(shared.seconds, kV5eT0 + 8388608 / kV5eEtaW);
  EXPECT_EQ(shared.max_link_bytes(), v);
  EXPECT_EQ(shared.algorithm, "bidi ring of 2 chips routed over the torus, 2 groups at once");
  // Columns {0, 1} and {4, 5} (rows 0 and 2, each a contiguous line of 2 along axis 1) share
  // nothing: each is a line of 2, (V/2) / (eta W) = 96.6 us.
  const CollectiveCost apart = CostCollective(t, CollectiveKind::kAllGather, {{0, 1}, {4, 5}}, v);
  ExpectWithin10Percent(apart.seconds, kV5eT0 + 4194304 / kV5eEtaW);
}

TEST(CollectiveCostTest, ARoutedGroupCrossingASubGridSharesItsLinks) {
  // v5e 4x4 (no wraparound). Group A = row 0, columns 0..2 = chips {0, 1, 2}: a line of 3
  // along axis 1; its + links 0->1 and 1->2 carry 1 and 2 shards of V/3, so alone
  // T = t0 + (2V/3) / (eta W). Group B = {4, 3} = (1,0), (0,3) is no sub-grid: a routed
  // ring of 2. 4 -> 3 goes (1,0)->(0,0) on axis 0, then (0,0)->(0,1)->(0,2)->(0,3) on axis
  // 1, over A's links 0->1 and 1->2, carrying one shard of V/2. Link 1->2 then carries
  // 2V/3 + V/2 = 7V/6: T = t0 + (7V/6) / (eta W). V = 8 MiB: alone 128.9 us, together
  // 225.5 us; latency: B's 4 hops.
  const Torus t = Slice("v5e", {4, 4});
  const int64_t v = 8 * kMiB;
  const CollectiveCost alone = CostCollective(t, CollectiveKind::kAllGather, {{0, 1, 2}}, v);
  ExpectWithin10Percent(alone.seconds, kV5eT0 + (2.0 / 3) * 8388608 / kV5eEtaW);
  EXPECT_EQ(alone.algorithm, "line over torus axis 1 (no wraparound)");
  const CollectiveCost both = CostCollective(t, CollectiveKind::kAllGather, {{0, 1, 2}, {4, 3}}, v);
  ExpectWithin10Percent(both.seconds, kV5eT0 + (7.0 / 6) * 8388608 / kV5eEtaW);
  EXPECT_EQ(both.max_link_bytes(), 7 * v / 6);
  EXPECT_EQ(both.hops, 4);
  EXPECT_EQ(both.algorithm,
            "line over torus axis 1 (no wraparound); bidi ring of 2 chips routed over the torus, 2 groups at once");
}

TEST(CollectiveCostTest, PermuteWithoutContention) {
  // TPU.md: T ~ bytes / (ports used * W) + hops * latency, plus t0.
  // v5e 16x16, every chip sends 1 MiB to its + neighbour along axis 1 (a ring: (r, 15) ->
  // (r, 0) over the wraparound link): 256 transfers of 1 hop on 256 distinct links.
  // T = t0 + 1 us + 1048576 / 43.4e9 = 2.29 + 1 + 24.16 = 27.45 us.
  const Torus t = Slice("v5e", {16, 16});
  std::vector<std::pair<int64_t, int64_t>> shift;
  for (int64_t chip = 0; chip < 256; ++chip) {
    std::vector<int64_t> c = t.Coords(chip);
    c[1] = (c[1] + 1) % 16;
    shift.emplace_back(chip, t.ChipAt(c));
  }
  const CollectiveCost c = CostPermute(t, shift, kMiB);
  ExpectWithin10Percent(c.seconds, kV5eT0 + kHop + 1048576 / kV5eEtaW);
  EXPECT_EQ(c.hops, 1);
  EXPECT_EQ(c.max_link_bytes(), kMiB);
  EXPECT_EQ(c.link_bytes.size(), 256u);
  EXPECT_EQ(c.op, "collective-permute");
  EXPECT_EQ(c.algorithm, "256 transfers routed hop by hop (dimension-ordered), no link shared");
  EXPECT_THAT(c.ToString(), HasSubstr("s = t0 2.29e-06 + latency 1e-06 + bandwidth 2.42e-05"));

  // Without wraparound (v5e 4x2, axis 0 a line), the same cyclic shift along axis 0: rows
  // 0->1, 1->2, 2->3 use the + links once each; 3->0 goes back 3 hops over the - links, also
  // used once. No link is shared, the longest route is 3 hops:
  // T = t0 + 3 us + 1048576 / 43.4e9 = 29.45 us.
  const Torus line = Slice("v5e", {4, 2});
  std::vector<std::pair<int64_t, int64_t>> cyclic;
  for (int64_t chip = 0; chip < 8; ++chip) cyclic.emplace_back(chip, (chip + 2) % 8);
  const CollectiveCost d = CostPermute(line, cyclic, kMiB);
  ExpectWithin10Percent(d.seconds, kV5eT0 + 3 * kHop + 1048576 / kV5eEtaW);
  EXPECT_EQ(d.hops, 3);
  EXPECT_EQ(d.max_link_bytes(), kMiB);
}

TEST(CollectiveCostTest, PermuteWithContention) {
  // v5e 8x16, column 0 reversed along axis 0 (a line of 8): rows 0<->7, 1<->6, 2<->5, 3<->4.
  // The + link (3,0)->(4,0) carries 0->7, 1->6, 2->5 and 3->4: 4 transfers share it (as do
  // the - link (4,0)->(3,0)'s 4), so it takes 4 x 1 MiB / (eta W); the longest route is 7
  // hops: T = t0 + 7 us + 4 * 1048576 / 43.4e9 = 2.29 + 7 + 96.64 = 105.9 us.
  const Torus t = Slice("v5e", {8, 16});
  std::vector<std::pair<int64_t, int64_t>> reverse;
  for (int64_t r = 0; r < 8; ++r) reverse.emplace_back(t.ChipAt({r, 0}), t.ChipAt({7 - r, 0}));
  const CollectiveCost c = CostPermute(t, reverse, kMiB);
  ExpectWithin10Percent(c.seconds, kV5eT0 + 7 * kHop + 4.0 * 1048576 / kV5eEtaW);
  EXPECT_EQ(c.hops, 7);
  EXPECT_EQ(c.max_link_bytes(), 4 * kMiB);
  EXPECT_THAT(c.algorithm, HasSubstr("8 transfers routed hop by hop (dimension-ordered), "));
  EXPECT_THAT(c.algorithm, HasSubstr("busiest by 4"));
  // The same reversal on a ring of 16 (v5e 16x16, row 0 along axis 1: c -> 15 - c) takes the
  // shorter way round: (15 - 2c) mod 16 hops the + way or the rest the - way, so c = 0..3 go
  // 1, 3, 5, 7 hops the - way (all over the wraparound link (0,0)->(0,15)), c = 4..7 go 7, 5,
  // 3, 1 hops the + way (all over (0,7)->(0,8)), c = 8..11 the - way over (0,8)->(0,7) and
  // c = 12..15 the + way over (0,15)->(0,0). Four transfers share each of those links and the
  // longest route is 7 hops: T = t0 + 7 us + 4 * 1 MiB / (eta W), as on the line.
  const Torus r = Slice("v5e", {16, 16});
  std::vector<std::pair<int64_t, int64_t>> ring_reverse;
  for (int64_t c16 = 0; c16 < 16; ++c16) ring_reverse.emplace_back(c16, 15 - c16);
  const CollectiveCost rc = CostPermute(r, ring_reverse, kMiB);
  ExpectWithin10Percent(rc.seconds, kV5eT0 + 7 * kHop + 4.0 * 1048576 / kV5eEtaW);
  EXPECT_EQ(rc.hops, 7);
  EXPECT_EQ(rc.max_link_bytes(), 4 * kMiB);
}

TEST(CollectiveCostTest, NothingToMoveCostsNothing) {
  const Torus t = Slice("v5e", {4, 2});
  const CollectiveCost one = CostCollective(t, CollectiveKind::kAllReduce, {{0}, {1}, {2}}, kMiB);
  EXPECT_EQ(one.seconds, 0);
  EXPECT_TRUE(one.link_bytes.empty());
  EXPECT_EQ(one.algorithm, "no communication (every group is one chip)");
  const CollectiveCost self = CostPermute(t, {{0, 0}, {3, 3}}, kMiB);
  EXPECT_EQ(self.seconds, 0);
  EXPECT_EQ(self.algorithm, "nothing moves over ICI (every transfer stays on its chip)");
  EXPECT_EQ(CostPermute(t, {}, kMiB).seconds, 0);
}

TEST(CollectiveCostTest, Errors) {
  const Torus t = Slice("v5e", {4, 2});
  EXPECT_THAT(ValueErrorOf([&] {
                CostCollective(t, CollectiveKind::kAllGather, {{0, 1}, {1, 2}}, 8);
              }),
              HasSubstr("[all-gather] chip 1 is in group 0 and group 1 of [{0,1}, {1,2}]"));
  EXPECT_THAT(ValueErrorOf([&] {
                CostCollective(t, CollectiveKind::kAllReduce, {{0, 8}}, 8);
              }),
              HasSubstr("[all-reduce] chip 8 is not on the v5e 4x2 torus"));
  EXPECT_THAT(ValueErrorOf([&] {
                CostCollective(t, CollectiveKind::kAllToAll, {{0, 1}, {}}, 8);
              }),
              HasSubstr("group 1 of [{0,1}, {}] is empty"));
  EXPECT_THAT(ValueErrorOf([&] {
                CostCollective(t, CollectiveKind::kReduceScatter, {{0, 1}}, -1);
              }),
              HasSubstr("[reduce-scatter] bytes must be >= 0, got -1"));
  EXPECT_THAT(ValueErrorOf([&] {
                CostPermute(t, {{0, 1}, {0, 2}}, 8);
              }),
              HasSubstr("chip 0 is the source of pairs 0 and 1"));
  EXPECT_THAT(ValueErrorOf([&] {
                CostPermute(t, {{0, 1}, {2, 1}}, 8);
              }),
              HasSubstr("chip 1 is the target of pairs 0 and 1"));
  EXPECT_THAT(ValueErrorOf([&] { CostPermute(t, {{0, 9}}, 8); }), HasSubstr("chip 9 is not on"));
}

}  // namespace
}  // namespace jx::ici::collective_cost_test

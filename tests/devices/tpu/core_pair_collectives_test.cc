// Collectives on a v3-8 whose devices are TensorCores (two per chip, as JAX lists them): the
// two cores of one chip meet over the on-chip path (no ICI hop), cores of different chips over
// ICI links, each priced by the interconnect model (collective_cost.h). By hand, with the v3
// constants (chip_specs.cc): W = 1e11 B/s one-way for an ICI link and for the on-chip path,
// eta = 86.8/90, t0 = 2.29 us, t_hop = 1 us per ICI hop, none on the chip.
// An all-reduce over pairs (a line of 2 devices) moves V/2 each way per phase, two phases:
// T = t0 + max(hops * t_hop, V / (eta W)), hops 2 across chips (one per phase), 0 on the chip.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "jx/compiler/hlo/hlo_computation.h"
#include "jx/compiler/hlo/hlo_module.h"
#include "jx/compiler/hlo/hlo_parser.h"
#include "jx/core/str_util.h"
#include "jx/devices/interconnect/collective_cost.h"
#include "jx/devices/interconnect/torus.h"
#include "jx/devices/tpu/ici_collective_timer.h"
#include "jx/devices/tpu/pod.h"
#include "jx/devices/tpu/tpu_chip.h"

namespace jx::tpu::core_pair_collectives_test {
namespace {

using ::testing::HasSubstr;

constexpr double kEtaW = 86.8 / 90 * 1e11;
constexpr double kT0 = 2.29e-6;
constexpr double kHop = 1e-6;

// Device i of make_pod("v3", {2, 2}): chip i / 2 (row-major over 2x2), core i % 2.
const std::vector<std::vector<int64_t>> kCorePairs = {{0, 1}, {2, 3}, {4, 5}, {6, 7}};
// The same core of neighbouring chips along the pod's axis 1: chips (x, 0) and (x, 1).
const std::vector<std::vector<int64_t>> kAcrossChips = {{0, 2}, {1, 3}, {4, 6}, {5, 7}};

TEST(CorePairCollectivesTest, TheCoresOfAChipMeetOnTheChipWithoutAnIciHop) {
  const Pod pod = make_pod("v3", {2, 2});
  const ici::Torus& torus = pod.torus();
  for (const int64_t bytes : {int64_t{64} << 10, int64_t{64} << 20}) {
    SCOPED_TRACE(bytes);
    const double v = static_cast<double>(bytes);
    const ici::CollectiveCost pair = ici::CostCollective(torus, ici::CollectiveKind::kAllReduce, kCorePairs, bytes);
    const ici::CollectiveCost across =
        ici::CostCollective(torus, ici::CollectiveKind::kAllReduce, kAcrossChips, bytes);
    EXPECT_NEAR(pair.seconds, kT0 + v / kEtaW, 1e-12);
    EXPECT_EQ(pair.latency_s, 0);
    EXPECT_NEAR(across.seconds, kT0 + std::max(2 * kHop, v / kEtaW), 1e-12);
    EXPECT_EQ(across.hops, 2);
    for (const ici::LinkBytes& l : pair.link_bytes) EXPECT_TRUE(torus.links()[l.link].on_chip);
    for (const ici::LinkBytes& l : across.link_bytes) EXPECT_FALSE(torus.links()[l.link].on_chip);
    EXPECT_THAT(pair.algorithm, HasSubstr("line over torus axis 2"));
  }
  // 64 KiB is latency-bound across chips (2 us of hops against 0.68 us of bytes); on the chip
  // only t0 and the bytes remain.
  const ici::CollectiveCost small_pair =
      ici::CostCollective(torus, ici::CollectiveKind::kAllReduce, kCorePairs, int64_t{64} << 10);
  const ici::CollectiveCost small_across =
      ici::CostCollective(torus, ici::CollectiveKind::kAllReduce, kAcrossChips, int64_t{64} << 10);
  EXPECT_LT(small_pair.seconds, small_across.seconds);
  // A ppermute from core 0 to core 1 of every chip: one on-chip hop, no ICI latency.
  const ici::CollectiveCost permute = ici::CostPermute(torus, {{0, 1}, {2, 3}, {4, 5}, {6, 7}}, 1 << 20);
  EXPECT_NEAR(permute.seconds, kT0 + (1 << 20) / kEtaW, 1e-12);
  EXPECT_EQ(permute.hops, 1);
}

// The same on a v7 slice of 2x2x1 chips (a 3D torus smaller than a cube: lines), with the 3D
// generations' constants: W = 9e10 B/s one-way for an ICI link and (a model assumption,
// chip_specs.cc) the cores' die-to-die path, eta = 86.3/90, t0 = 4.55 us. Devices are numbered
// as on the v3-8: chip i / 2 (row-major over 2x2x1), core i % 2.
TEST(CorePairCollectivesTest, AV7ChipsCoresMeetOnTheChipOfA3DTorus) {
  constexpr double kV7EtaW = 86.3 / 90 * 9e10;
  constexpr double kV7T0 = 4.55e-6;
  const Pod pod = make_pod("v7", {2, 2, 1});
  const ici::Torus& torus = pod.torus();
  const int64_t bytes = int64_t{64} << 20;
  const double v = static_cast<double>(bytes);
  const ici::CollectiveCost pair = ici::CostCollective(torus, ici::CollectiveKind::kAllReduce, kCorePairs, bytes);
  const ici::CollectiveCost across = ici::CostCollective(torus, ici::CollectiveKind::kAllReduce, kAcrossChips, bytes);
  EXPECT_NEAR(pair.seconds, kV7T0 + v / kV7EtaW, 1e-12);
  EXPECT_EQ(pair.latency_s, 0);
  EXPECT_THAT(pair.algorithm, HasSubstr("line over torus axis 3"));
  for (const ici::LinkBytes& l : pair.link_bytes) EXPECT_TRUE(torus.links()[l.link].on_chip);
  EXPECT_NEAR(across.seconds, kV7T0 + std::max(2 * kHop, v / kV7EtaW), 1e-12);
  EXPECT_EQ(across.hops, 2);
  for (const ici::LinkBytes& l : across.link_bytes) EXPECT_FALSE(torus.links()[l.link].on_chip);
  // All 8 devices: the chips' 2x2 plane and the core pairs; the bytes split over the three
  // axes' links (several axes add their bandwidth), so it beats the core pair's one axis.
  const ici::CollectiveCost all =
      ici::CostCollective(torus, ici::CollectiveKind::kAllReduce, {{0, 1, 2, 3, 4, 5, 6, 7}}, bytes);
  EXPECT_THAT(all.algorithm, HasSubstr("multi-axis over torus axes 0 (line"));
  EXPECT_THAT(all.algorithm, HasSubstr("3 (line"));
  EXPECT_LT(all.seconds, pair.seconds);
  // A ppermute from core 0 to core 1 of every chip: one on-chip hop.
  const ici::CollectiveCost permute = ici::CostPermute(torus, {{0, 1}, {2, 3}, {4, 5}, {6, 7}}, 1 << 20);
  EXPECT_NEAR(permute.seconds, kV7T0 + (1 << 20) / kV7EtaW, 1e-12);
  EXPECT_EQ(permute.hops, 1);
}

// A compiled program's collectives are timed on the pod's torus at its devices' vertices:
// replica groups of partition ids land on the core pairs and on the chips they name.
TEST(CorePairCollectivesTest, AProgramsAllReduceIsTimedOnItsDevicesCores) {
  const Pod pod = make_pod("v3", {2, 2});
  std::vector<const TpuChip*> devices;
  for (const Device* d : pod.devices()) devices.push_back(static_cast<const TpuChip*>(d));
  const IciCollectiveTimer timer(pod.torus(), devices);
  auto all_reduce = [&](const std::string& groups) {
    const std::string text = StrCat(R"(HloModule spmd

%sum (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %x, f32[] %y)
}

ENTRY %main (a: f32[16384]) -> f32[16384] {
  %a = f32[16384]{0} parameter(0)
  ROOT %ar = f32[16384]{0} all-reduce(%a), channel_id=1, replica_groups=)",
                                    groups, R"(, use_global_device_ids=true, to_apply=%sum
})");
    absl::StatusOr<std::unique_ptr<hlo::HloModule>> module = hlo::ParseHloModule(text);
    EXPECT_TRUE(module.ok()) << module.status();
    absl::StatusOr<double> seconds = timer.Seconds(*(*module)->entry_computation()->root_instruction());
    EXPECT_TRUE(seconds.ok()) << seconds.status();
    return *seconds;
  };
  const double v = 16384 * 4;
  EXPECT_NEAR(all_reduce("{{0,1},{2,3},{4,5},{6,7}}"), kT0 + v / kEtaW, 1e-12);
  EXPECT_NEAR(all_reduce("{{0,2},{1,3},{4,6},{5,7}}"), kT0 + 2 * kHop, 1e-12);
}

}  // namespace
}  // namespace jx::tpu::core_pair_collectives_test

// make_pod: shapes per generation and their errors, chips in row-major order with their
// torus coordinates, ids after the CPU's and unique across pods, jx::devices("tpu"), and
// each chip's Device properties as JAX prints them.
#include "jx/devices/tpu/pod.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "jx/core/errors.h"
#include "jx/devices/device_put.h"
#include "jx/devices/interconnect/torus.h"
#include "jx/devices/tpu/tpu_chip.h"
#include "jx/devices/tpu/tpu_client.h"

namespace jx::tpu::pod_test {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

template <typename F>
std::string ValueErrorOf(F f) {
  try {
    f();
  } catch (const ValueError& e) {
    return e.what();
  }
  return "no ValueError";
}

TEST(PodTest, A2DPodOfV5eChips) {
  Pod pod = make_pod("v5e", {4, 2});
  EXPECT_EQ(pod.generation(), "v5e");
  EXPECT_THAT(pod.shape(), ElementsAre(4, 2));
  EXPECT_EQ(pod.num_chips(), 8);
  const std::vector<const Device*> chips = pod.devices();
  ASSERT_EQ(chips.size(), 8u);
  // Row-major over {4, 2}: the last axis fastest, so a {4, 2} mesh lines up with the torus.
  EXPECT_THAT(pod.coords(chips[0]), ElementsAre(0, 0));
  EXPECT_THAT(pod.coords(chips[1]), ElementsAre(0, 1));
  EXPECT_THAT(pod.coords(chips[3]), ElementsAre(1, 1));
  EXPECT_THAT(pod.coords(chips[7]), ElementsAre(3, 1));
  EXPECT_EQ(&pod.chip({2, 1}), chips[5]);
  EXPECT_THAT(ValueErrorOf([&] { pod.chip({4, 0}); }), HasSubstr("not on the v5e pod of shape {4, 2}"));
}

TEST(PodTest, A3DCubeOfV4Chips) {
  Pod cube = make_pod("v4", {4, 4, 4});
  ASSERT_EQ(cube.devices().size(), 64u);
  EXPECT_THAT(cube.coords(cube.devices()[63]), ElementsAre(3, 3, 3));
  EXPECT_THAT(cube.coords(cube.devices()[17]), ElementsAre(1, 0, 1));
  EXPECT_EQ(cube.spec().torus_rank, 3);
}

// A Colab TPU v2-8 as JAX sees it: 2x2 chips, 8 devices, one per TensorCore (the scaling
// book's profiling chapter arranges them as a 4x2 mesh), each with half a chip's HBM.
TEST(PodTest, AV2EightIsEightCoreDevices) {
  Pod pod = make_pod("v2", {2, 2});
  ASSERT_EQ(pod.devices().size(), 8u);
  EXPECT_EQ(pod.num_chips(), 4);
  EXPECT_EQ(pod.devices()[0]->device_kind(), "TPU v2");
  EXPECT_EQ(pod.devices()[7]->memory_stats().bytes_limit, int64_t{8} << 30);
  EXPECT_THAT(pod.torus().shape(), ElementsAre(2, 2, 2));
  EXPECT_THAT(pod.torus().wraparound(), ElementsAre(false, false, false));
  EXPECT_THAT(ValueErrorOf([] { make_pod("v2", {32, 2}); }), HasSubstr("full v2 pod 16x16 (256 chips)"));
}

// A v3-8 as jax.devices() lists it: 4 chips of 2 TensorCores, each core a device with
// TpuDevice's coords (the chip's) and core_on_chip, half the chip's 32 GiB and 1.4e14.
TEST(PodTest, AV3EightIsFourChipsOfTwoCoreDevices) {
  Pod pod = make_pod("v3", {2, 2});
  EXPECT_EQ(pod.num_chips(), 4);
  EXPECT_EQ(pod.num_devices(), 8);
  const std::vector<const Device*> devices = pod.devices();
  ASSERT_EQ(devices.size(), 8u);
  const std::vector<std::vector<int64_t>> coords = {{0, 0}, {0, 0}, {0, 1}, {0, 1}, {1, 0}, {1, 0}, {1, 1}, {1, 1}};
  for (size_t i = 0; i < devices.size(); ++i) {
    SCOPED_TRACE(i);
    const auto& core = static_cast<const TpuChip&>(*devices[i]);
    EXPECT_EQ(core.id(), devices[0]->id() + static_cast<int>(i));
    EXPECT_EQ(core.coords(), coords[i]);
    EXPECT_EQ(pod.coords(&core), coords[i]);
    EXPECT_EQ(core.core_on_chip(), static_cast<int>(i % 2));
    EXPECT_EQ(core.device_kind(), "TPU v3");
    EXPECT_EQ(core.memory_stats().bytes_limit, int64_t{16} << 30);
    EXPECT_DOUBLE_EQ(core.spec().bf16_flops, 7e13);
    EXPECT_EQ(&pod.chip(coords[i], core.core_on_chip()), &core);
  }
  EXPECT_EQ(devices[5]->ToString(), "TPU_" + std::to_string(devices[5]->id()) + "(process=0,(1,0,0,1))");
  EXPECT_THAT(ValueErrorOf([&] { pod.chip({0, 0}, 2); }), HasSubstr("core_on_chip 2 is not a core of a v3 chip"));
  // The torus of cores: 2x2 chips (lines: v3 wraps only at its full 32), then the core axis.
  EXPECT_THAT(pod.torus().shape(), ElementsAre(2, 2, 2));
  EXPECT_EQ(pod.torus().core_axis(), 2);
  EXPECT_THAT(pod.torus().wraparound(), ElementsAre(false, false, false));
}

// A v3-32: 4x4 chips, 32 devices; the slice must fit the 32x32-chip pod.
TEST(PodTest, AV3ThirtyTwoIsSixteenChips) {
  Pod pod = make_pod("v3", {4, 4});
  EXPECT_EQ(pod.num_chips(), 16);
  ASSERT_EQ(pod.devices().size(), 32u);
  const auto& last = static_cast<const TpuChip&>(*pod.devices()[31]);
  EXPECT_THAT(last.coords(), ElementsAre(3, 3));
  EXPECT_EQ(last.core_on_chip(), 1);
  EXPECT_EQ(&pod.chip({2, 1}, 1), pod.devices()[2 * (2 * 4 + 1) + 1]);
  EXPECT_THAT(pod.torus().shape(), ElementsAre(4, 4, 2));
  // ICI: 8 lines of 4 cores along each chip axis, 6 one-way links each; on-chip: 2 per chip.
  const std::vector<ici::Link>& links = pod.torus().links();
  EXPECT_EQ(links.size(), 2u * 8 * 6 + 16 * 2);
  EXPECT_EQ(std::count_if(links.begin(), links.end(), [](const ici::Link& l) { return l.on_chip; }), 16 * 2);
  EXPECT_THAT(ValueErrorOf([] { make_pod("v3", {64, 2}); }), HasSubstr("full v3 pod 32x32 (1024 chips)"));
}

// A v7 (Ironwood) 2x2x1 slice as jax.devices() lists TPU7x: 4 chips of 2 TensorCores, each
// core a device with the chip's 3D coords and core_on_chip, half the chip's 192 GB and 2.3e15.
TEST(PodTest, AV7SliceIsChipsOfTwoCoreDevices) {
  Pod pod = make_pod("v7", {2, 2, 1});
  EXPECT_EQ(pod.num_chips(), 4);
  const std::vector<const Device*> devices = pod.devices();
  ASSERT_EQ(devices.size(), 8u);
  const std::vector<std::vector<int64_t>> coords = {{0, 0, 0}, {0, 0, 0}, {0, 1, 0}, {0, 1, 0},
                                                    {1, 0, 0}, {1, 0, 0}, {1, 1, 0}, {1, 1, 0}};
  for (size_t i = 0; i < devices.size(); ++i) {
    SCOPED_TRACE(i);
    const auto& core = static_cast<const TpuChip&>(*devices[i]);
    EXPECT_EQ(core.id(), devices[0]->id() + static_cast<int>(i));
    EXPECT_EQ(core.coords(), coords[i]);
    EXPECT_EQ(core.core_on_chip(), static_cast<int>(i % 2));
    EXPECT_EQ(core.device_kind(), "TPU7x");
    EXPECT_EQ(core.memory_stats().bytes_limit, int64_t{96} * 1000 * 1000 * 1000);
    EXPECT_DOUBLE_EQ(core.spec().bf16_flops, 1.15e15);
    EXPECT_EQ(&pod.chip(coords[i], core.core_on_chip()), &core);
  }
  EXPECT_EQ(devices[7]->ToString(), "TPU_" + std::to_string(devices[7]->id()) + "(process=0,(1,1,0,1))");
  EXPECT_THAT(ValueErrorOf([&] { pod.chip({0, 0, 0}, 2); }), HasSubstr("core_on_chip 2 is not a core of a v7 chip"));
  // Smaller than a cube: no wraparound; the core axis is the torus' fourth.
  EXPECT_THAT(pod.torus().shape(), ElementsAre(2, 2, 1, 2));
  EXPECT_EQ(pod.torus().core_axis(), 3);
  EXPECT_THAT(pod.torus().wraparound(), ElementsAre(false, false, false, false));
}

// A v7 cube: 64 chips, 128 devices; every chip axis a ring of 4 (6 one-way ICI links per core
// vertex), the cores of each chip joined on the chip.
TEST(PodTest, AV7CubeIsThreeRingsOfChipsAndTheCoreAxis) {
  Pod pod = make_pod("v7", {4, 4, 4});
  EXPECT_EQ(pod.num_chips(), 64);
  ASSERT_EQ(pod.devices().size(), 128u);
  EXPECT_EQ(&pod.chip({1, 2, 3}, 1), pod.devices()[2 * (16 + 2 * 4 + 3) + 1]);
  EXPECT_THAT(pod.torus().wraparound(), ElementsAre(true, true, true, false));
  const std::vector<ici::Link>& links = pod.torus().links();
  EXPECT_EQ(links.size(), 128u * 6 + 64 * 2);
  EXPECT_EQ(std::count_if(links.begin(), links.end(), [](const ici::Link& l) { return l.on_chip; }), 64 * 2);
  EXPECT_THAT(ValueErrorOf([] { make_pod("v7", {32, 24, 16}); }), HasSubstr("full v7 pod 16x24x24 (9216 chips)"));
}

TEST(PodTest, ShapesAreCheckedAgainstTheGeneration) {
  EXPECT_THAT(ValueErrorOf([] { make_pod("v5e", {4, 4, 4}); }),
              HasSubstr("v5e chips form a 2D torus (full pod 16x16): shape {4, 4, 4} has 3 dimensions, expected 2"));
  EXPECT_THAT(ValueErrorOf([] { make_pod("v4", {8}); }), HasSubstr("v4 chips form a 3D torus"));
  EXPECT_THAT(ValueErrorOf([] { make_pod("v5e", {32, 2}); }),
              HasSubstr("a v5e slice of shape {32, 2} does not fit the full v5e pod 16x16 (256 chips)"));
  EXPECT_THAT(ValueErrorOf([] { make_pod("v5p", {16, 32, 4}); }), HasSubstr("full v5p pod 16x20x28"));
  EXPECT_THAT(ValueErrorOf([] { make_pod("v6e", {0, 2}); }), HasSubstr("every dimension must be at least 1"));
  EXPECT_THAT(ValueErrorOf([] { make_pod("v9", {2, 2}); }), HasSubstr("unknown TPU generation \"v9\""));
  // Sides may be oriented either way on the torus: 28x16x20 is the full v5p pod turned.
  EXPECT_NO_THROW(make_pod("v5p", {2, 2, 28}));
  EXPECT_NO_THROW(make_pod("v3", {1, 1}));
}

TEST(PodTest, IdsFollowTheCpuAndAreUniqueAcrossPods) {
  const std::vector<const Device*> cpus = jx::devices("cpu");
  ASSERT_FALSE(cpus.empty());
  int max_cpu = 0;
  for (const Device* d : cpus) max_cpu = std::max(max_cpu, d->id());
  Pod a = make_pod("v5e", {2, 2});
  Pod b = make_pod("v6e", {1, 2});
  std::set<int> ids;
  for (const Device* d : RegisteredDevices()) EXPECT_TRUE(ids.insert(d->id()).second) << d->ToString();
  for (const Device* d : a.devices()) EXPECT_GT(d->id(), max_cpu);
  EXPECT_EQ(b.devices()[0]->id(), a.devices()[3]->id() + 1);
  // devices("tpu") lists every pod's chips, in id order.
  const std::vector<const Device*> tpus = jx::devices("tpu");
  for (const Pod* pod : {&a, &b}) {
    for (const Device* d : pod->devices()) EXPECT_NE(std::find(tpus.begin(), tpus.end(), d), tpus.end());
  }
  EXPECT_TRUE(std::is_sorted(tpus.begin(), tpus.end(), [](const Device* x, const Device* y) { return x->id() < y->id(); }));
}

TEST(PodTest, ChipsAreDevicesAsJaxPrintsThem) {
  Pod pod = make_pod("v5e", {2, 2});
  const Device& chip = *pod.devices()[3];
  EXPECT_EQ(chip.platform(), "tpu");
  EXPECT_EQ(chip.device_kind(), "TPU v5 lite");
  EXPECT_EQ(chip.ToString(), "TPU_" + std::to_string(chip.id()) + "(process=0,(1,1,0,0))");
  EXPECT_EQ(&chip.client(), &pod.client());
  const MemoryStats stats = chip.memory_stats();
  EXPECT_EQ(stats.bytes_limit, int64_t{16} * 1000 * 1000 * 1000);
  EXPECT_EQ(stats.bytes_in_use, 0);
  EXPECT_EQ(make_pod("v4", {2, 2, 1}).devices()[1]->device_kind(), "TPU v4");
  EXPECT_EQ(make_pod("v7", {2, 2, 1}).devices()[1]->device_kind(), "TPU7x");
  Pod small = make_pod("v5e", {1, 1}, {.hbm_bytes = 1 << 20});
  EXPECT_EQ(small.devices()[0]->memory_stats().bytes_limit, 1 << 20);
  EXPECT_EQ(small.spec().hbm_bytes, 1 << 20);  // the compiler sees the same capacity
}

}  // namespace
}  // namespace jx::tpu::pod_test

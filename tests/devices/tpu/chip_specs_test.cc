// The chip-spec table: every generation of TPU.md present with its constants, clocks derived
// from the peak, and a clear error for an unknown generation.
#include "jx/devices/tpu/chip_specs.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "jx/core/errors.h"

namespace jx::tpu::chip_specs_test {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kGiB = int64_t{1} << 30;

TEST(ChipSpecsTest, EveryGenerationOfTpuMdIsPresent) {
  EXPECT_THAT(KnownGenerations(), ElementsAre("v2", "v3", "v4", "v5e", "v5p", "v6e", "v7"));
}

// TPU.md's chip table, row by row (peak, HBM, cores x MXUs x size, VMEM, ICI).
struct Row {
  const char* generation;
  double bf16, int8;
  int64_t hbm_bytes;
  double hbm_bw;
  int64_t cores, mxus, mxu_dim, vmem;
  double ici_bw;
  int64_t links, rank;
  std::vector<int64_t> pod;
};

TEST(ChipSpecsTest, ConstantsMatchTpuMd) {
  const std::vector<Row> rows = {
      // v2 and v3 per TensorCore (each core a JAX device): v2 the scaling book's 23e12 and
      // 1.2e11 B/s bidirectional ICI, half of a chip's 16 GiB and 700 GB/s of HBM; v3 half of
      // TPU.md's 1.4e14, 32 GiB and 9.0e11 per chip. Pods in chips.
      {"v2", 23e12, 23e12, 8 * kGiB, 3.5e11, 1, 1, 128, 16 * kMiB, 6e10, 4, 2, {16, 16}},
      {"v3", 7e13, 7e13, 16 * kGiB, 4.5e11, 1, 2, 128, 16 * kMiB, 1e11, 4, 2, {32, 32}},
      {"v4", 2.75e14, 2.75e14, 32 * kGiB, 1.2e12, 2, 4, 128, 16 * kMiB, 4.5e10, 6, 3, {16, 16, 16}},
      {"v5e", 1.97e14, 3.94e14, 16'000'000'000, 8.2e11, 1, 4, 128, 128 * kMiB, 4.5e10, 4, 2, {16, 16}},
      {"v5p", 4.59e14, 9.18e14, 96'000'000'000, 2.8e12, 2, 4, 128, 64 * kMiB, 9e10, 6, 3, {16, 20, 28}},
      {"v6e", 9.2e14, 1.84e15, 32'000'000'000, 1.6e12, 1, 2, 256, 128 * kMiB, 9e10, 4, 2, {16, 16}},
      // v7 per TensorCore too: half of TPU.md's 2.3e15 (fp8 4.6e15), 192 GB and 7.4e12.
      {"v7", 1.15e15, 2.3e15, 96'000'000'000, 3.7e12, 1, 4, 256, 64 * kMiB, 9e10, 6, 3, {16, 24, 24}},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.generation);
    const TpuChipSpec& s = ChipSpec(row.generation);
    EXPECT_EQ(s.generation, row.generation);
    EXPECT_FALSE(s.device_kind.empty());
    EXPECT_DOUBLE_EQ(s.bf16_flops, row.bf16);
    EXPECT_DOUBLE_EQ(s.int8_ops, row.int8);
    EXPECT_EQ(s.hbm_bytes, row.hbm_bytes);
    EXPECT_DOUBLE_EQ(s.hbm_bandwidth, row.hbm_bw);
    EXPECT_EQ(s.tensor_cores, row.cores);
    EXPECT_EQ(s.mxus_per_core, row.mxus);
    EXPECT_EQ(s.mxu_dim, row.mxu_dim);
    EXPECT_EQ(s.vmem_bytes, row.vmem);
    EXPECT_DOUBLE_EQ(s.ici_link_bandwidth, row.ici_bw);
    EXPECT_EQ(s.ici_links, row.links);
    EXPECT_EQ(s.torus_rank, row.rank);
    EXPECT_EQ(s.full_pod, row.pod);
    EXPECT_EQ(s.vpu_sublanes, 8);
    EXPECT_EQ(s.vpu_lanes, 128);
    EXPECT_DOUBLE_EQ(s.ici_hop_latency_s, 1e-6);
    EXPECT_DOUBLE_EQ(s.grid_step_s, 0.35e-6);
    EXPECT_GT(s.kernel_launch_s, 0);
    EXPECT_GT(s.vmem_bandwidth, s.hbm_bandwidth);
  }
}

// JAX lists a v2/v3/v7 chip's two TensorCores as two devices; v4, v5e, v5p, v6e a chip
// (megacore or one core) as one. A device's HBM and peak times its devices per chip give
// TPU.md's chip figures.
TEST(ChipSpecsTest, V2V3AndV7AreTwoDevicesPerChip) {
  for (const TpuChipSpec& s : AllChipSpecs()) {
    SCOPED_TRACE(s.generation);
    const bool per_core = s.generation == "v2" || s.generation == "v3" || s.generation == "v7";
    EXPECT_EQ(s.devices_per_chip, per_core ? 2 : 1);
    // The on-chip path between the cores: the chip's ICI link rate (book9's v2 core pair; a
    // model assumption on v3 and v7).
    EXPECT_DOUBLE_EQ(s.core_link_bandwidth, per_core ? s.ici_link_bandwidth : 0);
  }
  const TpuChipSpec& v3 = ChipSpec("v3");
  EXPECT_DOUBLE_EQ(v3.bf16_flops * static_cast<double>(v3.devices_per_chip), 1.4e14);
  EXPECT_EQ(v3.hbm_bytes * v3.devices_per_chip, 32 * kGiB);
  EXPECT_DOUBLE_EQ(v3.hbm_bandwidth * static_cast<double>(v3.devices_per_chip), 9.0e11);
  EXPECT_EQ(v3.num_mxus(), 2);  // each core its own 2 MXUs [cloud/v3]
  EXPECT_NEAR(v3.clock_hz, 1.07e9, 0.01e9);
  const TpuChipSpec& v7 = ChipSpec("v7");
  EXPECT_DOUBLE_EQ(v7.bf16_flops * static_cast<double>(v7.devices_per_chip), 2.3e15);
  EXPECT_DOUBLE_EQ(v7.int8_ops * static_cast<double>(v7.devices_per_chip), 4.6e15);
  EXPECT_EQ(v7.hbm_bytes * v7.devices_per_chip, 192'000'000'000);
  EXPECT_DOUBLE_EQ(v7.hbm_bandwidth * static_cast<double>(v7.devices_per_chip), 7.4e12);
  EXPECT_NEAR(v7.clock_hz, 2.19e9, 0.01e9);  // the per-chip row's clock: 4 MXUs per core
}

TEST(ChipSpecsTest, CollectiveFixedCostAndEfficiencyFollowThePpermuteFits) {
  // TPU.md: t = 4.55 us + bytes / 86.3 GB/s on v5p and 2.29 us + bytes / 86.8 GB/s on v6e;
  // the other 3D generations share v5p's fit, the other 2D ones v6e's.
  for (const TpuChipSpec& s : AllChipSpecs()) {
    SCOPED_TRACE(s.generation);
    EXPECT_DOUBLE_EQ(s.ici_collective_fixed_s, s.torus_rank == 3 ? 4.55e-6 : 2.29e-6);
    EXPECT_DOUBLE_EQ(s.ici_efficiency, s.torus_rank == 3 ? 86.3 / 90 : 86.8 / 90);
  }
  EXPECT_NEAR(ChipSpec("v5p").ici_efficiency * ChipSpec("v5p").ici_link_bandwidth, 86.3e9, 1e3);
  EXPECT_NEAR(ChipSpec("v6e").ici_efficiency * ChipSpec("v6e").ici_link_bandwidth, 86.8e9, 1e3);
}

TEST(ChipSpecsTest, ClockIsDerivedFromThePeak) {
  for (const TpuChipSpec& s : AllChipSpecs()) {
    SCOPED_TRACE(s.generation);
    const double peak = static_cast<double>(s.tensor_cores * s.mxus_per_core * s.mxu_dim *
                                            s.mxu_dim) * 2 * s.clock_hz;
    EXPECT_NEAR(peak / s.bf16_flops, 1.0, 1e-12);
  }
  // The scaling book: v5e's MXUs run at about 1.5 GHz; v4 at 1.05 GHz.
  EXPECT_NEAR(ChipSpec("v5e").clock_hz, 1.5e9, 0.01e9);
  EXPECT_NEAR(ChipSpec("v4").clock_hz, 1.05e9, 0.01e9);
  // TPU v2 ran at 700 MHz (Jouppi et al., CACM 2020): the book's 23e12 per core on one MXU.
  EXPECT_NEAR(ChipSpec("v2").clock_hz, 0.70e9, 0.01e9);
  // The v5e VPU: 8 x 128 lanes at 1.5 GHz, 1.54e12 f32 ops/s.
  EXPECT_NEAR(ChipSpec("v5e").vpu_flops(), 1024 * 1.503e9, 0.01e12);
}

TEST(ChipSpecsTest, V5eRidgeIsAbout240FlopsPerByte) {
  const TpuChipSpec& s = ChipSpec("v5e");
  EXPECT_NEAR(s.bf16_flops / s.hbm_bandwidth, 240, 1);
  EXPECT_EQ(s.num_mxus(), 4);
}

TEST(ChipSpecsTest, UnknownGenerationListsTheKnownOnes) {
  try {
    ChipSpec("v9");
    FAIL() << "no error";
  } catch (const ValueError& e) {
    EXPECT_THAT(e.what(), HasSubstr("\"v9\""));
    EXPECT_THAT(e.what(), HasSubstr("v2, v3, v4, v5e, v5p, v6e, v7"));
  }
  EXPECT_EQ(ChipSpec("v4").generation, "v4");  // the table still works after the error
}

}  // namespace
}  // namespace jx::tpu::chip_specs_test

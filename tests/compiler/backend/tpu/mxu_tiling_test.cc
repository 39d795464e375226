// The MXU tiling pass: tiles, padding and waves per chip (v5e: 4 MXUs of 128x128; v6e: 2 of
// 256x256), for dots, batched dots, fused dots and convolutions.
#include "jx/compiler/backend/tpu/mxu_tiling.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/compiler/passes/pass_test_util.h"

namespace jx::tpu::mxu_tiling_test {
namespace {

using hlo::testing::EntryLines;
using hlo::testing::ParseAndRun;
using ::testing::ElementsAre;

TpuTargetOptions V5e() {
  TpuTargetOptions o;
  o.generation = "v5e";
  o.mxu_dim = 128;
  o.num_mxus = 4;
  return o;
}

TpuTargetOptions V6e() {
  TpuTargetOptions o;
  o.generation = "v6e";
  o.mxu_dim = 256;
  o.num_mxus = 2;
  return o;
}

constexpr char kAwkwardDot[] = R"(HloModule m
ENTRY %main {
  %x = f32[300,100]{1,0} parameter(0)
  %w = f32[100,200]{1,0} parameter(1)
  ROOT %d = f32[300,200]{1,0} dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
)";

TEST(MxuTilingTest, AwkwardShapesPadToTheMxuOnV5e) {
  // K 100 -> 128 (1 tile), N 200 -> 256 (2 tiles), M 300 -> 304 (38 groups of 8 rows);
  // 2 weight tiles over 4 MXUs: 2 MXUs busy, one wave.
  auto module = ParseAndRun<MxuTilingPass>(kAwkwardDot, true, MxuTilingPass(V5e()));
  EXPECT_EQ(EntryLines(*module).back(),
            "ROOT %d = f32[300,200]{1,0} dot(%x, %w), lhs_contracting_dims={1}, "
            "rhs_contracting_dims={0}, mxu_tiling={tile=128x128, mkn=300x100x200, "
            "padded_mkn=304x128x256, batch=1, k_tiles=1, n_tiles=2, m_groups=38, mxus=2, "
            "waves=1}");
  const hlo::MxuTiling& t = module->entry_computation()->root_instruction()->mxu_tiling();
  EXPECT_DOUBLE_EQ(t.UsefulFraction(), (300.0 * 100 * 200) / (304.0 * 128 * 256));
}

TEST(MxuTilingTest, TheSameDotOnV6ePadsTo256) {
  // K 100 -> 256, N 200 -> 256: one 256x256 tile on one of the 2 MXUs.
  auto module = ParseAndRun<MxuTilingPass>(kAwkwardDot, true, MxuTilingPass(V6e()));
  EXPECT_THAT(EntryLines(*module).back(),
              ::testing::HasSubstr("mxu_tiling={tile=256x256, mkn=300x100x200, "
                                   "padded_mkn=304x256x256, batch=1, k_tiles=1, n_tiles=1, "
                                   "m_groups=38, mxus=1, waves=1}"));
  EXPECT_LT(module->entry_computation()->root_instruction()->mxu_tiling().UsefulFraction(),
            0.31);
}

TEST(MxuTilingTest, BigDotDealsTilesOverAllMxusInWaves) {
  // [1024,1024] x [1024,2048] on v5e: 8 x 16 = 128 weight tiles over 4 MXUs = 32 waves;
  // on v6e: 4 x 8 = 32 tiles over 2 MXUs = 16 waves. No padding.
  constexpr char kText[] = R"(HloModule m
ENTRY %main {
  %x = bf16[1024,1024]{1,0} parameter(0)
  %w = bf16[1024,2048]{1,0} parameter(1)
  ROOT %d = bf16[1024,2048]{1,0} dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
)";
  // (Planned without ParseAndRun: evaluating a 4-GFLOP dot to check values would be slow.)
  auto v5e = hlo::ParseHloModule(kText).value();
  ASSERT_TRUE(MxuTilingPass(V5e()).Run(v5e.get()).value());
  const hlo::MxuTiling& a = v5e->entry_computation()->root_instruction()->mxu_tiling();
  EXPECT_EQ(a.k_tiles, 8);
  EXPECT_EQ(a.n_tiles, 16);
  EXPECT_EQ(a.m_groups, 128);
  EXPECT_EQ(a.mxus, 4);
  EXPECT_EQ(a.waves, 32);
  EXPECT_DOUBLE_EQ(a.UsefulFraction(), 1.0);
  auto v6e = hlo::ParseHloModule(kText).value();
  ASSERT_TRUE(MxuTilingPass(V6e()).Run(v6e.get()).value());
  const hlo::MxuTiling& b = v6e->entry_computation()->root_instruction()->mxu_tiling();
  EXPECT_EQ(b.k_tiles, 4);
  EXPECT_EQ(b.n_tiles, 8);
  EXPECT_EQ(b.mxus, 2);
  EXPECT_EQ(b.waves, 16);
}

TEST(MxuTilingTest, BatchDimsAreIndependentGemms) {
  // [8,5,64] x [8,64,3]: 8 GEMMs of 5x64x3, each one padded tile: 8 tiles, 2 waves.
  auto module = ParseAndRun<MxuTilingPass>(R"(HloModule m
ENTRY %main {
  %x = f32[8,5,64]{2,1,0} parameter(0)
  %w = f32[8,64,3]{2,1,0} parameter(1)
  ROOT %d = f32[8,5,3]{2,1,0} dot(%x, %w), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
}
)", true, MxuTilingPass(V5e()));
  EXPECT_THAT(EntryLines(*module).back(),
              ::testing::HasSubstr("mxu_tiling={tile=128x128, mkn=5x64x3, padded_mkn=8x128x128, "
                                   "batch=8, k_tiles=1, n_tiles=1, m_groups=1, mxus=4, waves=2}"));
}

TEST(MxuTilingTest, ConvolutionIsAnImplicitGemm) {
  // NHWC input [2,8,8,16], HWIO kernel [3,3,16,32], SAME padding: M = 2*8*8 = 128 rows,
  // K = 3*3*16 = 144 -> 256 (2 tiles), N = 32 -> 128 (1 tile).
  auto module = ParseAndRun<MxuTilingPass>(R"(HloModule m
ENTRY %main {
  %x = f32[2,8,8,16]{3,2,1,0} parameter(0)
  %k = f32[3,3,16,32]{3,2,1,0} parameter(1)
  ROOT %c = f32[2,8,8,32]{3,2,1,0} convolution(%x, %k), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
}
)", true, MxuTilingPass(V5e()));
  EXPECT_THAT(EntryLines(*module).back(),
              ::testing::HasSubstr("mxu_tiling={tile=128x128, mkn=128x144x32, "
                                   "padded_mkn=128x256x128, batch=1, k_tiles=2, n_tiles=1, "
                                   "m_groups=16, mxus=2, waves=1}"));
}

TEST(MxuTilingTest, GroupedConvolutionTilesEachGroup) {
  // Depthwise-like: 4 feature groups of 4 input -> 2 output features each.
  auto module = ParseAndRun<MxuTilingPass>(R"(HloModule m
ENTRY %main {
  %x = f32[1,6,6,16]{3,2,1,0} parameter(0)
  %k = f32[3,3,4,8]{3,2,1,0} parameter(1)
  ROOT %c = f32[1,4,4,8]{3,2,1,0} convolution(%x, %k), window={size=3x3}, dim_labels=b01f_01io->b01f, feature_group_count=4
}
)", true, MxuTilingPass(V5e()));
  const hlo::MxuTiling& t = module->entry_computation()->root_instruction()->mxu_tiling();
  EXPECT_EQ(t.batch, 4);
  EXPECT_EQ(t.m, 16);
  EXPECT_EQ(t.k, 36);
  EXPECT_EQ(t.n, 2);
  EXPECT_EQ(t.waves, 1);
}

TEST(MxuTilingTest, FusedDotsArePlannedToo) {
  auto module = ParseAndRun<MxuTilingPass>(R"(HloModule m
%fused (p0: f32[16,256], p1: f32[256,128]) -> f32[16,128] {
  %p0 = f32[16,256]{1,0} parameter(0)
  %p1 = f32[256,128]{1,0} parameter(1)
  %d = f32[16,128]{1,0} dot(%p0, %p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT %r = f32[16,128]{1,0} negate(%d)
}
ENTRY %main {
  %x = f32[16,256]{1,0} parameter(0)
  %w = f32[256,128]{1,0} parameter(1)
  ROOT %f = f32[16,128]{1,0} fusion(%x, %w), kind=kOutput, calls=%fused
}
)", true, MxuTilingPass(V5e()));
  const hlo::HloInstruction* dot =
      module->GetComputationWithName("fused")->GetInstructionWithName("d");
  ASSERT_TRUE(dot->has_mxu_tiling());
  EXPECT_EQ(dot->mxu_tiling().k_tiles, 2);
  EXPECT_EQ(dot->mxu_tiling().mxus, 2);
}

TEST(MxuTilingTest, NothingToPlanWithoutContractions) {
  ParseAndRun<MxuTilingPass>(R"(HloModule m
ENTRY %main {
  %x = f32[16]{0} parameter(0)
  ROOT %n = f32[16]{0} negate(%x)
}
)", false, MxuTilingPass(V5e()));
}

TEST(MxuTilingTest, PlanRejectsOtherOpcodes) {
  auto module = hlo::ParseHloModule(R"(HloModule m
ENTRY %main {
  %x = f32[16]{0} parameter(0)
  ROOT %n = f32[16]{0} negate(%x)
}
)").value();
  absl::StatusOr<hlo::MxuTiling> plan =
      PlanMxuTiling(*module->entry_computation()->root_instruction(), V5e());
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(std::string(plan.status().message()), ::testing::HasSubstr("not a dot"));
}

}  // namespace
}  // namespace jx::tpu::mxu_tiling_test

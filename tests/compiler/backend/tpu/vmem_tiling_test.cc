// The VMEM tiling pass: kernels are tiled only when their padded working set exceeds VMEM
// (each expected plan derived in the test's comment), and intermediates stay in VMEM while
// half of it has room.
#include "jx/compiler/backend/tpu/vmem_tiling.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/compiler/passes/pass_test_util.h"

namespace jx::tpu::vmem_tiling_test {
namespace {

using hlo::testing::EntryLines;
using hlo::testing::ParseAndRun;
using ::testing::ElementsAre;

TpuTargetOptions WithVmem(int64_t bytes) {
  TpuTargetOptions o;
  o.vmem_bytes = bytes;
  return o;
}

constexpr char kElementwise[] = R"(HloModule m
%fused (p: f32[256,256]) -> f32[256,256] {
  %p = f32[256,256]{1,0} parameter(0)
  ROOT %n = f32[256,256]{1,0} negate(%p)
}
ENTRY %main {
  %x = f32[256,256]{1,0} parameter(0)
  ROOT %f = f32[256,256]{1,0} fusion(%x), kind=kLoop, calls=%fused
}
)";

TEST(VmemTilingTest, KernelsThatFitAreLeftWhole) {
  // 256 KiB in + 256 KiB out = 512 KiB <= 1 MiB.
  ParseAndRun<VmemTilingPass>(kElementwise, false, VmemTilingPass(WithVmem(1 << 20)));
  ParseAndRun<VmemTilingPass>(kElementwise, false, VmemTilingPass(WithVmem(512 << 10)));
}

TEST(VmemTilingTest, ElementwiseFusionStreamsRowBlocks) {
  // 512 KiB > 256 KiB of VMEM. A block of b rows double-buffers its input and output:
  // 2 * 2 * b * 1 KiB <= 256 KiB -> b = 64 (halving from 256): 4 steps; every byte moves
  // once: hbm = 4 * (64 KiB + 64 KiB).
  auto module = ParseAndRun<VmemTilingPass>(kElementwise, true, VmemTilingPass(WithVmem(256 << 10)));
  EXPECT_EQ(EntryLines(*module).back(),
            "ROOT %f = f32[256,256]{1,0} fusion(%x), kind=kLoop, calls=%fused, "
            "vmem_tiling={grid=4x1, block=64x256, steps=4, vmem_bytes=262144, hbm_bytes=524288}");
}

TEST(VmemTilingTest, ReductionStreamsItsInputAndKeepsTheAccumulatorResident) {
  // Column sums of f32[512,256] (512 KiB) into f32[256] (T(256): 1 KiB), VMEM 256 KiB.
  // The grid runs over the input's rows; the output does not share that dim, so it stays
  // resident: 2 * b * 1 KiB + 1 KiB <= 256 KiB -> b = 64 (512, 256, 128 are too big):
  // 8 steps, vmem 2 * 64 KiB + 1 KiB, hbm 8 * 64 KiB + 1 KiB.
  auto module = ParseAndRun<VmemTilingPass>(R"(HloModule m
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
%fused (p: f32[512,256]) -> f32[256] {
  %p = f32[512,256]{1,0} parameter(0)
  %e = f32[512,256]{1,0} negate(%p)
  %z = f32[] constant(0)
  ROOT %r = f32[256]{0} reduce(%e, %z), dimensions={0}, to_apply=%add
}
ENTRY %main {
  %x = f32[512,256]{1,0} parameter(0)
  ROOT %f = f32[256]{0} fusion(%x), kind=kInput, calls=%fused
}
)", true, VmemTilingPass(WithVmem(256 << 10)));
  const hlo::VmemTiling& t = module->entry_computation()->root_instruction()->vmem_tiling();
  EXPECT_EQ(t.grid, (std::vector<int64_t>{8, 1}));
  EXPECT_EQ(t.block, (std::vector<int64_t>{64, 256}));
  EXPECT_EQ(t.steps, 8);
  EXPECT_EQ(t.vmem_bytes, 2 * 64 * 1024 + 1024);
  EXPECT_EQ(t.hbm_bytes, 8 * 64 * 1024 + 1024);
}

TEST(VmemTilingTest, MatmulSplitsTheLargerOperandAndRereadsTheOther) {
  // [512,512] x [512,512] f32: L = R = O = 1 MiB; VMEM 2 MiB. With K whole a step double-
  // buffers [bm, 512], [512, bn] and [bm, bn] blocks: 8 (512 bm + 512 bn + bm bn) B fits for
  // (128, 256) at 1.75 MiB, not (256, 256); the rhs is read once per row block: hbm =
  // min(L + 4R, R + 2L) + O = 4 MiB in 8 steps ((256, 128) ties; the first is kept). Splitting
  // K costs more: (256, 256, bk 128) fits with its f32 accumulator but reads both operands
  // twice (5 MiB); (512, 128, 128) reads L 4 times (6 MiB).
  auto module = ParseAndRun<VmemTilingPass>(R"(HloModule m
ENTRY %main {
  %x = f32[512,512]{1,0} parameter(0)
  %w = f32[512,512]{1,0} parameter(1)
  ROOT %d = f32[512,512]{1,0} dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
)", true, VmemTilingPass(WithVmem(2 << 20)));
  EXPECT_THAT(EntryLines(*module).back(),
              ::testing::HasSubstr("vmem_tiling={grid=4x2, block=128x256, steps=8, "
                                   "vmem_bytes=1835008, hbm_bytes=4194304}"));
}

TEST(VmemTilingTest, MatmulTooLongForVmemSplitsItsContraction) {
  // [32,4096] x [4096,128] f32, VMEM 256 KiB: L = 512 KiB, R = 2 MiB, O = 16 KiB. Even an
  // (8, 128) output block with all of K needs 2 * (8 + 128) * 4096 * 4 B = 4.25 MiB, so K is
  // split: a [bm, bk] x [bk, 128] step double-buffers its operand and output blocks and
  // keeps an f32 accumulator: 2 * 4 * (bm + 128) * bk + 2 * 4 * bm * 128 + 4 * bm * 128 B.
  // bm = 32 (one row of blocks, R read once): 1280 bk + 48 KiB <= 256 KiB -> bk = 128,
  // 32 steps, vmem 160 + 48 KiB, hbm = L + R + O. bm = 16 would read R twice (and take 64
  // steps).
  auto module = ParseAndRun<VmemTilingPass>(R"(HloModule m
ENTRY %main {
  %x = f32[32,4096]{1,0} parameter(0)
  %w = f32[4096,128]{1,0} parameter(1)
  ROOT %d = f32[32,128]{1,0} dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
)", true, VmemTilingPass(WithVmem(256 << 10)));
  EXPECT_THAT(EntryLines(*module).back(),
              ::testing::HasSubstr("vmem_tiling={grid=1x1x32, block=32x128x128, steps=32, "
                                   "vmem_bytes=212992, hbm_bytes=2637824}"));
}

TEST(VmemTilingTest, FusedMatmulCountsItsEpilogueWithTheOutput) {
  // The bias [512,512] (1 MiB) travels with the output blocks: L = R = 1 MiB, O + bias = 2
  // MiB, VMEM 2 MiB: (1,1) 8, (2,1) 5, (2,2) 3, (4,2) 2 MiB -> 8 steps.
  auto module = ParseAndRun<VmemTilingPass>(R"(HloModule m
%fused (p0: f32[512,512], p1: f32[512,512], p2: f32[512,512]) -> f32[512,512] {
  %p0 = f32[512,512]{1,0} parameter(0)
  %p1 = f32[512,512]{1,0} parameter(1)
  %p2 = f32[512,512]{1,0} parameter(2)
  %d = f32[512,512]{1,0} dot(%p0, %p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT %a = f32[512,512]{1,0} add(%d, %p2)
}
ENTRY %main {
  %x = f32[512,512]{1,0} parameter(0)
  %w = f32[512,512]{1,0} parameter(1)
  %b = f32[512,512]{1,0} parameter(2)
  ROOT %f = f32[512,512]{1,0} fusion(%x, %w, %b), kind=kOutput, calls=%fused
}
)", true, VmemTilingPass(WithVmem(2 << 20)));
  const hlo::VmemTiling& t = module->entry_computation()->root_instruction()->vmem_tiling();
  EXPECT_EQ(t.grid, (std::vector<int64_t>{4, 2}));
  EXPECT_EQ(t.steps, 8);
  EXPECT_EQ(t.vmem_bytes, 2 << 20);
  // min(L + 4R, R + 2L) + O + bias = 3 + 2 MiB.
  EXPECT_EQ(t.hbm_bytes, 5 << 20);
}

TEST(VmemTilingTest, FusedMatmulInputsAreTheParametersItsOperandsAreComputedFrom) {
  // As the numerics pass leaves it: the dot reads bf16 roundings of the parameters, fused
  // in. The plan is the one of the plain [512,512] matmul above: each input counted once.
  auto module = ParseAndRun<VmemTilingPass>(R"(HloModule m
%fused (p0: f32[512,512], p1: f32[512,512]) -> f32[512,512] {
  %p0 = f32[512,512]{1,0} parameter(0)
  %h0 = bf16[512,512]{1,0} convert(%p0)
  %c0 = f32[512,512]{1,0} convert(%h0)
  %p1 = f32[512,512]{1,0} parameter(1)
  %h1 = bf16[512,512]{1,0} convert(%p1)
  %c1 = f32[512,512]{1,0} convert(%h1)
  ROOT %d = f32[512,512]{1,0} dot(%c0, %c1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
ENTRY %main {
  %x = f32[512,512]{1,0} parameter(0)
  %w = f32[512,512]{1,0} parameter(1)
  ROOT %f = f32[512,512]{1,0} fusion(%x, %w), kind=kOutput, calls=%fused
}
)", true, VmemTilingPass(WithVmem(2 << 20)));
  EXPECT_THAT(EntryLines(*module).back(),
              ::testing::HasSubstr("vmem_tiling={grid=4x2, block=128x256, steps=8, "
                                   "vmem_bytes=1835008, hbm_bytes=4194304}"));
}

constexpr char kTwoLive[] = R"(HloModule m
ENTRY %main {
  %a = f32[8,128]{1,0} parameter(0)
  %n = f32[8,128]{1,0} negate(%a)
  %e = f32[8,128]{1,0} exponential(%a)
  ROOT %r = f32[8,128]{1,0} add(%n, %e)
}
)";

TEST(VmemTilingTest, IntermediatesStayInVmemWhileHalfOfItHasRoom) {
  // Half of 8 KiB holds one f32[8,128] (4 KiB): %n goes to VMEM, %e (live at the same
  // time) stays in HBM; parameters and the output are always HBM.
  auto module = ParseAndRun<VmemTilingPass>(kTwoLive, true, VmemTilingPass(WithVmem(8 << 10)));
  EXPECT_THAT(EntryLines(*module),
              ElementsAre("%a = f32[8,128]{1,0} parameter(0)",
                          "%n = f32[8,128]{1,0:S(1)} negate(%a)",
                          "%e = f32[8,128]{1,0} exponential(%a)",
                          "ROOT %r = f32[8,128]{1,0} add(%n, %e)"));
  // With room for both, both stay on chip.
  auto roomy = ParseAndRun<VmemTilingPass>(kTwoLive, true, VmemTilingPass(WithVmem(16 << 10)));
  EXPECT_THAT(EntryLines(*roomy)[2], ::testing::HasSubstr("{1,0:S(1)} exponential"));
}

TEST(VmemTilingTest, ValuesFreedByTheirLastReaderMakeRoom) {
  // %n dies at %m, so %e can take its place in the 4 KiB half.
  auto module = ParseAndRun<VmemTilingPass>(R"(HloModule m
ENTRY %main {
  %a = f32[8,128]{1,0} parameter(0)
  %n = f32[8,128]{1,0} negate(%a)
  %m = f32[8,128]{1,0} multiply(%n, %a)
  %e = f32[8,128]{1,0} exponential(%m)
  ROOT %r = f32[8,128]{1,0} add(%e, %a)
}
)", true, VmemTilingPass(WithVmem(8 << 10)));
  EXPECT_THAT(EntryLines(*module),
              ElementsAre("%a = f32[8,128]{1,0} parameter(0)",
                          "%n = f32[8,128]{1,0:S(1)} negate(%a)",
                          "%m = f32[8,128]{1,0} multiply(%n, %a)",
                          "%e = f32[8,128]{1,0:S(1)} exponential(%m)",
                          "ROOT %r = f32[8,128]{1,0} add(%e, %a)"));
}

}  // namespace
}  // namespace jx::tpu::vmem_tiling_test

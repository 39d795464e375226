// The TPU cost model on modules the TPU passes compiled (AddTpuPasses): it charges the plans
// they record — arrays padded to their tiled layouts, values kept in VMEM (S(1)) at VMEM
// bandwidth, a kernel's VMEM grid steps and HBM re-reads (vmem_tiling), the MXU plan
// (mxu_tiling). Predictions against derivations by hand from ../shared/TPU.md and the chip
// table (each in the test's comment; within 5%).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string_view>

#include "jx/compiler/backend/tpu/mxu_feed.h"
#include "jx/compiler/backend/tpu/tpu_cost_model.h"
#include "jx/compiler/backend/tpu/tpu_layout.h"
#include "jx/compiler/backend/tpu/tpu_pipeline.h"
#include "jx/compiler/hlo/hlo_parser.h"
#include "jx/devices/tpu/chip_specs.h"

namespace jx::tpu::tpu_cost_model_pipeline_test {
namespace {

using hlo::HloInstruction;
using hlo::HloModule;
using hlo::HloOpcode;

#define EXPECT_WITHIN_5_PERCENT(predicted, derived) \
  EXPECT_NEAR((predicted) / (derived), 1.0, 0.05) << #predicted << " = " << (predicted)

std::unique_ptr<HloModule> CompileForChip(std::string_view text, const TpuChipSpec& spec) {
  std::unique_ptr<HloModule> module = hlo::ParseHloModule(text).value();
  hlo::HloPassPipeline pipeline("tpu");
  AddTpuPasses(pipeline, TpuTargetOptions(spec));
  const absl::StatusOr<bool> changed = pipeline.Run(module.get());
  EXPECT_TRUE(changed.ok()) << changed.status();
  return module;
}

const HloInstruction* FindEntry(const HloModule& module, HloOpcode opcode) {
  for (const HloInstruction* instr : module.entry_computation()->instructions()) {
    if (instr->opcode() == opcode) return instr;
  }
  return nullptr;
}

// x - broadcast(sum(x, axis=1)): two kernels (the reduce and the subtract's loop fusion);
// the row sums pass between them in VMEM.
constexpr char kCenterRows[] = R"(HloModule center
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
ENTRY %main (x: f32[1000,300]) -> f32[1000,300] {
  %x = f32[1000,300] parameter(0)
  %zero = f32[] constant(0)
  %r = f32[1000] reduce(%x, %zero), dimensions={1}, to_apply=%add
  %rb = f32[1000,300] broadcast(%r), dimensions={0}
  ROOT %c = f32[1000,300] subtract(%x, %rb)
}
)";

// On v5e (HBM 8.2e11 B/s, launch and grid step 0.35 us each). f32[1000,300] is stored in
// (8,128) tiles: 1000 x 384 x 4 = 1,536,000 bytes (not the 1,200,000 of its elements). The
// row sums f32[1000] are T(1024): 4,096 bytes, kept in VMEM by the VMEM tiling pass.
//   reduce kernel:   reads x from HBM (1,536,000), writes the sums to VMEM;
//   subtract kernel: reads x (1,536,000) and the sums (VMEM), writes 1,536,000 to HBM.
// HBM 4,608,000 bytes -> 5.620 us; VPU 6e5 flops / (1024 lanes x 1.503 GHz) = 0.39 us:
// memory-bound. Each kernel fits VMEM (one grid step). Predicted 5.620 + 2 x 0.70 = 7.02 us.
// Unpadded and with the sums in HBM it would be 3,608,000 bytes -> 4.40 + 1.40 = 5.80 us.
TEST(TpuCostAfterPassesTest, PaddedTilesAndVmemResidentValues) {
  const TpuChipSpec& v5e = ChipSpec("v5e");
  const std::unique_ptr<HloModule> module = CompileForChip(kCenterRows, v5e);
  const HloInstruction* sums = FindEntry(*module, HloOpcode::kReduce);
  ASSERT_NE(sums, nullptr) << module->ToString();
  EXPECT_EQ(sums->shape().layout().memory_space, kVmemMemorySpace) << module->ToString();

  const CostAnalysis cost = AnalyzeTpuCost(*module, v5e).value();
  EXPECT_WITHIN_5_PERCENT(cost.bytes_accessed_hbm, 4.608e6);
  EXPECT_GE(cost.bytes_accessed_vmem, 4.608e6 + 2 * 4096);  // HBM traffic plus the sums
  EXPECT_WITHIN_5_PERCENT(cost.memory_seconds, 5.620e-6);
  EXPECT_WITHIN_5_PERCENT(cost.predicted_seconds, 7.02e-6);
  EXPECT_NEAR(cost.bytes_accessed, 3.608e6, 16);  // XLA's logical bytes stay as they were
}

// f32[8192,4096] @ f32[4096,8192] at DEFAULT precision on v4 (16 MiB VMEM per core, HBM
// 1.2e12 B/s, 2 cores x 4 MXUs of 128x128 at 2.75e14 / (8 x 128 x 128 x 2) = 1.049 GHz).
// The numerics pass rounds each operand to bf16 (convert fusions the MXU does as it reads:
// free, mxu_feed.h). L = R = 128 MiB, O = 256 MiB: far over VMEM, so the VMEM tiling pass
// runs it as a grid of [bm, bk] x [bk, bn] blocks of whole tiles, the plan that moves the
// fewest HBM bytes (plus 512 KiB per grid step) whose double-buffered blocks fit 16 MiB.
// K whole, a 4096-long f32 row is 16 KiB: (128, 256) blocks fit (2(2 + 4 + 1/8) = 12.25
// MiB) but re-read R 64 times or L 32 times: min(L + 64 R, R + 32 L) + O = 4480 MiB. K split
// with an f32 accumulator block: (1024, 1024, 256) holds 2 x 4 x (1024 x 256 x 2 + 1024^2) +
// 4 x 1024^2 B = 16 MiB: fits; 8 x 8 x 16 = 1024 steps, each operand read once per block
// row (column) of the other: 8 L + 8 R + O = 2304 MiB = 2.416e9 bytes -> 2.013 ms ((1024,
// 1024, 128) moves as much in twice the steps).
// MXU, one bf16 pass: 32 x 64 = 2048 weight tiles over 8 MXUs = 256 folds of T = 8192 rows:
// (2 x 128 + 128 + 8192 - 2) + 255 x 8192 = 2,097,534 cycles = 2.000 ms.
// Balanced (memory 0.7% over compute): 2.013 ms + 0.35 us + 512 x 0.35 us (the 1024 steps
// dealt over v4's two TensorCores) = 2.193 ms (the greedy (M, N) halving before it planned
// 4480 MiB: 4.632 ms, 43% of peak).
TEST(TpuCostAfterPassesTest, MatmulOverVmemPaysItsRereadsAndGridSteps) {
  const TpuChipSpec& v4 = ChipSpec("v4");
  const std::unique_ptr<HloModule> module = CompileForChip(R"(HloModule mm
ENTRY %main (x: f32[8192,4096], w: f32[4096,8192]) -> f32[8192,8192] {
  %x = f32[8192,4096] parameter(0)
  %w = f32[4096,8192] parameter(1)
  ROOT %dot = f32[8192,8192] dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
)",
                                                           v4);
  const HloInstruction* dot = FindEntry(*module, HloOpcode::kDot);
  ASSERT_NE(dot, nullptr) << module->ToString();
  ASSERT_TRUE(dot->has_vmem_tiling()) << module->ToString();
  EXPECT_EQ(dot->vmem_tiling().steps, 1024) << module->ToString();
  EXPECT_EQ(dot->vmem_tiling().block, (std::vector<int64_t>{1024, 1024, 256}));
  EXPECT_EQ(dot->vmem_tiling().vmem_bytes, 16 << 20);
  EXPECT_EQ(dot->vmem_tiling().hbm_bytes, int64_t{2304} << 20);
  // One plan for the MXU: the model deals the recorded tiles as the pass did.
  ASSERT_TRUE(dot->has_mxu_tiling());
  const MxuWork work = MatmulOnMxu(v4, dot->mxu_tiling(), 1);
  EXPECT_EQ(work.folds_per_mxu, dot->mxu_tiling().waves);
  EXPECT_EQ(work.cycles, 2097534);

  const CostAnalysis cost = AnalyzeTpuCost(*module, v4).value();
  EXPECT_WITHIN_5_PERCENT(cost.bytes_accessed_hbm, 2.416e9);
  EXPECT_WITHIN_5_PERCENT(cost.compute_seconds, 2.000e-3);
  EXPECT_WITHIN_5_PERCENT(cost.memory_seconds, 2.013e-3);
  EXPECT_WITHIN_5_PERCENT(cost.predicted_seconds, 2.193e-3);
  ASSERT_EQ(cost.instructions.size(), 1u);  // the feeds are no kernels
  EXPECT_EQ(cost.instructions[0].bound_by, "memory");
  EXPECT_WITHIN_5_PERCENT(cost.instructions[0].bytes, 2.416e9);
}

// bf16[512,512] @ bf16[512,512] on v5e: the numerics pass widens both operands to f32 (the
// MXU accumulates in f32) and rounds the result back to bf16. The widenings are MXU feeds:
// no kernels, and the dot reads the bf16 arrays. HBM: 3 x 512 x 512 x 2 = 1,572,864 bytes
// -> 1.918 us (with the widenings as kernels, 2 x (0.5 + 1) MiB more and two launches).
// MXU: 4 x 4 tiles over 4 MXUs = 4 folds of T = 512: (256 + 128 + 512 - 2) + 3 x 512 =
// 2430 cycles / 1.503 GHz = 1.617 us. Memory-bound: 1.918 + 0.35 + 0.35 = 2.618 us.
TEST(TpuCostAfterPassesTest, NumericsConvertsAroundTheMxuAreFree) {
  const TpuChipSpec& v5e = ChipSpec("v5e");
  const std::unique_ptr<HloModule> module = CompileForChip(R"(HloModule mm
ENTRY %main (x: bf16[512,512], w: bf16[512,512]) -> bf16[512,512] {
  %x = bf16[512,512] parameter(0)
  %w = bf16[512,512] parameter(1)
  ROOT %dot = bf16[512,512] dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
)",
                                                           v5e);
  const HloInstruction* widened = FindEntry(*module, HloOpcode::kConvert);
  ASSERT_NE(widened, nullptr) << module->ToString();
  EXPECT_TRUE(IsMxuFeed(*widened));
  EXPECT_EQ(MxuFeedSource(*widened).opcode(), HloOpcode::kParameter);

  const CostAnalysis cost = AnalyzeTpuCost(*module, v5e).value();
  EXPECT_WITHIN_5_PERCENT(cost.bytes_accessed_hbm, 1572864);
  EXPECT_WITHIN_5_PERCENT(cost.compute_seconds, 1.617e-6);
  EXPECT_WITHIN_5_PERCENT(cost.predicted_seconds, 2.618e-6);
  EXPECT_EQ(cost.instructions.size(), 1u) << FormatInstructionCosts(cost);
}

// A block of a bf16 array (a blocked attention loop's half of K) as a dot operand: fusion
// puts the slice and the numerics pass's widening into one loop fusion, which on a chip is
// the operand's DMA fetching the window of the bf16 source while the MXU widens it (XLA's
// convolution fusion of a sliced operand). It is an MXU feed: no kernel, and the dot reads
// the block's 512 x 512 x 2 bytes, not the f32 block's 4 per element nor the whole source:
// HBM = x's block 0.5 MiB + w 0.5 MiB + the bf16 result 0.5 MiB = 1,572,864 bytes, as the
// unsliced dot above.
TEST(TpuCostAfterPassesTest, SlicedWideningOfADotOperandIsAFeedOfTheBlock) {
  const TpuChipSpec& v5e = ChipSpec("v5e");
  const std::unique_ptr<HloModule> module = CompileForChip(R"(HloModule mm
ENTRY %main (x: bf16[1024,512], w: bf16[512,512]) -> bf16[512,512] {
  %x = bf16[1024,512] parameter(0)
  %w = bf16[512,512] parameter(1)
  %block = bf16[512,512] slice(%x), slice={[512:1024], [0:512]}
  ROOT %dot = bf16[512,512] dot(%block, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
)",
                                                           v5e);
  const HloInstruction* dot = module->entry_computation()->root_instruction();
  ASSERT_EQ(dot->opcode(), HloOpcode::kFusion) << module->ToString();
  const HloInstruction* feed = dot->operand(0);
  ASSERT_EQ(feed->opcode(), HloOpcode::kFusion) << module->ToString();
  EXPECT_TRUE(IsMxuFeed(*feed)) << module->ToString();
  EXPECT_EQ(MxuFeedSource(*feed).opcode(), HloOpcode::kParameter);
  EXPECT_EQ(MxuFeedBytesPerElement(*feed), 2);

  const CostAnalysis cost = AnalyzeTpuCost(*module, v5e).value();
  EXPECT_WITHIN_5_PERCENT(cost.bytes_accessed_hbm, 1572864);
  EXPECT_EQ(cost.instructions.size(), 1u) << FormatInstructionCosts(cost);
}

// A module that did not go through the passes is costed with the plans they would make:
// the same matmul, unplanned, gets the same prediction.
TEST(TpuCostAfterPassesTest, UnplannedModulesGetThePassesPlans) {
  const TpuChipSpec& v4 = ChipSpec("v4");
  constexpr char kText[] = R"(HloModule mm
ENTRY %main (x: f32[8192,4096], w: f32[4096,8192]) -> f32[8192,8192] {
  %x = f32[8192,4096] parameter(0)
  %w = f32[4096,8192] parameter(1)
  ROOT %dot = f32[8192,8192] dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
)";
  const std::unique_ptr<HloModule> planned = CompileForChip(kText, v4);
  const std::unique_ptr<HloModule> unplanned = hlo::ParseHloModule(kText).value();
  const CostAnalysis a = AnalyzeTpuCost(*planned, v4).value();
  const CostAnalysis b = AnalyzeTpuCost(*unplanned, v4).value();
  EXPECT_DOUBLE_EQ(a.predicted_seconds, b.predicted_seconds);
  EXPECT_DOUBLE_EQ(a.bytes_accessed_hbm, b.bytes_accessed_hbm);
}

}  // namespace
}  // namespace jx::tpu::tpu_cost_model_pipeline_test

#undef EXPECT_WITHIN_5_PERCENT

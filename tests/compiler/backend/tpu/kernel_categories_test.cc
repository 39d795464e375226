// TpuKernelCategories: a program's kernel time by XLA op-profile category, on a small
// transformer MLP block compiled by the TPU passes. The non-dot kernels' HBM bytes are derived
// by hand: with the dots' rounding converts fused into their output fusions (the TPU
// pipeline's prefer_output_fusion), every elementwise and reduce kernel reads the dots'
// results as bf16, half the bytes of the f32 accumulators it read before.
#include "jx/compiler/backend/tpu/kernel_categories.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>

#include "jx/compiler/backend/tpu/tpu_pipeline.h"
#include "jx/compiler/hlo/hlo_parser.h"
#include "jx/devices/tpu/chip_specs.h"

namespace jx::tpu::kernel_categories_test {
namespace {

using hlo::HloInstruction;
using hlo::HloOpcode;

// SwiGLU's gate a = x @ w1 and up b = x @ w3 (bf16, 64 MiB each), h = silu(a) * b, and a
// row sum of a * dy that reads a a second time (a backward-pass consumer, as under remat).
constexpr char kSwiGluBlock[] = R"(HloModule swiglu
%add (p: f32[], q: f32[]) -> f32[] {
  %p = f32[] parameter(0)
  %q = f32[] parameter(1)
  ROOT %s = f32[] add(%p, %q)
}
ENTRY %main {
  %x = bf16[4096,4096]{1,0} parameter(0)
  %w1 = bf16[4096,8192]{1,0} parameter(1)
  %w3 = bf16[4096,8192]{1,0} parameter(2)
  %dy = bf16[4096,8192]{1,0} parameter(3)
  %a = bf16[4096,8192]{1,0} dot(%x, %w1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %b = bf16[4096,8192]{1,0} dot(%x, %w3), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %sig = bf16[4096,8192]{1,0} logistic(%a)
  %silu = bf16[4096,8192]{1,0} multiply(%a, %sig)
  %h = bf16[4096,8192]{1,0} multiply(%silu, %b)
  %ady = bf16[4096,8192]{1,0} multiply(%a, %dy)
  %adyf = f32[4096,8192]{1,0} convert(%ady)
  %zero = f32[] constant(0)
  %g = f32[4096]{0} reduce(%adyf, %zero), dimensions={1}, to_apply=%add
  ROOT %t = (bf16[4096,8192]{1,0}, f32[4096]{0}) tuple(%h, %g)
})";

std::map<std::string, KernelCategory> CategoriesOf(const hlo::HloModule& module, const TpuChipSpec& spec) {
  absl::StatusOr<std::vector<KernelCategory>> categories = TpuKernelCategories(module, spec);
  EXPECT_TRUE(categories.ok()) << categories.status();
  std::map<std::string, KernelCategory> out;
  for (const KernelCategory& c : categories.value_or(std::vector<KernelCategory>{})) out[c.name] = c;
  return out;
}

TEST(KernelCategoriesTest, SwiGluBlockNonDotKernelsReadTheDotsAsBf16) {
  const TpuChipSpec& v5e = ChipSpec("v5e");
  std::unique_ptr<hlo::HloModule> module = hlo::ParseHloModule(kSwiGluBlock).value();
  hlo::HloPassPipeline pipeline("tpu");
  AddTpuPasses(pipeline, TpuTargetOptions(v5e));
  ASSERT_TRUE(pipeline.Run(module.get()).ok());

  const std::map<std::string, KernelCategory> c = CategoriesOf(*module, v5e);
  // Two kernels around the dots: a's (dot + rounding convert) and b's, whose epilogue also
  // computes h = silu(a) * b (XLA's output fusion), and one reduce fusion for g. No loop
  // fusion is left, and the converts of x, w1, w3 are MXU feeds (no kernels).
  ASSERT_TRUE(c.contains("convolution fusion"));
  ASSERT_TRUE(c.contains("reduce fusion"));
  EXPECT_EQ(c.at("convolution fusion").kernels, 2);
  EXPECT_EQ(c.at("reduce fusion").kernels, 1);
  EXPECT_EQ(c.size(), 2u);
  constexpr double kBf16Array = 4096.0 * 8192 * 2;  // 64 MiB
  // g: reads a as bf16 (its f32 accumulator before: 2x) and dy; writes 16 KiB of row sums.
  EXPECT_NEAR(c.at("reduce fusion").hbm_bytes / (2 * kBf16Array), 1.0, 0.01);
  // Memory-bound at v5e's HBM bandwidth: its time is those bytes'.
  EXPECT_NEAR(c.at("reduce fusion").memory_seconds * v5e.hbm_bandwidth / (2 * kBf16Array), 1.0, 0.01);
  // Each dot's result is written once, as bf16, and read as bf16.
  for (const HloInstruction* instr : module->entry_computation()->instructions()) {
    if (instr->opcode() != HloOpcode::kFusion) continue;
    EXPECT_EQ(KernelCategoryOf(*instr), instr->fusion_kind() == hlo::FusionKind::kOutput ? "convolution fusion"
                                                                                          : "reduce fusion");
    for (const HloInstruction* operand : instr->operands()) {
      if (operand->opcode() == HloOpcode::kFusion) {
        EXPECT_EQ(operand->shape().element_type(), hlo::PrimitiveType::BF16) << operand->name();
      }
    }
  }
}

TEST(KernelCategoriesTest, CategoriesFollowXlaOpProfile) {
  std::unique_ptr<hlo::HloModule> module = hlo::ParseHloModule(R"(HloModule m
ENTRY %main {
  %x = f32[64,128]{1,0} parameter(0)
  %i = s32[] parameter(1)
  %t = f32[128,64]{1,0} transpose(%x), dimensions={1,0}
  %c = bf16[64,128]{1,0} convert(%x)
  %e = f32[64,128]{1,0} exponential(%x)
  %zero = s32[] constant(0)
  %ds = f32[8,128]{1,0} dynamic-slice(%x, %i, %zero), dynamic_slice_sizes={8,128}
  ROOT %r = (f32[128,64]{1,0}, bf16[64,128]{1,0}, f32[64,128]{1,0}, f32[8,128]{1,0}) tuple(%t, %c, %e, %ds)
})").value();
  const hlo::HloComputation& entry = *module->entry_computation();
  EXPECT_EQ(KernelCategoryOf(*entry.GetInstructionWithName("t")), "data formatting");
  EXPECT_EQ(KernelCategoryOf(*entry.GetInstructionWithName("c")), "convert");
  EXPECT_EQ(KernelCategoryOf(*entry.GetInstructionWithName("e")), "non-fusion elementwise");
  EXPECT_EQ(KernelCategoryOf(*entry.GetInstructionWithName("ds")), "dynamic-slice");
  const std::map<std::string, KernelCategory> c = CategoriesOf(*module, ChipSpec("v5e"));
  EXPECT_EQ(c.size(), 4u);
  for (const auto& [name, category] : c) {
    EXPECT_EQ(category.kernels, 1) << name;
    EXPECT_GT(category.seconds, 0) << name;
  }
}

}  // namespace
}  // namespace jx::tpu::kernel_categories_test

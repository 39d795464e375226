// The TPU pipeline end to end: target options from a chip spec, every pass's mark on the
// module (tiled layouts, MXU passes, mxu_tiling, VMEM), and the host running the result.
#include "jx/compiler/backend/tpu/tpu_pipeline.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include "jx/compiler/backend/cpu/cpu_executable.h"
#include "jx/compiler/backend/tpu/tpu_cost_model.h"
#include "jx/compiler/backend/tpu/tpu_layout.h"
#include "jx/devices/tpu/chip_specs.h"
#include "jx/compiler/hlo/hlo_evaluator.h"
#include "jx/compiler/hlo/hlo_parser.h"
#include "jx/compiler/passes/layout_assignment.h"

namespace jx::tpu::tpu_pipeline_test {
namespace {

using hlo::HloInstruction;
using hlo::HloModule;
using hlo::HloOpcode;
using ::testing::HasSubstr;

TpuChipSpec V6eSpec() {
  TpuChipSpec spec;
  spec.generation = "v6e";
  spec.tensor_cores = 1;
  spec.mxus_per_core = 2;
  spec.mxu_dim = 256;
  spec.vmem_bytes = int64_t{128} << 20;
  return spec;
}

TEST(TpuTargetOptionsTest, ComeFromTheChipSpec) {
  const TpuTargetOptions o(V6eSpec());
  EXPECT_EQ(o.generation, "v6e");
  EXPECT_EQ(o.mxu_dim, 256);
  EXPECT_EQ(o.num_mxus, 2);
  EXPECT_EQ(o.vmem_bytes, int64_t{128} << 20);
  TpuChipSpec v4;
  v4.generation = "v4";
  v4.tensor_cores = 2;  // megacore: both cores' MXUs serve one program
  v4.mxus_per_core = 4;
  EXPECT_EQ(TpuTargetOptions(v4).num_mxus, 8);
}

constexpr char kMlp[] = R"(HloModule mlp
ENTRY %main {
  %x = f32[64,300]{1,0} parameter(0)
  %w = f32[300,200]{1,0} parameter(1)
  %b = f32[200]{0} parameter(2)
  %d = f32[64,200]{1,0} dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %bb = f32[64,200]{1,0} broadcast(%b), dimensions={1}
  %a = f32[64,200]{1,0} add(%d, %bb)
  ROOT %t = f32[64,200]{1,0} tanh(%a)
}
)";

std::unique_ptr<HloModule> CompileForTpu(std::string_view text, const TpuTargetOptions& options) {
  std::unique_ptr<HloModule> module = hlo::ParseHloModule(text).value();
  hlo::HloPassPipeline pipeline("tpu");
  AddTpuPasses(pipeline, options);
  absl::StatusOr<bool> changed = pipeline.Run(module.get());
  EXPECT_TRUE(changed.ok()) << changed.status();
  return module;
}

std::vector<const HloInstruction*> AllOf(const HloModule& module, HloOpcode opcode) {
  std::vector<const HloInstruction*> out;
  for (const hlo::HloComputation* c : module.computations()) {
    for (const HloInstruction* i : c->instructions()) {
      if (i->opcode() == opcode) out.push_back(i);
    }
  }
  return out;
}

TEST(TpuPipelineTest, EveryTargetPassLeavesItsMark) {
  std::unique_ptr<HloModule> module = CompileForTpu(kMlp, TpuTargetOptions(V6eSpec()));
  const std::string text = module->ToString();
  // Tiled layouts, parameters and the output in HBM.
  EXPECT_THAT(text, HasSubstr("f32[64,300]{1,0:T(8,128)} parameter(0)"));
  EXPECT_THAT(text, HasSubstr("bf16[64,300]{1,0:T(16,128)(2,1)}"));
  const HloInstruction* root = module->entry_computation()->root_instruction();
  EXPECT_EQ(root->shape().layout().memory_space, kHbmMemorySpace);
  // DEFAULT precision: one bf16 pass, planned on the v6e's 256x256 MXUs.
  std::vector<const HloInstruction*> dots = AllOf(*module, HloOpcode::kDot);
  ASSERT_EQ(dots.size(), 1u);
  ASSERT_TRUE(dots[0]->has_mxu_tiling());
  EXPECT_EQ(dots[0]->mxu_tiling().tile_rows, 256);
  EXPECT_EQ(dots[0]->mxu_tiling().padded_k, 512);
  EXPECT_EQ(dots[0]->mxu_tiling().padded_n, 256);
  EXPECT_EQ(dots[0]->mxu_tiling().m_groups, 8);
  EXPECT_EQ(AllOf(*module, HloOpcode::kConvert).size(), 4u);
  // Small: nothing needs VMEM tiling.
  for (const hlo::HloComputation* c : module->computations()) {
    for (const HloInstruction* i : c->instructions()) EXPECT_FALSE(i->has_vmem_tiling());
  }
}

TEST(TpuPipelineTest, HighestPrecisionAndSmallVmemShowInTheProgram) {
  TpuTargetOptions options;
  options.default_precision = hlo::Precision::kHighest;
  options.vmem_bytes = 64 << 10;
  std::unique_ptr<HloModule> module = CompileForTpu(kMlp, options);
  EXPECT_EQ(AllOf(*module, HloOpcode::kDot).size(), 6u);
  int tiled = 0;
  for (const HloInstruction* i : module->entry_computation()->instructions()) {
    tiled += i->has_vmem_tiling();
  }
  EXPECT_GT(tiled, 0) << module->ToString();
}

TEST(TpuPipelineTest, TheHostRunsTheTpuProgramAfterTheCpuLayouts) {
  std::unique_ptr<HloModule> module = CompileForTpu(kMlp, TpuTargetOptions());
  // The CPU's layout assignment drops tiles and memory spaces; then the CPU backend runs it.
  ASSERT_TRUE(hlo::LayoutAssignment().Run(module.get()).ok());
  EXPECT_THAT(module->ToString(), ::testing::Not(HasSubstr(":T(")));
  std::unique_ptr<cpu::CpuExecutable> exe = cpu::CompileForCpu(std::move(module)).value();
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1, 1);
  auto random = [&](std::vector<int64_t> dims) {
    hlo::Literal lit(hlo::ShapeUtil::MakeShape(hlo::F32, dims));
    for (int64_t i = 0; i < lit.element_count(); ++i) lit.SetFromDouble(i, dist(rng));
    return lit;
  };
  const hlo::Literal x = random({64, 300}), w = random({300, 200}), b = random({200});
  std::vector<hlo::Literal> out = exe->Run({&x, &w, &b}).value();
  // Against the f32 program on the reference evaluator: bf16 inputs cost ~2^-9 relative
  // per product, far above f32 noise, far below the values' size.
  std::unique_ptr<HloModule> f32 = hlo::ParseHloModule(kMlp).value();
  const hlo::Literal want = hlo::HloEvaluator().Evaluate(*f32, {&x, &w, &b}).value();
  double max_diff = 0;
  for (int64_t i = 0; i < want.element_count(); ++i) {
    max_diff = std::max(max_diff, std::fabs(out[0].GetAsDouble(i) - want.GetAsDouble(i)));
  }
  EXPECT_GT(max_diff, 1e-5);
  EXPECT_LT(max_diff, 5e-2);
}

TEST(TpuPipelineTest, TheCostModelReadsWhatThePipelineProduces) {
  // v5e from the spec table: the [64,300] x [300,200] dot pads K to 384 and N to 256, so the
  // MXU does more work than the useful 2*64*300*200 flops.
  const TpuChipSpec& v5e = ChipSpec("v5e");
  std::unique_ptr<HloModule> module = CompileForTpu(kMlp, TpuTargetOptions(v5e));
  absl::StatusOr<CostAnalysis> cost = AnalyzeTpuCost(*module, v5e);
  ASSERT_TRUE(cost.ok()) << cost.status();
  EXPECT_GE(cost->flops, 2.0 * 64 * 300 * 200);
  EXPECT_GT(cost->predicted_seconds, 0);
  EXPECT_GT(cost->padding_waste, 0);
  EXPECT_FALSE(cost->instructions.empty());
}

// Every collective takes 10 us.
class TenMicrosecondTimer final : public CollectiveTimer {
 public:
  absl::StatusOr<CollectiveTiming> Time(const hlo::HloInstruction&) const override {
    return CollectiveTiming{.seconds = 1e-5, .algorithm = "fixed", .link_bytes = {}};
  }
};

// With a chip and a collective timer, reduce-scatter accumulators may leave loops, priced by
// the chip's schedule (reduce_scatter_hoist_pricing_test.cc) within the chip's HBM.
TEST(TpuPipelineTest, ReduceScatterHoistsArePricedWithAChipAndACollectiveTimer) {
  TpuChipSpec spec = V6eSpec();
  spec.hbm_bytes = int64_t{32} << 30;
  TenMicrosecondTimer timer;
  TpuTargetOptions options(spec);
  options.collective_timer = &timer;
  const hlo::WhileLoopAllReduceCodeMotionOptions o = CollectiveCodeMotionOptions(options);
  EXPECT_TRUE(o.enable_reduce_scatter);
  EXPECT_EQ(o.memory_limit_bytes, int64_t{32} << 30);
  EXPECT_TRUE(o.reduce_scatter_pricing);
  EXPECT_TRUE(o.peak_bytes);
  // Without a collective timer (a program on one chip): all-reduces only.
  EXPECT_FALSE(CollectiveCodeMotionOptions(TpuTargetOptions(spec)).enable_reduce_scatter);
}

// The code motion's estimate of the chip's memory, before TpuNumerics (hand-derived): bf16
// x, w (128 KiB each, live throughout), d = x.w, then exp(d), negate(d) and their sum. As the
// text reads, at the negate d, exp(d) and the negate are live: 256 + 3 x 128 = 640 KiB. On the
// chip the MXU reads x and w as stored (the host's f32 copies, 256 KiB each, are not counted)
// and the dot and its element-wise epilogue are one kernel (output fusion): 256 + the sum =
// 384 KiB.
TEST(TpuPipelineTest, CodeMotionWeighsHoistsAgainstTheChipsPeakOfTheCompiledProgram) {
  auto module = hlo::ParseHloModule(R"(HloModule m
ENTRY %main {
  %x = bf16[256,256]{1,0} parameter(0)
  %w = bf16[256,256]{1,0} parameter(1)
  %d = bf16[256,256]{1,0} dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %e = bf16[256,256]{1,0} exponential(%d)
  %n = bf16[256,256]{1,0} negate(%d)
  ROOT %s = bf16[256,256]{1,0} add(%e, %n)
})").value();
  EXPECT_EQ(hlo::EstimatedPeakBytes(*module).value(), 640 << 10);
  TpuChipSpec spec = V6eSpec();
  spec.hbm_bytes = int64_t{32} << 30;
  TenMicrosecondTimer timer;
  TpuTargetOptions options(spec);
  options.collective_timer = &timer;
  EXPECT_EQ(ChipPeakBytes(*module, options).value(), 384 << 10);
  const hlo::WhileLoopAllReduceCodeMotionOptions o = CollectiveCodeMotionOptions(options);
  ASSERT_TRUE(o.peak_bytes);
  EXPECT_EQ(o.peak_bytes(*module).value(), 384 << 10);
  // Measured on a copy: the module is as it was.
  EXPECT_EQ(module->entry_computation()->instruction_count(), 6);
}

}  // namespace
}  // namespace jx::tpu::tpu_pipeline_test

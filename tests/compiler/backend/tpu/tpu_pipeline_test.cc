// The TPU pipeline end to end: target options from a chip spec, every pass's mark on the
// module (tiled layouts, MXU passes, mxu_tiling, VMEM), and the host running the result.
#include "jx/compiler/backend/tpu/tpu_pipeline.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include "jx/compiler/backend/cpu/cpu_executable.h"
#include "jx/compiler/backend/tpu/tpu_layout.h"
#include "jx/compiler/hlo/hlo_evaluator.h"
#include "jx/compiler/hlo/hlo_parser.h"
#include "jx/compiler/passes/layout_assignment.h"

namespace jx::tpu {
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

}  // namespace
}  // namespace jx::tpu

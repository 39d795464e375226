// The TPU cost model times a linalg custom-call from its LAPACK flop count on the vector
// units (the analysis gives the flops; the chip's VPU rate bounds the panel loops XLA's TPU
// expanders run).
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "jx/compiler/backend/tpu/tpu_cost_model.h"
#include "jx/compiler/hlo/hlo_parser.h"
#include "jx/devices/tpu/chip_specs.h"
#include "jx/lax/kernels/linalg.h"

namespace jx::tpu::linalg_cost_test {
namespace {

namespace kernels = ::jx::lax::kernels;

TEST(TpuLinalgCostTest, CholeskyHasItsFlopsAndVectorTime) {
  kernels::LinalgCall call;
  call.op = kernels::LinalgOp::kCholesky;
  call.lower = true;
  const std::string text = "HloModule m\nENTRY e {\n  p = f32[1024,1024] parameter(0)\n"
                           "  ROOT c = f32[1024,1024] custom-call(p), custom_call_target=\"" +
                           std::string(kernels::LinalgCustomCallTarget(call.op)) + "\", backend_config=\"" +
                           kernels::EncodeLinalgCall(call) + "\"\n}";
  absl::StatusOr<std::unique_ptr<hlo::HloModule>> module = hlo::ParseHloModule(text);
  ASSERT_TRUE(module.ok()) << module.status();
  const TpuChipSpec& spec = ChipSpec("v5e");
  absl::StatusOr<CostAnalysis> cost = AnalyzeTpuCost(**module, spec);
  ASSERT_TRUE(cost.ok()) << cost.status();
  const double n = 1024;
  const double flops = n * n * n / 3 + n * n / 2 + n / 6;
  EXPECT_EQ(cost->flops, flops);
  const InstructionCost* row = nullptr;
  for (const InstructionCost& r : cost->instructions) {
    if (r.name == "c") row = &r;
  }
  ASSERT_NE(row, nullptr);
  EXPECT_EQ(row->unit, "vpu");
  EXPECT_EQ(row->bound_by, "compute");
  EXPECT_GE(row->seconds, flops / spec.vpu_flops());
}

}  // namespace
}  // namespace jx::tpu::linalg_cost_test

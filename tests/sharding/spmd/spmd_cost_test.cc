// The partitioner's cost model prices a dot at the chip's rate for its types (the TPU cost
// model's passes and rates, compiler/backend/tpu/tpu_cost_model.h): bf16 and f32 at DEFAULT in
// one bf16 pass, f32 at HIGH / HIGHEST in 3 / 6, integers on the int8 path (int32 x int32 in 10
// int8 passes), so its strategies compare what the compiled program will cost.
#include <gtest/gtest.h>

#include "jx/compiler/backend/tpu/tpu_cost_model.h"
#include "jx/devices/tpu/chip_specs.h"
#include "jx/jx.h"
#include "jx/sharding/spmd/partitioner.h"
#include "jx/sharding/spmd/spmd_cost.h"

namespace jx::spmd::spmd_cost_test {
namespace {

TEST(SpmdCostTest, DotSecondsFollowTheChipsRatePerType) {
  tpu::Pod pod = tpu::make_pod("v5e", {2, 4});
  const Mesh mesh = make_mesh({2, 4}, {"x", "y"}, pod.devices());
  const std::unique_ptr<SpmdCostModel> cost = MakeCostModel(mesh);
  const tpu::TpuChipSpec& v5e = tpu::ChipSpec("v5e");
  const double flops = 2.0 * 1024 * 2048 * 8192;
  const double bf16 = flops / v5e.bf16_flops;
  EXPECT_DOUBLE_EQ(cost->DotSeconds(flops, {bfloat16, bfloat16, bfloat16}), bf16);
  EXPECT_DOUBLE_EQ(cost->DotSeconds(flops, {float32, float32, float32}), bf16);
  EXPECT_DOUBLE_EQ(cost->DotSeconds(flops, {float32, float32, float32, lax::Precision::kHigh}), 3 * bf16);
  EXPECT_DOUBLE_EQ(cost->DotSeconds(flops, {float32, float32, float32, lax::Precision::kHighest}), 6 * bf16);
  // A bf16 operand has no lower parts: one pass at any precision.
  EXPECT_DOUBLE_EQ(cost->DotSeconds(flops, {bfloat16, bfloat16, float32, lax::Precision::kHighest}), bf16);
  ASSERT_GT(v5e.int8_ops, v5e.bf16_flops);
  EXPECT_DOUBLE_EQ(cost->DotSeconds(flops, {int8, int8, int32}), flops / v5e.int8_ops);
  EXPECT_DOUBLE_EQ(cost->DotSeconds(flops, {int32, int32, int32}), 10 * flops / v5e.int8_ops);
  // One function: what the TPU cost model's MXU time uses.
  EXPECT_DOUBLE_EQ(cost->DotSeconds(flops, {int32, int32, int32}),
                   tpu::PeakMatmulSeconds(v5e, flops, hlo::PrimitiveType::S32, hlo::PrimitiveType::S32,
                                          hlo::PrimitiveType::S32, hlo::Precision::kDefault));
}

TEST(SpmdCostTest, PartitionerPricesAnInt32DotAtItsRate) {
  // The scaling book's A[B_X, D_Y] @ W[D, F_Y] in int32 and in bf16 on a v5e 2x4: the int32
  // candidates' compute (compute-bound kernels, less their launch and grid step) is the bf16
  // ones' times 10 passes at the int8 rate.
  tpu::Pod pod = tpu::make_pod("v5e", {2, 4});
  const Mesh mesh = make_mesh({2, 4}, {"X", "Y"}, pod.devices());
  const NamedSharding a_s(mesh, P("X", "Y")), w_s(mesh, P(none, "Y"));
  auto matmul = [](const Array& a, const Array& w) { return numpy::matmul(a, w); };
  auto compute = [&](DType dtype) {
    auto f = jit(matmul, in_shardings{a_s, w_s}, out_shardings{NamedSharding(mesh, P("X", "Y"))});
    const auto compiled = f.lower(ShapeDtypeStruct{.shape = {1024, 2048}, .dtype = dtype},
                                  ShapeDtypeStruct{.shape = {2048, 8192}, .dtype = dtype})
                              .compile();
    const std::vector<DotDecision>& decisions = compiled.program().dot_decisions();
    EXPECT_EQ(decisions.size(), 1u);
    // All-gather first (whichever wins): the whole local dot, one kernel.
    return decisions.empty() ? 0.0 : decisions[0].candidates[0].compute_seconds;
  };
  const tpu::TpuChipSpec& v5e = tpu::ChipSpec("v5e");
  const double overhead = v5e.kernel_launch_s + v5e.grid_step_s;
  const double bf16 = compute(bfloat16) - overhead;
  ASSERT_GT(bf16, 0);
  EXPECT_NEAR((compute(int32) - overhead) / bf16, 10 * v5e.bf16_flops / v5e.int8_ops, 1e-9);
}

}  // namespace
}  // namespace jx::spmd::spmd_cost_test

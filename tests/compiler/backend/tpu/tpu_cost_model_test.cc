// The TPU cost model against rooflines derived by hand from ../shared/TPU.md (each
// derivation in the test's comment; predictions within 5%), SCALE-Sim's weight-stationary
// timing against a cycle-level systolic array, padding, precision passes and control flow.
#include "jx/compiler/backend/tpu/tpu_cost_model.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "jx/compiler/backend/tpu/mxu_tiling.h"
#include "jx/compiler/backend/tpu/vmem_tiling.h"
#include "jx/compiler/hlo/hlo_parser.h"
#include "jx/compiler/hlo/hlo_verifier.h"
#include "jx/devices/tpu/chip_specs.h"

namespace jx::tpu::tpu_cost_model_test {
namespace {

using ::testing::HasSubstr;

// |predicted / derived - 1| <= 5%.
#define EXPECT_WITHIN_5_PERCENT(predicted, derived) \
  EXPECT_NEAR((predicted) / (derived), 1.0, 0.05) << #predicted << " = " << (predicted)

CostAnalysis Analyze(std::string_view text, std::string_view generation) {
  absl::StatusOr<std::unique_ptr<hlo::HloModule>> module = hlo::ParseHloModule(text);
  EXPECT_TRUE(module.ok()) << module.status();
  if (!module.ok()) return {};
  const absl::Status verified = hlo::VerifyHloModule(**module);
  EXPECT_TRUE(verified.ok()) << verified;
  absl::StatusOr<CostAnalysis> cost = AnalyzeTpuCost(**module, ChipSpec(generation));
  EXPECT_TRUE(cost.ok()) << cost.status();
  return cost.ok() ? *cost : CostAnalysis{};
}

// A module computing type[m,k] @ type[k,n].
std::string Matmul(int64_t m, int64_t k, int64_t n, std::string_view type = "bf16",
                   std::string_view precision = "") {
  const std::string out_type = type == "s8" ? "s32" : std::string(type);
  const std::string x = absl::StrFormat("%s[%d,%d]", type, m, k);
  const std::string w = absl::StrFormat("%s[%d,%d]", type, k, n);
  const std::string out = absl::StrFormat("%s[%d,%d]", out_type, m, n);
  return absl::StrFormat(
      "HloModule mm\nENTRY %%main (x: %s, w: %s) -> %s {\n  %%x = %s parameter(0)\n"
      "  %%w = %s parameter(1)\n  ROOT %%dot = %s dot(%%x, %%w), lhs_contracting_dims={1}, "
      "rhs_contracting_dims={0}%s\n}\n",
      x, w, out, x, w, out, precision);
}

// The MXU tiling pass's plan for the root dot of `text` on a chip.
hlo::MxuTiling RootMxuPlan(std::string_view text, std::string_view generation) {
  std::unique_ptr<hlo::HloModule> module = hlo::ParseHloModule(text).value();
  return PlanMxuTiling(*module->entry_computation()->root_instruction(),
                       TpuTargetOptions(ChipSpec(generation)))
      .value();
}

const InstructionCost& Row(const CostAnalysis& cost, std::string_view name) {
  for (const InstructionCost& row : cost.instructions) {
    if (row.name == name) return row;
  }
  ADD_FAILURE() << "no row " << name;
  static const InstructionCost kNone;
  return kNone;
}

// ---- SCALE-Sim's weight-stationary model --------------------------------------------------

// A cycle-level weight-stationary R x C systolic array computing a[m,k] @ w[k,n] one fold
// (k <= R, n <= C) at a time: R cycles shift the weights in; row t of `a` enters array row i
// at cycle t + i (skewed) and moves one column right per cycle; partial sums move one row down
// per cycle and leave the bottom of column j; a fold ends when the last column's last output
// has drained. Returns the product and the cycle count.
struct SystolicRun {
  std::vector<std::vector<double>> out;
  int64_t cycles = 0;
};
SystolicRun SimulateWeightStationary(int64_t R, int64_t C, const std::vector<std::vector<double>>& a,
                                     const std::vector<std::vector<double>>& w) {
  const int64_t m = a.size(), k = w.size(), n = w[0].size();
  SystolicRun run;
  run.out.assign(m, std::vector<double>(n, 0));
  for (int64_t k0 = 0; k0 < k; k0 += R) {
    for (int64_t n0 = 0; n0 < n; n0 += C) {
      run.cycles += R;  // weight shift-in
      std::vector<std::vector<double>> weight(R, std::vector<double>(C, 0));
      for (int64_t i = 0; i < R && k0 + i < k; ++i) {
        for (int64_t j = 0; j < C && n0 + j < n; ++j) weight[i][j] = w[k0 + i][n0 + j];
      }
      std::vector<std::vector<double>> act(R, std::vector<double>(C, 0)), psum = act;
      std::vector<std::vector<int64_t>> row_of(R, std::vector<int64_t>(C, -1));  // which row t
      int64_t drained = 0;
      for (int64_t cycle = 0; drained < m * C; ++cycle) {
        auto next_act = act, next_psum = psum;
        auto next_row = row_of;
        for (int64_t i = 0; i < R; ++i) {
          for (int64_t j = C - 1; j >= 0; --j) {
            if (j == 0) {
              const int64_t t = cycle - i;
              const bool valid = t >= 0 && t < m;
              next_act[i][0] = valid && k0 + i < k ? a[t][k0 + i] : 0;
              next_row[i][0] = valid ? t : -1;
            } else {
              next_act[i][j] = act[i][j - 1];
              next_row[i][j] = row_of[i][j - 1];
            }
            next_psum[i][j] = (i == 0 ? 0 : psum[i - 1][j]) + next_act[i][j] * weight[i][j];
          }
        }
        act = next_act, psum = next_psum, row_of = next_row;
        for (int64_t j = 0; j < C; ++j) {  // the bottom row's partial sums leave the array
          const int64_t t = row_of[R - 1][j];
          if (t < 0) continue;
          if (n0 + j < n) run.out[t][n0 + j] += psum[R - 1][j];
          ++drained;
        }
        if (drained == m * C) run.cycles += cycle + 1;
      }
    }
  }
  return run;
}

TEST(SystolicTimingTest, CycleLevelArrayMatchesScaleSimWeightStationaryFormula) {
  // Small arrays and GEMMs, one and several folds, full and partial tiles.
  struct Case { int64_t R, C, m, k, n; };
  for (const Case& c : std::vector<Case>{{4, 4, 1, 4, 4}, {4, 4, 7, 4, 4}, {4, 4, 5, 3, 2},
                                         {8, 4, 9, 20, 10}, {3, 5, 6, 7, 11}, {2, 2, 16, 5, 3}}) {
    SCOPED_TRACE(absl::StrCat("R=", c.R, " C=", c.C, " m=", c.m, " k=", c.k, " n=", c.n));
    std::vector<std::vector<double>> a(c.m, std::vector<double>(c.k)), w(c.k, std::vector<double>(c.n));
    for (int64_t i = 0; i < c.m; ++i) for (int64_t j = 0; j < c.k; ++j) a[i][j] = i - 2 * j + 1;
    for (int64_t i = 0; i < c.k; ++i) for (int64_t j = 0; j < c.n; ++j) w[i][j] = 3 * i + j - 4;
    const SystolicRun run = SimulateWeightStationary(c.R, c.C, a, w);
    for (int64_t i = 0; i < c.m; ++i) {
      for (int64_t j = 0; j < c.n; ++j) {
        double expected = 0;
        for (int64_t p = 0; p < c.k; ++p) expected += a[i][p] * w[p][j];
        ASSERT_EQ(run.out[i][j], expected);
      }
    }
    // SCALE-Sim: ceil(k/R) * ceil(n/C) folds of 2R + C + T - 2 cycles (T = m).
    EXPECT_EQ(run.cycles, ScaleSimGemmCycles(c.R, c.C, c.m, c.k, c.n));
    if (c.k <= c.R && c.n <= c.C) {
      EXPECT_EQ(run.cycles, WeightStationaryFoldCycles(c.R, c.C, c.m));
    }
  }
}

TEST(SystolicTimingTest, PipelinedFoldsHideTheWeightLoad) {
  // One fold is SCALE-Sim's; later folds overlap their R-cycle weight load with the stream.
  EXPECT_EQ(MxuPipelineCycles(128, 128, 512, 1), WeightStationaryFoldCycles(128, 128, 512));
  EXPECT_EQ(MxuPipelineCycles(128, 128, 512, 3), 2 * 128 + 128 + 512 - 2 + 2 * 512);
  EXPECT_EQ(MxuPipelineCycles(128, 128, 8, 3), 2 * 128 + 128 + 8 - 2 + 2 * 128);  // load-bound
  EXPECT_EQ(MxuPipelineCycles(128, 128, 8, 0), 0);
  // Large T amortizes the fill/drain: SCALE-Sim's per-fold cost approaches T.
  EXPECT_NEAR(static_cast<double>(WeightStationaryFoldCycles(128, 128, 1 << 20)) / (1 << 20), 1.0, 1e-3);
}

// ---- Rooflines ---------------------------------------------------------------------------

// Compute-bound: bf16[4096,4096] @ bf16[4096,4096] on v5e.
//   FLOPs = 2 * 4096^3 = 1.374e11; T_math = 1.374e11 / 1.97e14 = 697.7 us.
//   bytes = 2 * 3 * 4096^2 = 1.007e8; T_mem = 1.007e8 / 8.2e11 = 122.8 us -> compute-bound
//   (intensity 1365 > 240). Systolic fill/drain adds (2R + C - 2) / (T * tiles per MXU)
//   = 382 / (4096 * 256) < 0.1%; overhead ~1 us. Prediction ~698.9 us.
TEST(TpuCostModelTest, ComputeBoundMatmulOnV5e) {
  const CostAnalysis cost = Analyze(Matmul(4096, 4096, 4096), "v5e");
  EXPECT_DOUBLE_EQ(cost.flops, 2.0 * 4096 * 4096 * 4096);
  EXPECT_DOUBLE_EQ(cost.bytes_accessed_hbm, 2.0 * 3 * 4096 * 4096);
  EXPECT_WITHIN_5_PERCENT(cost.predicted_seconds, 697.7e-6);
  EXPECT_WITHIN_5_PERCENT(cost.compute_seconds, 697.7e-6);
  EXPECT_WITHIN_5_PERCENT(cost.memory_seconds, 122.8e-6);
  EXPECT_EQ(Row(cost, "dot").unit, "mxu");
  EXPECT_EQ(Row(cost, "dot").bound_by, "compute");
  EXPECT_NEAR(cost.mxu_utilization, 1.0, 0.05);
  EXPECT_DOUBLE_EQ(cost.padding_waste, 0);
}

// The same matmul on v5p and v6e.
//   v5p: T_math = 1.374e11 / 4.59e14 = 299.4 us. The three 32 MiB arrays exceed v5p's 64
//   MiB of VMEM: the VMEM tiling splits the output, halving M or N (the larger operand share
//   first) until 2(L/gm + R/gn + O/(gm gn)) fits: (2,1) 128 MiB, (2,2) 80, (4,2) 56 MiB: 8
//   steps; the rhs is read once per row block: min(L + 4R, R + 2L) + O = 128 MiB = 1.342e8
//   bytes -> T_mem = 47.9 us (36.0 us without re-reads). Predicted 299.4 + 0.35 x 9 us.
//   v6e (256x256 MXUs): T_math = 1.374e11 / 9.2e14 = 149.4 us; T_mem = 1.007e8 / 1.6e12 =
//   62.9 us. Both compute-bound.
TEST(TpuCostModelTest, ComputeBoundMatmulOnV5pAndV6e) {
  const CostAnalysis v5p = Analyze(Matmul(4096, 4096, 4096), "v5p");
  EXPECT_WITHIN_5_PERCENT(v5p.predicted_seconds, 299.4e-6);
  EXPECT_WITHIN_5_PERCENT(v5p.memory_seconds, 47.9e-6);
  EXPECT_EQ(Row(v5p, "dot").bound_by, "compute");
  const CostAnalysis v6e = Analyze(Matmul(4096, 4096, 4096), "v6e");
  EXPECT_WITHIN_5_PERCENT(v6e.predicted_seconds, 149.4e-6);
  EXPECT_WITHIN_5_PERCENT(v6e.memory_seconds, 62.9e-6);
  EXPECT_EQ(Row(v6e, "dot").bound_by, "compute");
}

// Memory-bound: a batch-8 bf16[8,8192] @ bf16[8192,8192] (decode-like).
//   bytes = 2 * (8*8192 + 8192^2 + 8*8192) = 1.345e8; intensity 2*8*8192^2 / 1.345e8 = 8.
//   v5e: T_mem = 1.345e8 / 8.2e11 = 164.0 us (T_math = 5.5 us at peak; the MXUs need one
//        weight load of R = 128 cycles per tile: 4096 tiles / 4 MXUs * 128 / 1.5 GHz = 87 us,
//        still below T_mem). The 128 MiB of weights (plus 2 x 128 KiB) exceed v5e's 128 MiB
//        of VMEM: the VMEM tiling splits N (M = 8 is one row block) until the double-
//        buffered blocks fit: 2 x (128/gn MiB + 0.125 + 0.125/gn) fits at gn = 4; every
//        array is still read once. Overhead: launch + 4 grid steps = 5 * 0.35 = 1.75 us.
//        Prediction 165.75 us.
//   v5p (64 MiB of VMEM: gn = 8 steps, dealt over its two TensorCores: launch + 4 steps =
//        5 * 0.35 = 1.75 us): T_mem = 1.345e8 / 2.8e12 = 48.0 us, + 1.75 us = 49.75 us.
//   v6e (128 MiB: gn = 4): T_mem = 1.345e8 / 1.6e12 = 84.0 us, + 1.75 us = 85.75 us.
TEST(TpuCostModelTest, MemoryBoundMatmulOnV5eV5pV6e) {
  const CostAnalysis v5e = Analyze(Matmul(8, 8192, 8192), "v5e");
  EXPECT_WITHIN_5_PERCENT(v5e.predicted_seconds, 165.75e-6);
  EXPECT_WITHIN_5_PERCENT(v5e.memory_seconds, 164.0e-6);
  EXPECT_EQ(Row(v5e, "dot").bound_by, "memory");
  EXPECT_LT(v5e.mxu_utilization, 0.05);
  EXPECT_NEAR(v5e.predicted_seconds - v5e.memory_seconds, 1.75e-6, 1e-9);
  const CostAnalysis v5p = Analyze(Matmul(8, 8192, 8192), "v5p");
  EXPECT_WITHIN_5_PERCENT(v5p.predicted_seconds, 49.75e-6);
  EXPECT_NEAR(v5p.predicted_seconds - v5p.memory_seconds, 1.75e-6, 1e-9);
  EXPECT_EQ(Row(v5p, "dot").bound_by, "memory");
  const CostAnalysis v6e = Analyze(Matmul(8, 8192, 8192), "v6e");
  EXPECT_WITHIN_5_PERCENT(v6e.predicted_seconds, 85.75e-6);
  EXPECT_EQ(Row(v6e, "dot").bound_by, "memory");
}

// Large matmuls on every generation with 128x128 or 256x256 MXUs: bf16[16384,16384]^2 and
// MaxText 32B's MLP dot bf16[8192,6144] @ [6144,21504]. Their arrays (1.5 GiB, 0.67 GiB)
// are far over VMEM, so the VMEM tiling plans [bm, bk] x [bk, bn] blocks. A step's
// intensity from HBM is bm bn / (bm + bn) FLOPs per byte of bf16 operands, and the ridge
// (peak / HBM bandwidth) is 240 on v5e, 229 on v4, 164 on v5p, 575 on v6e, 311 on v7:
// blocks of (1024, 1024) (512 FLOPs/byte, 4 MiB of f32 accumulator) fit even v4's 16 MiB, so
// every chip is compute-bound and the grid steps (0.35 us each, shared by a megacore chip's
// two TensorCores) cost a few percent: MXU utilization >= 85% (a real chip reaches ~90%+;
// the K-whole (M, N) halving before reached 46% on v4 for the 16384 cube, 84% on v7).
TEST(TpuCostModelTest, LargeMatmulIsComputeBoundOnEveryGeneration) {
  for (const char* generation : {"v5e", "v5p", "v4", "v6e", "v7"}) {
    const TpuChipSpec& spec = ChipSpec(generation);
    for (const std::string& text : {Matmul(16384, 16384, 16384), Matmul(8192, 6144, 21504)}) {
      SCOPED_TRACE(absl::StrCat(generation, "\n", text));
      const CostAnalysis cost = Analyze(text, generation);
      EXPECT_EQ(Row(cost, "dot").bound_by, "compute");
      EXPECT_GE(cost.mxu_utilization, 0.85);
      EXPECT_LE(cost.mxu_utilization, 1.0);
      const std::unique_ptr<hlo::HloModule> module = hlo::ParseHloModule(text).value();
      const std::optional<hlo::VmemTiling> plan =
          PlanVmemTiling(*module->entry_computation()->root_instruction(), spec.vmem_bytes, spec.mxu_dim);
      ASSERT_TRUE(plan.has_value());
      EXPECT_LE(plan->vmem_bytes, spec.vmem_bytes);
    }
  }
}

// A skinny (decode-like) bf16[8,8192] @ [8192,8192] stays memory-bound at its roofline on
// every generation: the plan splits N only (M = 8 is one row block), so every array is read
// once (2 x (8 x 8192 + 8192^2 + 8 x 8192) bytes) and the time is those bytes at the HBM
// bandwidth plus the launch and grid-step overhead.
TEST(TpuCostModelTest, SkinnyMatmulStaysAtItsMemoryRoofline) {
  const double bytes = 2.0 * (8 * 8192 + 8192.0 * 8192 + 8 * 8192);
  for (const char* generation : {"v5e", "v5p", "v4", "v6e", "v7"}) {
    SCOPED_TRACE(generation);
    const TpuChipSpec& spec = ChipSpec(generation);
    const std::string text = Matmul(8, 8192, 8192);
    const CostAnalysis cost = Analyze(text, generation);
    EXPECT_EQ(Row(cost, "dot").bound_by, "memory");
    EXPECT_DOUBLE_EQ(cost.bytes_accessed_hbm, bytes);
    EXPECT_NEAR(cost.memory_seconds / (bytes / spec.hbm_bandwidth), 1.0, 1e-9);
    // Nothing beyond the roofline but the fixed costs: the launch and the grid steps (dealt
    // over a megacore chip's two TensorCores).
    const std::unique_ptr<hlo::HloModule> module = hlo::ParseHloModule(text).value();
    const std::optional<hlo::VmemTiling> plan =
        PlanVmemTiling(*module->entry_computation()->root_instruction(), spec.vmem_bytes, spec.mxu_dim);
    ASSERT_TRUE(plan.has_value());
    EXPECT_EQ(plan->grid.front(), 1);  // one row block
    const double steps = static_cast<double>((plan->steps + spec.tensor_cores - 1) / spec.tensor_cores);
    EXPECT_NEAR(cost.predicted_seconds - cost.memory_seconds, spec.kernel_launch_s + steps * spec.grid_step_s, 1e-12);
    EXPECT_LE(plan->vmem_bytes, spec.vmem_bytes);
  }
}

// The crossover batch on v5e: bf16[B,8192] @ bf16[8192,8192] turns compute-bound where
// 2*B*D*F / (2*(B*D + D*F + B*F)) = peak / bandwidth = 1.97e14 / 8.2e11 = 240.2 FLOPs/byte,
// i.e. B = 240.2 * 8192 / (8192 - 2 * 240.2) = 255.2. The model's crossover (the first batch,
// in steps of 8 rows, whose compute time reaches its memory time) must be within 5% of it.
TEST(TpuCostModelTest, CrossoverBatchOnV5eIsNear240FlopsPerByte) {
  int64_t crossover = 0;
  for (int64_t b = 8; b <= 1024 && crossover == 0; b += 8) {
    const CostAnalysis cost = Analyze(Matmul(b, 8192, 8192), "v5e");
    if (cost.compute_seconds >= cost.memory_seconds) crossover = b;
  }
  EXPECT_WITHIN_5_PERCENT(static_cast<double>(crossover), 255.2);
  EXPECT_EQ(Row(Analyze(Matmul(128, 8192, 8192), "v5e"), "dot").bound_by, "memory");
  EXPECT_EQ(Row(Analyze(Matmul(512, 8192, 8192), "v5e"), "dot").bound_by, "compute");
}

// Padding: bf16[1024,100] @ bf16[100,300]. The MXU pads the contraction K = 100 and the output
// width N = 300 to the MXU size: the useful fraction is (K*N) / (ceil_R(K) * ceil_C(N)).
//   128x128 (v5e): 30000 / (128 * 384) = 0.6104 -> padding waste 0.3896.
//   256x256 (v6e): 30000 / (256 * 512) = 0.2289 -> padding waste 0.7711.
// (M = 1024 is a multiple of 8: no row padding.)
TEST(TpuCostModelTest, AwkwardShapesArePaddedToTheMxu) {
  const CostAnalysis v5e = Analyze(Matmul(1024, 100, 300), "v5e");
  EXPECT_WITHIN_5_PERCENT(v5e.padding_waste, 0.3896);
  const CostAnalysis v6e = Analyze(Matmul(1024, 100, 300), "v6e");
  EXPECT_WITHIN_5_PERCENT(v6e.padding_waste, 0.7711);
  // Rows are padded to groups of 8: M = 1020 streams 1024 rows, waste 1 - 0.6104 * 1020/1024.
  EXPECT_WITHIN_5_PERCENT(Analyze(Matmul(1020, 100, 300), "v5e").padding_waste,
                          1 - 0.6104 * 1020 / 1024);
  // The same useful work on 256x256 MXUs wastes more: more of the issued work is padding.
  EXPECT_GT(v6e.padding_waste, v5e.padding_waste);
}

// A transcendental-heavy fusion: exp(tanh(x)) * sin(x) over f32[1024,1024] on v5e.
//   Per element 3 transcendentals at 10 VPU ops each + 1 multiply = 31 ops; 2^20 elements:
//   3.25e7 ops / (8 * 128 lanes * 1.503e9 Hz = 1.539e12 ops/s) = 21.1 us.
//   bytes = 2 * 4 MiB = 8.39e6; T_mem = 8.39e6 / 8.2e11 = 10.2 us -> compute (VPU) bound.
//   Overhead: one grid step + launch = 0.7 us. Prediction 21.8 us.
TEST(TpuCostModelTest, TranscendentalHeavyFusionIsVpuBound) {
  const CostAnalysis cost = Analyze(R"(HloModule t
%fused (p: f32[1024,1024]) -> f32[1024,1024] {
  %p = f32[1024,1024] parameter(0)
  %t = f32[1024,1024] tanh(%p)
  %e = f32[1024,1024] exponential(%t)
  %s = f32[1024,1024] sine(%p)
  ROOT %m = f32[1024,1024] multiply(%e, %s)
}
ENTRY %main (x: f32[1024,1024]) -> f32[1024,1024] {
  %x = f32[1024,1024] parameter(0)
  ROOT %fusion = f32[1024,1024] fusion(%x), kind=kLoop, calls=%fused
})", "v5e");
  EXPECT_DOUBLE_EQ(cost.transcendentals, 3.0 * 1024 * 1024);
  EXPECT_WITHIN_5_PERCENT(cost.predicted_seconds, 21.8e-6);
  EXPECT_WITHIN_5_PERCENT(cost.compute_seconds, 21.1e-6);
  EXPECT_WITHIN_5_PERCENT(cost.memory_seconds, 10.2e-6);
  const InstructionCost& row = Row(cost, "fusion");
  EXPECT_EQ(row.unit, "vpu");
  EXPECT_EQ(row.bound_by, "compute");
  EXPECT_EQ(cost.mxu_utilization, 0);
}

// Fewer weight tiles than MXUs: bf16[4096,128] @ bf16[128,128] on v5e is one 128x128 tile,
// so its 4096 rows are split over the 4 MXUs: T = 4096 / 4 = 1024 rows each, one fold of
// 2*128 + 128 + 1024 - 2 = 1406 cycles / 1.503 GHz = 0.935 us (vs 0.68 us at peak: the
// fill/drain is 27% of a short stream). bytes = 2*(4096*128*2 + 128*128) = 2.13e6 ->
// T_mem = 2.6 us: memory-bound.
TEST(TpuCostModelTest, RowsAreSplitOverMxusWhenTilesAreFew) {
  const CostAnalysis cost = Analyze(Matmul(4096, 128, 128), "v5e");
  EXPECT_WITHIN_5_PERCENT(cost.compute_seconds, 0.935e-6);
  EXPECT_WITHIN_5_PERCENT(cost.memory_seconds, 2.6e-6);
  EXPECT_EQ(Row(cost, "dot").bound_by, "memory");
  const MxuWork work = MatmulOnMxu(ChipSpec("v5e"), RootMxuPlan(Matmul(4096, 128, 128), "v5e"), 1);
  EXPECT_EQ(work.folds, 4);
  EXPECT_EQ(work.folds_per_mxu, 1);
  EXPECT_EQ(work.streamed_rows, 1024);
  EXPECT_EQ(work.cycles, 1406);
}

// A convolution is an implicit GEMM on the MXU: bf16 NHWC [8,32,32,128] with a 3x3x128x128
// kernel, SAME padding. Rows M = 8*32*32 = 8192, contraction K = 128*9 = 1152, columns
// N = 128: ceil(1152/128) = 9 weight tiles over 4 MXUs -> 3 folds on the busiest MXU, each
// streaming T = 8192 rows: 2*128 + 128 + 8192 - 2 + 2*8192 = 24958 cycles / 1.503 GHz =
// 16.6 us (the 9-over-4 imbalance costs 3/2.25; at peak it would be 12.3 us).
// bytes = 2*(2*8*32*32*128 + 9*128*128) = 4.49e6 -> T_mem = 5.5 us: compute-bound.
// Prediction 16.6 + 0.7 (launch, one grid step) = 17.3 us.
TEST(TpuCostModelTest, ConvolutionIsAnImplicitGemmOnTheMxu) {
  const CostAnalysis cost = Analyze(R"(HloModule c
ENTRY %main (x: bf16[8,32,32,128], k: bf16[3,3,128,128]) -> bf16[8,32,32,128] {
  %x = bf16[8,32,32,128] parameter(0)
  %k = bf16[3,3,128,128] parameter(1)
  ROOT %conv = bf16[8,32,32,128] convolution(%x, %k), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
})", "v5e");
  EXPECT_WITHIN_5_PERCENT(cost.compute_seconds, 16.6e-6);
  EXPECT_WITHIN_5_PERCENT(cost.memory_seconds, 5.5e-6);
  EXPECT_WITHIN_5_PERCENT(cost.predicted_seconds, 17.3e-6);
  EXPECT_EQ(Row(cost, "conv").unit, "mxu");
  EXPECT_EQ(Row(cost, "conv").bound_by, "compute");
  // Taps on the padding do no useful work: the issued work includes them.
  EXPECT_GT(cost.padding_waste, 0);
}

// ---- Precision, dtypes, overheads, control flow --------------------------------------------

// f32 matmuls: DEFAULT is one bf16 pass, HIGH three, HIGHEST six (compute-bound shape, so the
// time scales with the passes: 697.7 us per pass on v5e).
TEST(TpuCostModelTest, F32PrecisionCostsBf16Passes) {
  const double one = Analyze(Matmul(4096, 4096, 4096, "f32"), "v5e").compute_seconds;
  const double high =
      Analyze(Matmul(4096, 4096, 4096, "f32", ", operand_precision={high,high}"), "v5e").compute_seconds;
  const double highest =
      Analyze(Matmul(4096, 4096, 4096, "f32", ", operand_precision={highest,highest}"), "v5e")
          .compute_seconds;
  EXPECT_WITHIN_5_PERCENT(one, 697.7e-6);
  EXPECT_WITHIN_5_PERCENT(high, 3 * 697.7e-6);
  EXPECT_WITHIN_5_PERCENT(highest, 6 * 697.7e-6);
  // bf16 operands ignore the precision: one pass.
  EXPECT_WITHIN_5_PERCENT(
      Analyze(Matmul(4096, 4096, 4096, "bf16", ", operand_precision={highest,highest}"), "v5e")
          .compute_seconds,
      697.7e-6);
}

// int8 runs at the int8 rate (2x bf16 on v5e, 1x on v4); f64 is emulated: 28 bf16 passes on
// the MXU, and the analysis says so.
TEST(TpuCostModelTest, Int8RateAndEmulatedF64) {
  const double bf16 = Analyze(Matmul(4096, 4096, 4096), "v5e").compute_seconds;
  EXPECT_WITHIN_5_PERCENT(Analyze(Matmul(4096, 4096, 4096, "s8"), "v5e").compute_seconds, bf16 / 2);
  EXPECT_WITHIN_5_PERCENT(Analyze(Matmul(4096, 4096, 4096, "s8"), "v4").compute_seconds,
                          Analyze(Matmul(4096, 4096, 4096), "v4").compute_seconds);
  const CostAnalysis f64 = Analyze(Matmul(1024, 1024, 1024, "f64"), "v5e");
  EXPECT_TRUE(f64.f64_emulated);
  // 2 * 1024^3 * 28 passes / 1.97e14 = 305.2 us.
  EXPECT_WITHIN_5_PERCENT(f64.compute_seconds, 305.2e-6);
  EXPECT_FALSE(Analyze(Matmul(1024, 1024, 1024), "v5e").f64_emulated);
  const CostAnalysis f64_add = Analyze(R"(HloModule a
ENTRY %main (x: f64[1024], y: f64[1024]) -> f64[1024] {
  %x = f64[1024] parameter(0)
  %y = f64[1024] parameter(1)
  ROOT %a = f64[1024] add(%x, %y)
})", "v5e");
  EXPECT_TRUE(f64_add.f64_emulated);
}

// Wider integers are int8 passes over their bytes at the int8 rate: one per byte pair whose
// product lands below the 32-bit result, so s32 x s32 -> s32 takes 10 (v5e: 5x the bf16 time,
// v4: 10x), s16 x s16 -> s32 4 (no f64 emulation is reported).
TEST(TpuCostModelTest, WideIntegerMatmulsAreInt8Passes) {
  for (const char* generation : {"v5e", "v4"}) {
    const double int8 = Analyze(Matmul(4096, 4096, 4096, "s8"), generation).compute_seconds;
    const CostAnalysis s32 = Analyze(Matmul(4096, 4096, 4096, "s32"), generation);
    EXPECT_WITHIN_5_PERCENT(s32.compute_seconds, 10 * int8) << generation;
    EXPECT_FALSE(s32.f64_emulated) << generation;
    const std::string s16 = absl::StrFormat(
        "HloModule mm\nENTRY %%main (x: s16[4096,4096], w: s16[4096,4096]) -> s32[4096,4096] {\n"
        "  %%x = s16[4096,4096] parameter(0)\n  %%w = s16[4096,4096] parameter(1)\n"
        "  ROOT %%dot = s32[4096,4096] dot(%%x, %%w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n");
    EXPECT_WITHIN_5_PERCENT(Analyze(s16, generation).compute_seconds, 4 * int8) << generation;
  }
  EXPECT_WITHIN_5_PERCENT(Analyze(Matmul(4096, 4096, 4096, "s32"), "v5e").compute_seconds,
                          5 * Analyze(Matmul(4096, 4096, 4096), "v5e").compute_seconds);
}

// A tiny op is dominated by the fixed costs: f32[8,128] + f32[8,128] on v5e moves 12 KiB
// (15 ns of HBM time) but pays the launch and one grid step: 0.7 us.
TEST(TpuCostModelTest, TinyOpsPayTheFixedOverhead) {
  const CostAnalysis cost = Analyze(R"(HloModule a
ENTRY %main (x: f32[8,128], y: f32[8,128]) -> f32[8,128] {
  %x = f32[8,128] parameter(0)
  %y = f32[8,128] parameter(1)
  ROOT %a = f32[8,128] add(%x, %y)
})", "v5e");
  EXPECT_WITHIN_5_PERCENT(cost.predicted_seconds, 0.7e-6);
  EXPECT_EQ(Row(cost, "a").bound_by, "overhead");
  EXPECT_EQ(Row(cost, "a").unit, "vpu");
}

// A while loop with a constant trip count runs its body's kernels that many times: 10 x the
// bf16[4096,4096] matmul = 10 x 698.9 us on v5e.
TEST(TpuCostModelTest, WhileLoopCostsTripCountTimesItsBody) {
  const CostAnalysis cost = Analyze(R"(HloModule w
%body (s: (s32[], bf16[4096,4096])) -> (s32[], bf16[4096,4096]) {
  %s = (s32[], bf16[4096,4096]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %v = bf16[4096,4096] get-tuple-element(%s), index=1
  %one = s32[] constant(1)
  %next = s32[] add(%i, %one)
  %y = bf16[4096,4096] dot(%v, %v), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT %t = (s32[], bf16[4096,4096]) tuple(%next, %y)
}
%cond (c: (s32[], bf16[4096,4096])) -> pred[] {
  %c = (s32[], bf16[4096,4096]) parameter(0)
  %ci = s32[] get-tuple-element(%c), index=0
  %n = s32[] constant(10)
  ROOT %lt = pred[] compare(%ci, %n), direction=LT
}
ENTRY %main (x: bf16[4096,4096]) -> (s32[], bf16[4096,4096]) {
  %x = bf16[4096,4096] parameter(0)
  %zero = s32[] constant(0)
  %init = (s32[], bf16[4096,4096]) tuple(%zero, %x)
  ROOT %loop = (s32[], bf16[4096,4096]) while(%init), condition=%cond, body=%body
})", "v5e");
  // The scalar add and compare are tiny kernels: 21 of them at ~0.7 us each add ~15 us.
  EXPECT_WITHIN_5_PERCENT(cost.predicted_seconds, 10 * 698.9e-6);
  EXPECT_WITHIN_5_PERCENT(cost.compute_seconds, 10 * 697.7e-6);
  EXPECT_EQ(Row(cost, "loop").unit, "mxu");
  EXPECT_EQ(Row(cost, "loop").bound_by, "compute");
}

// An output fusion (dot + bias + relu) is one kernel: MXU time, the epilogue on the VPU
// hidden under it, bytes only at the boundary.
TEST(TpuCostModelTest, OutputFusionIsOneKernel) {
  const CostAnalysis cost = Analyze(R"(HloModule o
%fused (p0: bf16[4096,4096], p1: bf16[4096,4096], p2: bf16[4096,4096]) -> bf16[4096,4096] {
  %p0 = bf16[4096,4096] parameter(0)
  %p1 = bf16[4096,4096] parameter(1)
  %p2 = bf16[4096,4096] parameter(2)
  %d = bf16[4096,4096] dot(%p0, %p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %a = bf16[4096,4096] add(%d, %p2)
  ROOT %r = bf16[4096,4096] maximum(%a, %p2)
}
ENTRY %main (x: bf16[4096,4096], w: bf16[4096,4096], b: bf16[4096,4096]) -> bf16[4096,4096] {
  %x = bf16[4096,4096] parameter(0)
  %w = bf16[4096,4096] parameter(1)
  %b = bf16[4096,4096] parameter(2)
  ROOT %fusion = bf16[4096,4096] fusion(%x, %w, %b), kind=kOutput, calls=%fused
})", "v5e");
  EXPECT_WITHIN_5_PERCENT(cost.predicted_seconds, 698.9e-6);
  EXPECT_EQ(Row(cost, "fusion").unit, "mxu");
  ASSERT_EQ(cost.instructions.size(), 1u);  // parameters run no code: no rows
}

TEST(TpuCostModelTest, TableShowsWhereTheStepGoes) {
  const CostAnalysis cost = Analyze(R"(HloModule t
ENTRY %main (x: bf16[4096,4096], w: bf16[4096,4096]) -> bf16[4096,4096] {
  %x = bf16[4096,4096] parameter(0)
  %w = bf16[4096,4096] parameter(1)
  %dot = bf16[4096,4096] dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT %neg = bf16[4096,4096] negate(%dot)
})", "v5e");
  ASSERT_EQ(cost.instructions.size(), 2u);
  EXPECT_EQ(cost.instructions[0].name, "dot");  // program order
  EXPECT_EQ(Row(cost, "neg").unit, "vpu");
  EXPECT_EQ(Row(cost, "neg").bound_by, "memory");
  EXPECT_NEAR(cost.predicted_seconds, Row(cost, "dot").seconds + Row(cost, "neg").seconds, 1e-12);
  const std::string table = FormatInstructionCosts(cost);
  EXPECT_THAT(table, HasSubstr("bound by"));
  EXPECT_THAT(table, HasSubstr("mxu"));
  EXPECT_LT(table.find("dot"), table.find("neg"));  // slowest first
  EXPECT_THAT(table, HasSubstr("MXU utilization"));
}

TEST(TpuCostModelTest, ModuleWithoutEntryIsAnError) {
  hlo::HloModule module("empty");
  EXPECT_FALSE(AnalyzeTpuCost(module, ChipSpec("v5e")).ok());
}

}  // namespace
}  // namespace jx::tpu::tpu_cost_model_test

#undef EXPECT_WITHIN_5_PERCENT

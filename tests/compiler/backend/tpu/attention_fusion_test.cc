// AttentionFusion: a query block's two key blocks of online-softmax attention (nn::
// flash_attention's forward tile loop, written out) become one kernel on a v5e; the host's
// numbers are bit-equal to the program without it; the cost model charges the kernel its
// dots' MXU time, its softmax's VPU time and the HBM bytes of Q, K, V and the outputs only;
// chains without a softmax, or too big for VMEM, stay as they were.
#include "jx/compiler/backend/tpu/attention_fusion.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "jx/compiler/backend/cpu/cpu_executable.h"
#include "jx/compiler/backend/tpu/attention_rows.h"
#include "jx/compiler/backend/tpu/tpu_cost_model.h"
#include "jx/compiler/backend/tpu/tpu_pipeline.h"
#include "jx/compiler/hlo/hlo_parser.h"
#include "jx/compiler/passes/layout_assignment.h"
#include "jx/devices/tpu/chip_specs.h"

namespace jx::tpu::attention_fusion_test {
namespace {

using hlo::HloInstruction;
using hlo::HloModule;
using hlo::HloOpcode;

// q [B=2, N=4, 128, 128] against two key/value blocks of 128 rows: the first block's scores,
// row max, weights and P.V; the second block's, rescaling the first's row sum and output by
// exp(m0 - m1); the normalized output and the rows' log-sum-exp.
constexpr char kTwoKeyBlocks[] = R"(HloModule attention_block
%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %m = f32[] maximum(%a, %b)
}
%add (c: f32[], d: f32[]) -> f32[] {
  %c = f32[] parameter(0)
  %d = f32[] parameter(1)
  ROOT %s = f32[] add(%c, %d)
}
ENTRY %main {
  %q = bf16[2,4,128,128]{3,2,1,0} parameter(0)
  %k = bf16[2,4,256,128]{3,2,1,0} parameter(1)
  %v = bf16[2,4,256,128]{3,2,1,0} parameter(2)
  %k0 = bf16[2,4,128,128]{3,2,1,0} slice(%k), slice={[0:2], [0:4], [0:128], [0:128]}
  %k1 = bf16[2,4,128,128]{3,2,1,0} slice(%k), slice={[0:2], [0:4], [128:256], [0:128]}
  %v0 = bf16[2,4,128,128]{3,2,1,0} slice(%v), slice={[0:2], [0:4], [0:128], [0:128]}
  %v1 = bf16[2,4,128,128]{3,2,1,0} slice(%v), slice={[0:2], [0:4], [128:256], [0:128]}
  %ninf = f32[] constant(-inf)
  %zero = f32[] constant(0)
  %s0 = f32[2,4,128,128]{3,2,1,0} dot(%q, %k0), lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,1}, rhs_contracting_dims={3}
  %m0 = f32[2,4,128]{2,1,0} reduce(%s0, %ninf), dimensions={3}, to_apply=%max
  %m0b = f32[2,4,128,128]{3,2,1,0} broadcast(%m0), dimensions={0,1,2}
  %d0 = f32[2,4,128,128]{3,2,1,0} subtract(%s0, %m0b)
  %p0 = f32[2,4,128,128]{3,2,1,0} exponential(%d0)
  %l0 = f32[2,4,128]{2,1,0} reduce(%p0, %zero), dimensions={3}, to_apply=%add
  %p0h = bf16[2,4,128,128]{3,2,1,0} convert(%p0)
  %o0 = f32[2,4,128,128]{3,2,1,0} dot(%p0h, %v0), lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,1}, rhs_contracting_dims={2}
  %s1 = f32[2,4,128,128]{3,2,1,0} dot(%q, %k1), lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,1}, rhs_contracting_dims={3}
  %t1 = f32[2,4,128]{2,1,0} reduce(%s1, %ninf), dimensions={3}, to_apply=%max
  %m1 = f32[2,4,128]{2,1,0} maximum(%m0, %t1)
  %m1b = f32[2,4,128,128]{3,2,1,0} broadcast(%m1), dimensions={0,1,2}
  %d1 = f32[2,4,128,128]{3,2,1,0} subtract(%s1, %m1b)
  %p1 = f32[2,4,128,128]{3,2,1,0} exponential(%d1)
  %dm = f32[2,4,128]{2,1,0} subtract(%m0, %m1)
  %c1 = f32[2,4,128]{2,1,0} exponential(%dm)
  %r1 = f32[2,4,128]{2,1,0} reduce(%p1, %zero), dimensions={3}, to_apply=%add
  %l0c = f32[2,4,128]{2,1,0} multiply(%l0, %c1)
  %l1 = f32[2,4,128]{2,1,0} add(%l0c, %r1)
  %p1h = bf16[2,4,128,128]{3,2,1,0} convert(%p1)
  %pv1 = f32[2,4,128,128]{3,2,1,0} dot(%p1h, %v1), lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,1}, rhs_contracting_dims={2}
  %c1b = f32[2,4,128,128]{3,2,1,0} broadcast(%c1), dimensions={0,1,2}
  %o0c = f32[2,4,128,128]{3,2,1,0} multiply(%o0, %c1b)
  %o1 = f32[2,4,128,128]{3,2,1,0} add(%o0c, %pv1)
  %l1b = f32[2,4,128,128]{3,2,1,0} broadcast(%l1), dimensions={0,1,2}
  %out = f32[2,4,128,128]{3,2,1,0} divide(%o1, %l1b)
  %outh = bf16[2,4,128,128]{3,2,1,0} convert(%out)
  %logl = f32[2,4,128]{2,1,0} log(%l1)
  %lse = f32[2,4,128]{2,1,0} add(%m1, %logl)
  ROOT %t = (bf16[2,4,128,128]{3,2,1,0}, f32[2,4,128]{2,1,0}) tuple(%outh, %lse)
})";

std::unique_ptr<HloModule> CompileForTpu(std::string_view text, const TpuTargetOptions& options) {
  std::unique_ptr<HloModule> module = hlo::ParseHloModule(text).value();
  hlo::HloPassPipeline pipeline("tpu");
  AddTpuPasses(pipeline, options);
  absl::StatusOr<bool> changed = pipeline.Run(module.get());
  EXPECT_TRUE(changed.ok()) << changed.status();
  return module;
}

std::vector<const HloInstruction*> AttentionKernels(const HloModule& module) {
  std::vector<const HloInstruction*> out;
  for (const HloInstruction* i : module.entry_computation()->instructions()) {
    if (IsAttentionFusion(*i)) out.push_back(i);
  }
  return out;
}

// The entry's kernels that compute (not parameters, tuples, MXU feeds).
int64_t Kernels(const HloModule& module, const TpuChipSpec& spec) {
  const CostAnalysis cost = AnalyzeTpuCost(module, spec).value();
  int64_t n = 0;
  for (const InstructionCost& row : cost.instructions) n += row.seconds > 0 ? 1 : 0;
  return n;
}

std::vector<hlo::Literal> RunOnHost(std::unique_ptr<HloModule> module, const std::vector<hlo::Literal>& args) {
  EXPECT_TRUE(hlo::LayoutAssignment().Run(module.get()).ok());
  std::unique_ptr<cpu::CpuExecutable> exe = cpu::CompileForCpu(std::move(module)).value();
  std::vector<const hlo::Literal*> ptrs;
  for (const hlo::Literal& a : args) ptrs.push_back(&a);
  return exe->Run(ptrs).value();
}

TEST(AttentionFusionTest, OneKernelForTheQueryBlockSameNumbers) {
  const TpuChipSpec& v5e = ChipSpec("v5e");
  TpuTargetOptions unfused_options(v5e);
  unfused_options.attention_fusion = false;
  std::unique_ptr<HloModule> fused = CompileForTpu(kTwoKeyBlocks, TpuTargetOptions(v5e));
  std::unique_ptr<HloModule> unfused = CompileForTpu(kTwoKeyBlocks, unfused_options);
  const std::vector<const HloInstruction*> kernels = AttentionKernels(*fused);
  ASSERT_EQ(kernels.size(), 1u) << fused->ToString();
  EXPECT_TRUE(AttentionKernels(*unfused).empty());
  // Everything but the MXU feeds of K and V's blocks runs in the one kernel.
  EXPECT_EQ(Kernels(*fused, v5e), 1) << fused->ToString();
  EXPECT_GT(Kernels(*unfused, v5e), 5);
  EXPECT_EQ(kernels[0]->shape().tuple_shapes_size(), 2);

  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  std::vector<hlo::Literal> args;
  for (const std::vector<int64_t>& dims : std::vector<std::vector<int64_t>>{{2, 4, 128, 128}, {2, 4, 256, 128}, {2, 4, 256, 128}}) {
    hlo::Literal lit(hlo::ShapeUtil::MakeShape(hlo::BF16, dims));
    for (int64_t i = 0; i < lit.element_count(); ++i) lit.SetFromDouble(i, normal(rng));
    args.push_back(std::move(lit));
  }
  const std::vector<hlo::Literal> got = RunOnHost(std::move(fused), args);
  const std::vector<hlo::Literal> want = RunOnHost(std::move(unfused), args);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].element_count(), want[i].element_count());
    for (int64_t e = 0; e < got[i].element_count(); ++e) {
      ASSERT_EQ(got[i].GetAsDouble(e), want[i].GetAsDouble(e)) << "output " << i << " element " << e;
    }
  }
}

// The kernel's time from TPU.md's formulas, on v5e (clock f = 1.97e14 / (4 MXUs x 128^2 x 2)).
// E = 2 x 4 x 128 x 128 elements of a score block or of the output, R = 2 x 4 x 128 rows.
//  - MXU: four dots, each 8 weight tiles of 128 x 128 (batch 2 x 4) streaming 128 rows, 2 per
//    MXU: 2R + C + T - 2 + max(T, R) = 638 cycles; 4 x 638 cycles.
//  - VPU: the reduces (two row maxes, two row sums) 4 (E - R) flops; subtract and exp of both
//    blocks 2E flops + 2E exps; the output's rescale, add, divide and bf16 convert 4E; the rows'
//    maximum, subtract, multiply, add and add of the log-sum-exp 5R, their exp and log 2R. The
//    MXU feeds (bf16 widenings, the weights' bf16 rounding) are the MXU's. A transcendental is
//    10 VPU ops: 30E + 21R ops at 8 x 128 lanes per cycle.
//  - HBM: Q (256 KiB), K and V (512 KiB each) read, the bf16 output (256 KiB) and the f32
//    log-sum-exp (4 KiB: 4 rows of a (4, 128) tile) written, two f32 scalars: no score block.
//  - time = max(MXU, VPU, HBM) + one launch + 8 grid steps (batch x heads).
TEST(AttentionFusionTest, KernelTimeFromTheFormulas) {
  const TpuChipSpec& v5e = ChipSpec("v5e");
  std::unique_ptr<HloModule> fused = CompileForTpu(kTwoKeyBlocks, TpuTargetOptions(v5e));
  const CostAnalysis cost = AnalyzeTpuCost(*fused, v5e).value();
  const double clock = 1.97e14 / (4 * 128 * 128 * 2);
  const double e = 2 * 4 * 128 * 128, r = 2 * 4 * 128;
  const double mxu = 4 * (2 * 128 + 128 + 128 - 2 + 128) / clock;
  const double vpu = (30 * e + 21 * r) / (8 * 128 * clock);
  const double hbm_bytes = 256 * 1024 + 2 * 512 * 1024 + 256 * 1024 + 4 * 1024 + 8;
  const double hbm = hbm_bytes / 8.2e11;
  const double want = std::max({mxu, vpu, hbm}) + v5e.kernel_launch_s + 8 * v5e.grid_step_s;
  EXPECT_NEAR(cost.bytes_accessed_hbm, hbm_bytes, 1);
  EXPECT_NEAR(cost.compute_seconds, vpu, 1e-3 * vpu);
  EXPECT_NEAR(cost.predicted_seconds, want, 1e-3 * want);
  // Unfused, the score blocks (512 KiB here) stay in VMEM between kernels too (the VMEM
  // residency pass), but 14 kernels each pay a launch and a round of VMEM traffic: 14.4 us
  // against the kernel's 5.7 us.
  TpuTargetOptions unfused_options(v5e);
  unfused_options.attention_fusion = false;
  const CostAnalysis unfused = AnalyzeTpuCost(*CompileForTpu(kTwoKeyBlocks, unfused_options), v5e).value();
  EXPECT_GT(unfused.predicted_seconds, 2 * cost.predicted_seconds);
}

// Without an exp between the dots (a batched matmul chain), or when one grid point's values
// do not fit VMEM, the kernels stay apart.
TEST(AttentionFusionTest, NoSoftmaxOrNoRoomNoKernel) {
  constexpr char kBatchedChain[] = R"(HloModule chain
ENTRY %main {
  %a = bf16[8,128,128]{2,1,0} parameter(0)
  %b = bf16[8,128,128]{2,1,0} parameter(1)
  %c = bf16[8,128,128]{2,1,0} parameter(2)
  %ab = f32[8,128,128]{2,1,0} dot(%a, %b), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
  %t = f32[8,128,128]{2,1,0} tanh(%ab)
  %th = bf16[8,128,128]{2,1,0} convert(%t)
  ROOT %abc = f32[8,128,128]{2,1,0} dot(%th, %c), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
})";
  const TpuChipSpec& v5e = ChipSpec("v5e");
  EXPECT_TRUE(AttentionKernels(*CompileForTpu(kBatchedChain, TpuTargetOptions(v5e))).empty());
  TpuTargetOptions small(v5e);
  small.vmem_bytes = 256 << 10;  // one (batch, head)'s 64 KiB score blocks, several at once: no room
  EXPECT_TRUE(AttentionKernels(*CompileForTpu(kTwoKeyBlocks, small)).empty());
}

// One key block's attention, op by op (the pass alone, no instruction fusion): grid B x N =
// 2 x 4 = 8 points; per point a bf16 [128, 128] block is 32 KiB, an f32 one 64 KiB, a row
// vector [128] f32 512 B (the [2, 4, 128] array pads to (4, 128) tiles: 4 KiB / 8).
constexpr char kOneKeyBlock[] = R"(HloModule one_key_block
%max (x0: f32[], x1: f32[]) -> f32[] {
  %x0 = f32[] parameter(0)
  %x1 = f32[] parameter(1)
  ROOT %larger = f32[] maximum(%x0, %x1)
}
%add (y0: f32[], y1: f32[]) -> f32[] {
  %y0 = f32[] parameter(0)
  %y1 = f32[] parameter(1)
  ROOT %sum = f32[] add(%y0, %y1)
}
ENTRY %main {
  %q = bf16[2,4,128,128]{3,2,1,0} parameter(0)
  %k = bf16[2,4,128,128]{3,2,1,0} parameter(1)
  %v = bf16[2,4,128,128]{3,2,1,0} parameter(2)
  %ninf = f32[] constant(-inf)
  %zero = f32[] constant(0)
  %s = f32[2,4,128,128]{3,2,1,0} dot(%q, %k), lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,1}, rhs_contracting_dims={3}
  %m = f32[2,4,128]{2,1,0} reduce(%s, %ninf), dimensions={3}, to_apply=%max
  %mb = f32[2,4,128,128]{3,2,1,0} broadcast(%m), dimensions={0,1,2}
  %d = f32[2,4,128,128]{3,2,1,0} subtract(%s, %mb)
  %p = f32[2,4,128,128]{3,2,1,0} exponential(%d)
  %ph = bf16[2,4,128,128]{3,2,1,0} convert(%p)
  %o = f32[2,4,128,128]{3,2,1,0} dot(%ph, %v), lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,1}, rhs_contracting_dims={2}
  %l = f32[2,4,128]{2,1,0} reduce(%p, %zero), dimensions={3}, to_apply=%add
  %lb = f32[2,4,128,128]{3,2,1,0} broadcast(%l), dimensions={0,1,2}
  ROOT %out = f32[2,4,128,128]{3,2,1,0} divide(%o, %lb)
})";

// kOneKeyBlock after the pass alone on a chip with `vmem_bytes` of VMEM.
std::unique_ptr<HloModule> FuseOneKeyBlock(int64_t vmem_bytes) {
  std::unique_ptr<HloModule> module = hlo::ParseHloModule(kOneKeyBlock).value();
  TpuTargetOptions options(ChipSpec("v5e"));
  options.vmem_bytes = vmem_bytes;
  EXPECT_TRUE(AttentionFusion(options).Run(module.get()).ok());
  return module;
}

// The kernel runs s, m, mb, d, p, ph, o, l, lb, out (post order); a block is free after its last
// reader, the output stays. Live per point (KiB): s 64, +m 64.5, +mb 128.5, at d s + mb + d = 192,
// then 128, 96, 160, 128.5, 128.5, at out o + lb + out = 192: peak 192 KiB (no order holds
// less: d reads s and mb, out reads o and lb). Plus Q, K, V
// double-buffered 2 x 3 x 32 = 192 KiB, the two f32 scalars 2 x 8 B, the output's write-back
// block 64 KiB: 448 KiB + 16 B. All values held at once (the old upper bound) would be
// 7 x 64 + 32 + 2 x 0.5 = 481 KiB of values, 737 KiB + 16 B in all: it rejected this region
// anywhere from 448 to 737 KiB of VMEM.
TEST(AttentionFusionTest, VmemCountsTheBlocksLiveAtOnce) {
  constexpr int64_t kLive = 448 * 1024 + 16;
  const std::unique_ptr<HloModule> fits = FuseOneKeyBlock(kLive);
  const std::vector<const HloInstruction*> kernels = AttentionKernels(*fits);
  ASSERT_EQ(kernels.size(), 1u) << fits->ToString();
  const std::optional<hlo::VmemTiling> plan = PlanAttentionKernel(*kernels[0], kLive, 128);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->vmem_bytes, kLive);
  EXPECT_EQ(plan->steps, 8);
  EXPECT_EQ(AttentionKernels(*FuseOneKeyBlock(512 * 1024)).size(), 1u);  // under the 737 KiB bound
  // One byte short: the liveness estimate rejects it too (so does the bound).
  EXPECT_TRUE(AttentionKernels(*FuseOneKeyBlock(kLive - 1)).empty());
}

// A query block too long for VMEM runs in row blocks. kOneKeyBlock's attention with 256 query
// and key rows, grid B x N = 1 x 8 points; per point an f32 [256, 256] block is 256 KiB, an f32
// [256, 128] one 128 KiB, a bf16 [256, 128] one 64 KiB, a row vector [256] f32 1 KiB (the [1, 8,
// 256] array fills (8, 128) tiles).
constexpr char kLongRows[] = R"(HloModule long_rows
%max (x0: f32[], x1: f32[]) -> f32[] {
  %x0 = f32[] parameter(0)
  %x1 = f32[] parameter(1)
  ROOT %larger = f32[] maximum(%x0, %x1)
}
%add (y0: f32[], y1: f32[]) -> f32[] {
  %y0 = f32[] parameter(0)
  %y1 = f32[] parameter(1)
  ROOT %sum = f32[] add(%y0, %y1)
}
ENTRY %main {
  %q = bf16[1,8,256,128]{3,2,1,0} parameter(0)
  %k = bf16[1,8,256,128]{3,2,1,0} parameter(1)
  %v = bf16[1,8,256,128]{3,2,1,0} parameter(2)
  %ninf = f32[] constant(-inf)
  %zero = f32[] constant(0)
  %s = f32[1,8,256,256]{3,2,1,0} dot(%q, %k), lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,1}, rhs_contracting_dims={3}
  %m = f32[1,8,256]{2,1,0} reduce(%s, %ninf), dimensions={3}, to_apply=%max
  %mb = f32[1,8,256,256]{3,2,1,0} broadcast(%m), dimensions={0,1,2}
  %d = f32[1,8,256,256]{3,2,1,0} subtract(%s, %mb)
  %p = f32[1,8,256,256]{3,2,1,0} exponential(%d)
  %ph = bf16[1,8,256,256]{3,2,1,0} convert(%p)
  %o = f32[1,8,256,128]{3,2,1,0} dot(%ph, %v), lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,1}, rhs_contracting_dims={2}
  %l = f32[1,8,256]{2,1,0} reduce(%p, %zero), dimensions={3}, to_apply=%add
  %lb = f32[1,8,256,128]{3,2,1,0} broadcast(%l), dimensions={0,1,2}
  ROOT %out = f32[1,8,256,128]{3,2,1,0} divide(%o, %lb)
})";

// `text` after the pass alone on a v5e (MXUs 128 wide) with `vmem_bytes` of VMEM.
std::unique_ptr<HloModule> FuseAlone(std::string_view text, int64_t vmem_bytes) {
  std::unique_ptr<HloModule> module = hlo::ParseHloModule(text).value();
  TpuTargetOptions options(ChipSpec("v5e"));
  options.vmem_bytes = vmem_bytes;
  EXPECT_TRUE(AttentionFusion(options).Run(module.get()).ok());
  return module;
}

// The whole query block, in post order s, m, mb, d, p, ph, o, l, lb, out (kOneKeyBlock's
// liveness, 4x the bytes): peak s + mb + d = 768 KiB, plus Q, K, V double-buffered 2 x 3 x 64 =
// 384 KiB, the output's write-back block 128 KiB, the two f32 scalars 2 x 8 B: 1280 KiB + 16 B.
// In two row blocks of block_q = 128 (the largest multiple of 128 below 256 dividing it), every
// value with query rows is half: s, mb, d, p 128 KiB, ph, o, lb, out 64 KiB, m and l 512 B; K and
// V are whole (2 x 64 KiB double-buffered) but held only around their one reader each (s, o),
// as are the scalars (around m, l). Live (KiB): s 128 + K 128 = 256, m 128.5, mb 256.5,
// d s + mb + d = 384, p 256, ph 192, o p + ph + o + V 128 = 384, l 192.5, lb 128.5, out 192:
// peak 384 KiB (reading l before o, as the list scheduler may, still peaks at d). Plus Q's
// row block double-buffered 2 x 32 KiB and the output's write-back row block 64 KiB: 512 KiB.
// HBM: Q 512 KiB once, K and V 512 KiB each per row block (2 MiB), the scalars 8 B per row
// block, the f32 output 1 MiB once: 3584 KiB + 16 B; 8 points x 2 row blocks = 16 steps.
TEST(AttentionFusionTest, AQueryBlockTooLongForVmemRunsInRowBlocks) {
  constexpr int64_t kWhole = 1280 * 1024 + 16, kRowBlocks = 512 * 1024;
  const std::unique_ptr<HloModule> split = FuseAlone(kLongRows, 1 << 20);
  const std::vector<const HloInstruction*> kernels = AttentionKernels(*split);
  ASSERT_EQ(kernels.size(), 1u) << split->ToString();
  const std::optional<hlo::VmemTiling> plan = PlanAttentionKernel(*kernels[0], 1 << 20, 128);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->grid, (std::vector<int64_t>{1, 8, 2}));
  EXPECT_EQ(plan->block, (std::vector<int64_t>{1, 1, 128}));
  EXPECT_EQ(plan->steps, 16);
  EXPECT_EQ(plan->vmem_bytes, kRowBlocks);
  EXPECT_EQ(plan->hbm_bytes, 3584 * 1024 + 16);
  // The whole block where it fits; no kernel where not even a row block does.
  const std::optional<hlo::VmemTiling> whole = PlanAttentionKernel(*kernels[0], kWhole, 128);
  ASSERT_TRUE(whole.has_value());
  EXPECT_EQ(whole->grid, (std::vector<int64_t>{1, 8}));
  EXPECT_EQ(whole->vmem_bytes, kWhole);
  EXPECT_EQ(PlanAttentionKernel(*kernels[0], kWhole - 1, 128)->grid.size(), 3u);
  EXPECT_EQ(AttentionKernels(*FuseAlone(kLongRows, kRowBlocks)).size(), 1u);
  EXPECT_TRUE(AttentionKernels(*FuseAlone(kLongRows, kRowBlocks - 1)).empty());
}

// Scores, weights and P.V where the program's post order holds the weights p through the P.V
// dot (the row sum l reads p after it): s, p, ph, o, l. Per point (grid 2 x 4): f32 blocks 64 KiB,
// bf16 32 KiB, the row sum 512 B; o and l are outputs (live to the end). Post order: s 64,
// p s + p 128, ph 96, o p + ph + o 160, l 128.5: peak 160 KiB. The list scheduler runs l right
// after p (it frees nothing but allocates least), then ph frees p: s 64, p 128, l 64.5,
// ph 96.5, o l + ph + o 96.5: peak 128 KiB. Plus Q, K, V double-buffered 2 x 3 x 32 = 192 KiB,
// the outputs' write-back blocks 64.5 KiB, the f32 scalar 8 B: 384.5 KiB + 8 B in the list
// order, 416.5 KiB + 8 B in the program's.
constexpr char kWeightsHeldThroughPv[] = R"(HloModule weights_held
%add (y0: f32[], y1: f32[]) -> f32[] {
  %y0 = f32[] parameter(0)
  %y1 = f32[] parameter(1)
  ROOT %sum = f32[] add(%y0, %y1)
}
ENTRY %main {
  %q = bf16[2,4,128,128]{3,2,1,0} parameter(0)
  %k = bf16[2,4,128,128]{3,2,1,0} parameter(1)
  %v = bf16[2,4,128,128]{3,2,1,0} parameter(2)
  %zero = f32[] constant(0)
  %s = f32[2,4,128,128]{3,2,1,0} dot(%q, %k), lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,1}, rhs_contracting_dims={3}
  %p = f32[2,4,128,128]{3,2,1,0} exponential(%s)
  %ph = bf16[2,4,128,128]{3,2,1,0} convert(%p)
  %o = f32[2,4,128,128]{3,2,1,0} dot(%ph, %v), lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,1}, rhs_contracting_dims={2}
  %l = f32[2,4,128]{2,1,0} reduce(%p, %zero), dimensions={3}, to_apply=%add
  ROOT %t = (f32[2,4,128,128]{3,2,1,0}, f32[2,4,128]{2,1,0}) tuple(%o, %l)
})";

TEST(AttentionFusionTest, VmemTakesTheListSchedulersOrderWhenItHoldsLess) {
  constexpr int64_t kListOrder = 384 * 1024 + 512 + 8;
  const std::unique_ptr<HloModule> fits = FuseAlone(kWeightsHeldThroughPv, kListOrder);
  const std::vector<const HloInstruction*> kernels = AttentionKernels(*fits);
  ASSERT_EQ(kernels.size(), 1u) << fits->ToString();
  EXPECT_EQ(PlanAttentionKernel(*kernels[0], kListOrder, 128)->vmem_bytes, kListOrder);
  // The program's order would need 32 KiB more.
  EXPECT_EQ(PlanAttentionKernel(*kernels[0], kListOrder, 128)->grid, (std::vector<int64_t>{2, 4}));
  EXPECT_TRUE(AttentionKernels(*FuseAlone(kWeightsHeldThroughPv, kListOrder - 1)).empty());
}

// One tile of the flash-attention backward pass (FlashAttention-2's: p recomputed from the saved
// log-sum-exp, dv = p^T dO, dp = dO V^T, ds = p (dp - delta), dq = ds K, dk = ds^T Q), 256 query
// and key rows, through the whole TPU pipeline on a chip whose VMEM holds no whole grid point:
// its rows run in blocks of 128, dq per row block, dk and dv sums over the rows held through the
// row blocks; the host's numbers equal the unfused program's.
constexpr char kBackwardTile[] = R"(HloModule backward_tile
ENTRY %main {
  %q = bf16[1,8,256,128]{3,2,1,0} parameter(0)
  %k = bf16[1,8,256,128]{3,2,1,0} parameter(1)
  %v = bf16[1,8,256,128]{3,2,1,0} parameter(2)
  %do = bf16[1,8,256,128]{3,2,1,0} parameter(3)
  %lse = f32[1,8,256]{2,1,0} parameter(4)
  %delta = f32[1,8,256]{2,1,0} parameter(5)
  %s = f32[1,8,256,256]{3,2,1,0} dot(%q, %k), lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,1}, rhs_contracting_dims={3}
  %lseb = f32[1,8,256,256]{3,2,1,0} broadcast(%lse), dimensions={0,1,2}
  %d = f32[1,8,256,256]{3,2,1,0} subtract(%s, %lseb)
  %p = f32[1,8,256,256]{3,2,1,0} exponential(%d)
  %ph = bf16[1,8,256,256]{3,2,1,0} convert(%p)
  %dv = f32[1,8,256,128]{3,2,1,0} dot(%ph, %do), lhs_batch_dims={0,1}, lhs_contracting_dims={2}, rhs_batch_dims={0,1}, rhs_contracting_dims={2}
  %dp = f32[1,8,256,256]{3,2,1,0} dot(%do, %v), lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,1}, rhs_contracting_dims={3}
  %deltab = f32[1,8,256,256]{3,2,1,0} broadcast(%delta), dimensions={0,1,2}
  %dpd = f32[1,8,256,256]{3,2,1,0} subtract(%dp, %deltab)
  %ds = f32[1,8,256,256]{3,2,1,0} multiply(%p, %dpd)
  %dsh = bf16[1,8,256,256]{3,2,1,0} convert(%ds)
  %dq = f32[1,8,256,128]{3,2,1,0} dot(%dsh, %k), lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,1}, rhs_contracting_dims={2}
  %dk = f32[1,8,256,128]{3,2,1,0} dot(%dsh, %q), lhs_batch_dims={0,1}, lhs_contracting_dims={2}, rhs_batch_dims={0,1}, rhs_contracting_dims={2}
  %dqh = bf16[1,8,256,128]{3,2,1,0} convert(%dq)
  %dkh = bf16[1,8,256,128]{3,2,1,0} convert(%dk)
  %dvh = bf16[1,8,256,128]{3,2,1,0} convert(%dv)
  ROOT %t = (bf16[1,8,256,128]{3,2,1,0}, bf16[1,8,256,128]{3,2,1,0}, bf16[1,8,256,128]{3,2,1,0}) tuple(%dqh, %dkh, %dvh)
})";

std::vector<hlo::Literal> RandomArgs(const std::vector<hlo::Shape>& shapes) {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal;
  std::vector<hlo::Literal> args;
  for (const hlo::Shape& shape : shapes) {
    hlo::Literal lit(shape);
    for (int64_t i = 0; i < lit.element_count(); ++i) lit.SetFromDouble(i, normal(rng));
    args.push_back(std::move(lit));
  }
  return args;
}

void ExpectSameNumbers(const std::vector<hlo::Literal>& got, const std::vector<hlo::Literal>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].element_count(), want[i].element_count());
    for (int64_t e = 0; e < got[i].element_count(); ++e) {
      ASSERT_EQ(got[i].GetAsDouble(e), want[i].GetAsDouble(e)) << "output " << i << " element " << e;
    }
  }
}

// The kernel's row dims and sums, and its plan, on a v5e with `vmem_bytes` of VMEM.
void ExpectRowBlocksOf128SameNumbers(std::string_view text, int64_t vmem_bytes, const std::vector<hlo::Shape>& args) {
  const TpuChipSpec& v5e = ChipSpec("v5e");
  TpuTargetOptions small(v5e), unfused_options(v5e);
  small.vmem_bytes = vmem_bytes;
  unfused_options.vmem_bytes = vmem_bytes;
  unfused_options.attention_fusion = false;
  std::unique_ptr<HloModule> fused = CompileForTpu(text, small);
  const std::vector<const HloInstruction*> kernels = AttentionKernels(*fused);
  ASSERT_EQ(kernels.size(), 1u) << fused->ToString();
  ASSERT_TRUE(kernels[0]->has_vmem_tiling());
  const hlo::VmemTiling& plan = kernels[0]->vmem_tiling();
  EXPECT_EQ(plan.grid, (std::vector<int64_t>{1, 8, 2})) << fused->ToString();
  EXPECT_EQ(plan.block, (std::vector<int64_t>{1, 1, 128}));
  EXPECT_LE(plan.vmem_bytes, vmem_bytes);
  const std::vector<hlo::Literal> inputs = RandomArgs(args);
  ExpectSameNumbers(RunOnHost(std::move(fused), inputs), RunOnHost(CompileForTpu(text, unfused_options), inputs));
}

TEST(AttentionFusionTest, RowBlocksOfTheForwardAndBackwardPassKeepTheNumbers) {
  const hlo::Shape rows = hlo::ShapeUtil::MakeShape(hlo::BF16, {1, 8, 256, 128});
  const hlo::Shape stats = hlo::ShapeUtil::MakeShape(hlo::F32, {1, 8, 256});
  ExpectRowBlocksOf128SameNumbers(kLongRows, 1 << 20, {rows, rows, rows});
  ExpectRowBlocksOf128SameNumbers(kBackwardTile, 3 << 19, {rows, rows, rows, rows, stats, stats});
}

// The backward tile's rows: dq has them (a row block's dq is its rows'), dk and dv are sums
// over them, as are their bf16 roundings; K and V are read whole by every row block.
TEST(AttentionFusionTest, BackwardTileSumsDkAndDvOverTheRows) {
  std::unique_ptr<HloModule> module = hlo::ParseHloModule(kBackwardTile).value();
  std::vector<HloInstruction*> members;
  for (HloInstruction* x : module->entry_computation()->MakeInstructionPostOrder()) {
    if (x->opcode() != HloOpcode::kParameter && x->shape().IsArray()) members.push_back(x);
  }
  const QueryRows rows = FindQueryRows(members, [](const HloInstruction* x) {
    return x->opcode() != HloOpcode::kParameter;
  });
  auto named = [&](std::string_view name) { return module->entry_computation()->GetInstructionWithName(name); };
  EXPECT_EQ(rows.extent, 256);
  for (std::string_view name : {"q", "do", "lse", "delta", "s", "p", "dp", "ds", "dq", "dqh"}) {
    EXPECT_EQ(rows.RowDim(*named(name)), 2) << name;
  }
  for (std::string_view name : {"k", "v"}) EXPECT_EQ(rows.RowDim(*named(name)), -1) << name;
  for (std::string_view name : {"dk", "dv", "dkh", "dvh"}) {
    EXPECT_EQ(rows.RowDim(*named(name)), -1) << name;
    EXPECT_TRUE(rows.summed.contains(named(name))) << name;
  }
  EXPECT_FALSE(rows.summed.contains(named("dq")));
}

}  // namespace
}  // namespace jx::tpu::attention_fusion_test

// The TPU cost model: what an optimized HLO module costs on one chip generation
// (TpuChipSpec), in the spirit of the scaling book's rooflines and SCALE-Sim's systolic
// timing (../shared/TPU.md). It is HloCostAnalysis (flops, transcendentals, bytes) with a
// hook per opcode that adds each instruction's time. It charges the plans the TPU passes
// record (compiler/backend/tpu/tpu_pipeline.h) and, for a module that did not go through
// them, the plans those passes would make (PlanMxuTiling, PlanVmemTiling, TpuTilesFor): one
// source for padding and tiling, whether or not the passes ran.
//  - MXU (dot, convolution as an implicit GEMM [batch*positions, K] @ [K, N]): from the
//    `mxu_tiling` plan: the rhs is the stationary weight, contraction and output width padded
//    to the MXU size R = C (128, or 256 on v6e/v7), streamed rows in groups of 8, weight tiles
//    spread over the chip's MXUs (rows split across MXUs when tiles are fewer). One fold
//    (a R x C weight tile, T streamed rows) costs SCALE-Sim's 2R + C + T - 2 cycles; later
//    folds on the same MXU load their weights while the previous fold streams (weights are
//    double-buffered in the MXU, Jouppi et al. 2017) and add max(T, R) cycles each.
//    Precision: bf16 operands take 1 MXU pass; f32 at DEFAULT 1, HIGH 3, HIGHEST 6 (the
//    operand_precision attribute; the higher of the two operands); f64 is emulated
//    (kF64MatmulPasses bf16 passes). Integer dots run at the chip's int8 rate, wider integers
//    as int8 passes over their bytes: one per byte pair whose product lands below the int32
//    (or wider) result, so int8 1 pass, int32 x int32 -> int32 10 (bytes i + j < 4).
//  - VPU: flops / (cores x 8 x 128 lanes x clock); a transcendental costs
//    kTranscendentalVpuOps VPU ops; f64 elementwise work costs kF64VpuOps f32 ops each.
//  - Memory: HBM bytes are the analysis' boundary bytes (fused intermediates stay on chip),
//    each array padded to its layout's tiles (tpu::PaddedBytes: f32[300,100] moves
//    304 x 128 x 4 bytes), except values in VMEM (layout memory space S(1)), which the VMEM
//    tiling pass keeps on chip: those are charged at the VMEM bandwidth only. A kernel with
//    a `vmem_tiling` plan (its working set exceeds VMEM) moves the plan's hbm_bytes instead
//    (operands re-read per grid step, double-buffered) and pays its `steps` grid steps.
//    VMEM bytes (the streamed operand re-read per output-column tile, the weights and result
//    once, per pass; at least what HBM and VMEM-resident values supply) at the VMEM bandwidth.
//  - The converts the numerics pass writes around MXU operands (MXU feeds, mxu_feed.h) are
//    no kernels on a chip: they cost nothing, and the contraction reads their source.
//  - Per kernel (an instruction of the entry or of a while/call/conditional body; a fusion is
//    one kernel): compute = the busier of MXU and VPU (VLIW bundles issue both), memory =
//    the slower of HBM and VMEM, time = max(compute, memory) + kernel_launch_s + grid steps x
//    grid_step_s (one step for a kernel that fits VMEM; a megacore chip's TensorCores share
//    the steps: ceil(steps / cores); kernel_roofline.h, which the SPMD partitioner's pricing
//    uses too). Control flow sums its kernels (while loops x their trip count).
// The analysis is one pass over the module, linear in its instructions.
//
//   const TpuChipSpec& v5e = tpu::ChipSpec("v5e");              // devices/tpu/chip_specs.h
//   HLO_ASSIGN_OR_RETURN(CostAnalysis cost, tpu::AnalyzeTpuCost(*module, v5e));
//   cost.predicted_seconds;                  // e.g. 7.0e-4 for bf16[4096,4096] @ [4096,4096]
//   std::cout << tpu::FormatInstructionCosts(cost);  // where the step's time goes
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "jx/compiler/analysis/hlo_cost_analysis.h"
#include "jx/compiler/backend/tpu/collective_timer.h"
#include "jx/compiler/backend/tpu/tpu_chip_spec.h"
#include "jx/compiler/hlo/hlo_tiling_attributes.h"
#include "jx/core/executable.h"

namespace jx::tpu {

// A transcendental (exp, log, tanh, ...) costs this many VPU ops: a range reduction plus a
// polynomial of about ten multiply-adds (a model assumption; the TPU has no per-lane
// transcendental unit in TPU.md's model).
inline constexpr double kTranscendentalVpuOps = 10;
// f64 has no TPU hardware: XLA emulates it with pairs of f32 ("double-float"); an add or
// multiply takes about ten f32 ops (a model assumption).
inline constexpr double kF64VpuOps = 10;
// MXU passes per precision: splitting a value into p bf16 pieces (8 significand bits each)
// and keeping the p(p+1)/2 leading cross products: f32 (24 bits) p = 3 gives HIGHEST's 6,
// f64 (53 bits) p = 7 gives 28.
inline constexpr int64_t kF32HighPasses = 3;
inline constexpr int64_t kF32HighestPasses = 6;
inline constexpr int64_t kF64MatmulPasses = 28;
// Rows of the streamed operand go through the MXU in groups of this many (one vreg's sublanes).
inline constexpr int64_t kStreamedRowGroup = 8;

// SCALE-Sim's weight-stationary cycles for one fold: a rows x cols weight tile shifted in,
// then `streamed_rows` rows streamed through the array and drained: 2R + C + T - 2.
int64_t WeightStationaryFoldCycles(int64_t rows, int64_t cols, int64_t streamed_rows);
// SCALE-Sim's weight-stationary cycles for [m, k] @ [k, n] on one rows x cols array, folds
// run back to back: ceil(k/R) * ceil(n/C) * (2R + C + m - 2).
int64_t ScaleSimGemmCycles(int64_t rows, int64_t cols, int64_t m, int64_t k, int64_t n);
// `folds` folds of `streamed_rows` rows back to back on one MXU with double-buffered weights:
// the first fold costs 2R + C + T - 2, each later one max(T, R). 0 folds cost 0.
int64_t MxuPipelineCycles(int64_t rows, int64_t cols, int64_t streamed_rows, int64_t folds);

struct MxuWork {
  int64_t folds = 0;          // weight tiles x passes x row splits
  int64_t streamed_rows = 0;  // T of each fold (a multiple of 8)
  int64_t folds_per_mxu = 0;
  int64_t cycles = 0;         // on the busiest MXU
  double seconds = 0;
  double issued_flops = 0;    // 2 x R x C x T per fold: padding included
};
// How the MXUs run a contraction of `lhs` x `rhs` -> `result` whose operands ask for
// `precision` (the higher of the two): in `passes` bf16 passes (f32 by precision, f64
// emulated, integers as int8 passes over their bytes; see the file comment), at `rate` times
// the bf16 MXU speed (int8_ops / bf16_flops for integer dots, 1 otherwise). One source for the
// cost model's MXU time and for callers that price a dot before there is HLO (the SPMD
// partitioner's strategies).
struct MatmulPasses {
  int64_t passes = 1;
  double rate = 1;
  bool integer = false;  // runs on the int8 path
};
MatmulPasses MatmulPassesFor(const TpuChipSpec& spec, hlo::PrimitiveType lhs, hlo::PrimitiveType rhs,
                             hlo::PrimitiveType result, hlo::Precision precision);
// Seconds of `flops` useful FLOPs of such a contraction at the chip's peak MXU rate (no
// padding, tiling or memory time): flops x passes / (bf16_flops x rate).
double PeakMatmulSeconds(const TpuChipSpec& spec, double flops, hlo::PrimitiveType lhs, hlo::PrimitiveType rhs,
                         hlo::PrimitiveType result, hlo::Precision precision);

// A matmul whose MXU plan (the MXU tiling pass's PlanMxuTiling: padding, weight tiles, row
// groups) is `plan`, run in `passes` bf16 passes on the chip's MXUs; `rate` scales the MXU's
// speed (int8 runs at int8_ops / bf16_flops). The plan's tiles (times passes) are dealt over
// the MXUs as the plan deals them (folds_per_mxu == plan.waves for one pass); when they are
// fewer than the MXUs, each tile's row groups are split over the idle ones.
MxuWork MatmulOnMxu(const TpuChipSpec& spec, const hlo::MxuTiling& plan, int64_t passes,
                    double rate = 1);

// The analysis for one chip generation (see the file comment).
class TpuCostModel : public hlo::HloCostAnalysis {
 public:
  // timer: how collectives are timed (null: a one-chip program; a collective over more than
  // one partition then fails the analysis).
  explicit TpuCostModel(const TpuChipSpec& spec, const CollectiveTimer* timer = nullptr);
  const TpuChipSpec& spec() const { return spec_; }
  // The first collective the last analysis could not time (OK when all were).
  absl::Status network_status() const { return network_status_; }

 private:
  void AddMatrixTime(const hlo::HloInstruction& instr, hlo::HloCost* cost) const;
  void AddVectorTime(const hlo::HloInstruction& instr, hlo::HloCost* cost) const;
  // The roofline of an instruction that is its own kernel.
  void FinishKernel(const hlo::HloInstruction& instr, hlo::HloCost* cost) const;
  // A collective's time on the network (the ICI), from the timer.
  void AddNetworkTime(const hlo::HloInstruction& instr, hlo::HloCost* cost) const;

  TpuChipSpec spec_;
  const CollectiveTimer* timer_;
  mutable absl::Status network_status_;  // the first collective the timer could not time
};

// The user-facing cost analysis (compiled.cost_analysis()) of an optimized module on a chip:
// totals, per-memory-space bytes, predicted/compute/memory seconds, MXU utilization, padding
// waste and a row per entry instruction that runs code. Fails without an entry computation.
// Collectives run on the "ici" unit for the timer's time (communication_seconds sums them);
// without a timer, only collectives whose groups are single partitions (cost 0) are allowed.
absl::StatusOr<CostAnalysis> AnalyzeTpuCost(const hlo::HloModule& module,
                                            const TpuChipSpec& spec,
                                            const CollectiveTimer* timer = nullptr);

// The rows of one computation (a while body's), in the order it runs (its schedule), each
// instruction costed as a kernel as AnalyzeTpuCost's rows are; its collectives timed by the
// timer (it fails as AnalyzeTpuCost does without one).
absl::StatusOr<std::vector<InstructionCost>> TpuInstructionCosts(const hlo::HloComputation& computation,
                                                                 const TpuChipSpec& spec,
                                                                 const CollectiveTimer* timer = nullptr);

// The per-instruction table, one line per row, slowest first:
//   name          opcode   unit  flops     bytes     time(us)  bound by
std::string FormatInstructionCosts(const CostAnalysis& cost);

}  // namespace jx::tpu

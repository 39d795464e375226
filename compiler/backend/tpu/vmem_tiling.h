// VmemTilingPass ("vmem-tiling"): decides what lives in the TPU's VMEM. Two jobs, on every
// computation that is not a fusion body, in the computation's sequential order:
//
// 1. Kernels too big for VMEM. A kernel (fusion, dot, convolution) whose operands and
//    result, padded to tiles (PaddedBytes), exceed VMEM is split into a grid of blocks so
//    one step's double-buffered blocks fit; the plan is recorded as
//    `vmem_tiling={grid=.., block=.., steps=.., vmem_bytes=.., hbm_bytes=..}`
//    (compiler/hlo/hlo_tiling_attributes.h), which the cost model charges per grid step
//    and for the HBM<->VMEM traffic. Kernels that fit get no attribute.
//      - a dot (or a fusion around one): grid and block over the GEMM's (M, N) output, K
//        whole; blocks halve along M or N, whichever operand's share is larger, until a step
//        fits. Each step holds an lhs row block, an rhs column block and an output block,
//        all double-buffered. The outer grid axis's operand is read once and the other
//        operand once per outer step (a block whose index does not change between steps is
//        not fetched again), the cheaper order is taken: hbm = min(L + R gm, R + L gn) + O.
//      - anything else: the grid runs over the most major dim of the kernel's largest array
//        (the output of an elementwise fusion, the input of a reduction); arrays that share
//        that dim's extent are streamed block by block (double-buffered), the others stay
//        resident (a broadcast row, a reduction's accumulator). Blocks keep whole (8,128)
//        tiles.
// 2. VMEM residency (a simple memory-space assignment). A value one kernel produces and
//    later kernels read, that is neither an entry parameter nor an output, and whose padded
//    bytes fit in what half of VMEM has left while it is live, is placed in VMEM (its
//    layout's memory space becomes S(1)): it never goes to HBM. The other half of VMEM is
//    left to the kernels' own double buffers. Values of tiled kernels stay in HBM.
//
// Values never change: only layouts' memory spaces and the attribute do. Run after the
// TPU layout assignment (it reads tiles) and the scheduler (it walks the schedule).
//
//   VmemTilingPass pass(TpuTargetOptions(spec));
//   HLO_ASSIGN_OR_RETURN(bool changed, pass.Run(module));
#pragma once

#include <optional>
#include <string_view>

#include "absl/status/statusor.h"
#include "jx/compiler/backend/tpu/tpu_target_options.h"
#include "jx/compiler/hlo/hlo_instruction.h"
#include "jx/compiler/hlo/hlo_pass.h"

namespace jx::tpu {

// The dot a kernel runs: itself, or the first one inside its fused computation; null if none.
const hlo::HloInstruction* KernelDot(const hlo::HloInstruction& kernel);

// The VMEM plan of one kernel on a chip with `vmem_bytes` of VMEM and MXUs `mxu_dim` wide, or
// nullopt when its working set fits in VMEM as it is (an attention kernel always has one: its
// grid over batch x heads, and query row blocks).
std::optional<hlo::VmemTiling> PlanVmemTiling(const hlo::HloInstruction& kernel, int64_t vmem_bytes,
                                              int64_t mxu_dim);

class VmemTilingPass : public hlo::HloPass {
 public:
  explicit VmemTilingPass(TpuTargetOptions options = {}) : options_(std::move(options)) {}
  std::string_view name() const override { return "vmem-tiling"; }
  absl::StatusOr<bool> Run(hlo::HloModule* module) override;

 private:
  TpuTargetOptions options_;
};

}  // namespace jx::tpu

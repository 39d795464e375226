// AttentionFusion ("attention-fusion"): blockwise attention as one TPU kernel, the way a
// Pallas flash-attention kernel runs it (jax.experimental.pallas.ops.tpu.flash_attention,
// MaxText's attention=flash). After instruction fusion, a blocked attention (nn::
// flash_attention's tiles) is a chain of kernels: the QK^T dot, the softmax's row max, exp and
// row sum, the P.V dot, the running rescales; each writes its [.., block_q, block_kv] f32
// score block to HBM and the next reads it back. This pass groups such a chain into one
// kCustom fusion (backend_config "attention") whose kernels become nested fusions, as XLA's
// custom fusions nest theirs: on the chip it is one kernel whose grid runs over the dots'
// batch dims (batch x heads), one grid point's blocks in VMEM.
//
// Which kernels join (one region per connected chain):
//   - a dot kernel (a dot, or a fusion around one) whose dot has batch dims; its batch dims'
//     extents, leading its result, are the region's grid G;
//   - any elementwise, reduce, broadcast, transpose, convert, copy or (non-custom) fusion
//     kernel whose result's leading dims are G, connected to the region through an operand
//     or a user: the per-(batch, head) softmax and accumulator work between the dots;
//   - the elementwise work on the region's results that instruction fusion grouped into a loop
//     fusion after it (its "tail": the gradient accumulators' last adds and bf16 converts,
//     fused with the blocks' transposes and concatenation); the tail moves out of that fusion
//     into the kernel when the grid point still fits with it, and tiles whose results one
//     tail combines (dk of a key block summed over query blocks) are one region.
// A region becomes a kernel when it holds at least two dots with an exp between them (the
// softmax: scores -> probabilities -> P.V), when fusing it creates no cycle (no path leaves
// it and comes back), and when one grid step's blocks fit in VMEM: the most of its values live
// at once while its kernels run in the program's order (a value's block is free after its last
// reader in the kernel, as a Pallas kernel reuses its scratch; outputs stay to the end), plus its
// double-buffered operand blocks and its output blocks' write-back buffers. A step is one grid
// point when that fits, else one of its row blocks (Pallas's block_q, attention_rows.h): the
// largest multiple of the MXU's width dividing the query block whose step fits holds that many
// rows of every value with query rows (scores, row statistics, Q, dO, the outputs); K and V blocks
// are whole, fetched around their readers in every row block; the sums over rows (the
// backward's dk and dv) stay in VMEM through the row blocks. Values read
// from outside (Q, K, V, the saved log-sum-exp, MXU feeds of K and V blocks) are the kernel's
// operands; values read outside are its outputs (a tuple when several: a multi-output fusion).
//
// Values never change: the nested kernels are the ones instruction fusion made (and a tail's
// instructions, each its own), and the host runs them one by one. The cost model charges the kernel the MXU time of its dots, the VPU
// time of its softmax and the HBM traffic of its operands and outputs only (PlanAttentionKernel).
//
//   AttentionFusion pass(TpuTargetOptions(spec));
//   HLO_ASSIGN_OR_RETURN(bool changed, pass.Run(module));
#pragma once

#include <optional>
#include <string_view>

#include "absl/status/statusor.h"
#include "jx/compiler/backend/tpu/tpu_target_options.h"
#include "jx/compiler/hlo/hlo_pass.h"
#include "jx/compiler/hlo/hlo_tiling_attributes.h"

namespace jx::tpu {

// The backend_config of an attention kernel's kCustom fusion.
inline constexpr std::string_view kAttentionFusionConfig = "attention";

bool IsAttentionFusion(const hlo::HloInstruction& instr);

// How a chip with `vmem_bytes` of VMEM and MXUs `mxu_dim` wide runs an attention kernel: grid =
// its dots' batch extents, and the row blocks of its query block when the whole block does not
// fit (block = 1 per batch dim, then block_q), steps = their product, vmem_bytes = one step's
// most values live at once and its double-buffered blocks (the pass's test), hbm_bytes = its
// operands read once (an MXU feed's source as stored, a sliced feed only its block; those
// without query rows, K and V, once per row block) and its outputs written once, padded to
// tiles. nullopt for any other instruction.
std::optional<hlo::VmemTiling> PlanAttentionKernel(const hlo::HloInstruction& fusion, int64_t vmem_bytes,
                                                   int64_t mxu_dim);

class AttentionFusion : public hlo::HloPass {
 public:
  explicit AttentionFusion(TpuTargetOptions options = {}) : options_(std::move(options)) {}
  std::string_view name() const override { return "attention-fusion"; }
  absl::StatusOr<bool> Run(hlo::HloModule* module) override;

 private:
  TpuTargetOptions options_;
};

}  // namespace jx::tpu

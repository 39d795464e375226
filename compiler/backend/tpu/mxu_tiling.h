// MxuTilingPass ("mxu-tiling"): plans how each dot and convolution runs on the chip's MXUs
// and records the plan on the instruction as `mxu_tiling={...}` (the fields are explained
// in compiler/hlo/hlo_tiling_attributes.h), fused dots and convolutions included. The
// cost model charges MXU time from it (systolic fill and drain per weight tile, padding
// waste, waves over the MXUs); nothing is computed differently: the CPU backend still runs
// the dot as written.
//
// The plan, per op viewed as `batch` GEMMs [M,K] x [K,N] (weight stationary, as the MXU is):
//   - the weights [K,N] are cut into mxu_dim x mxu_dim tiles, K and N padded up to the MXU
//     size (128, or 256 on v6e/v7): k_tiles x n_tiles weight tiles per GEMM;
//   - the streamed operand's M rows pass through each loaded tile in groups of 8 (one vreg
//     of sublanes), M padded to a multiple of 8;
//   - the batch x k_tiles x n_tiles tiles are dealt round-robin over the chip's MXUs, in
//     `waves` rounds.
// A dot streams its lhs through tiles of its rhs. A convolution is an implicit GEMM: M is
// the output's batch x spatial positions, K the kernel's input features x window taps, N
// the output features of one group, batch the feature (and batch) groups.
//
//   MxuTilingPass pass(TpuTargetOptions(spec));
//   HLO_ASSIGN_OR_RETURN(bool changed, pass.Run(module));
//   hlo::MxuTiling t = PlanMxuTiling(*dot, options).value();
#pragma once

#include <string_view>

#include "absl/status/statusor.h"
#include "jx/compiler/backend/tpu/tpu_target_options.h"
#include "jx/compiler/hlo/hlo_instruction.h"
#include "jx/compiler/hlo/hlo_pass.h"

namespace jx::tpu {

// The MXU plan of one dot or convolution; an error for any other opcode.
absl::StatusOr<hlo::MxuTiling> PlanMxuTiling(const hlo::HloInstruction& instr,
                                             const TpuTargetOptions& options);

class MxuTilingPass : public hlo::HloPass {
 public:
  explicit MxuTilingPass(TpuTargetOptions options = {}) : options_(std::move(options)) {}
  std::string_view name() const override { return "mxu-tiling"; }
  absl::StatusOr<bool> Run(hlo::HloModule* module) override;

 private:
  TpuTargetOptions options_;
};

}  // namespace jx::tpu

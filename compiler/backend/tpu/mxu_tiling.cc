#include "jx/compiler/backend/tpu/mxu_tiling.h"

#include <algorithm>

#include "jx/compiler/hlo/hlo_computation.h"
#include "jx/compiler/hlo/hlo_module.h"
#include "jx/compiler/hlo/str_util.h"

namespace jx::tpu {
namespace {

using hlo::HloInstruction;
using hlo::HloOpcode;

// Rows of the streamed operand enter the MXU a vreg's 8 sublanes at a time.
constexpr int64_t kRowGroup = 8;

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

int64_t Product(const hlo::Shape& shape, const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= shape.dimensions(d);
  return n;
}

// Product of the dims of `shape` not listed in `used_a` or `used_b`.
int64_t FreeProduct(const hlo::Shape& shape, const std::vector<int64_t>& used_a,
                    const std::vector<int64_t>& used_b) {
  int64_t n = 1;
  for (int64_t i = 0; i < shape.rank(); ++i) {
    if (std::find(used_a.begin(), used_a.end(), i) == used_a.end() &&
        std::find(used_b.begin(), used_b.end(), i) == used_b.end()) {
      n *= shape.dimensions(i);
    }
  }
  return n;
}

}  // namespace

absl::StatusOr<hlo::MxuTiling> PlanMxuTiling(const HloInstruction& instr,
                                             const TpuTargetOptions& options) {
  hlo::MxuTiling t;
  t.tile_rows = t.tile_cols = options.mxu_dim;
  if (instr.opcode() == HloOpcode::kDot) {
    const hlo::Shape& lhs = instr.operand(0)->shape();
    const hlo::Shape& rhs = instr.operand(1)->shape();
    const hlo::DotDimensionNumbers& d = instr.dot_dimension_numbers();
    t.batch = Product(lhs, d.lhs_batch_dims);
    t.k = Product(lhs, d.lhs_contracting_dims);
    t.m = FreeProduct(lhs, d.lhs_batch_dims, d.lhs_contracting_dims);
    t.n = FreeProduct(rhs, d.rhs_batch_dims, d.rhs_contracting_dims);
  } else if (instr.opcode() == HloOpcode::kConvolution) {
    const hlo::Shape& kernel = instr.operand(1)->shape();
    const hlo::Shape& out = instr.shape();
    const hlo::ConvolutionDimensionNumbers& d = instr.convolution_dimension_numbers();
    const int64_t groups = instr.feature_group_count() * instr.batch_group_count();
    t.batch = groups;
    t.m = out.dimensions(d.output_batch_dimension) * Product(out, d.output_spatial_dimensions);
    t.k = kernel.dimensions(d.kernel_input_feature_dimension) *
          Product(kernel, d.kernel_spatial_dimensions);
    t.n = kernel.dimensions(d.kernel_output_feature_dimension) / groups;
  } else {
    return absl::InvalidArgumentError(hlo::StrCat("mxu-tiling: ", instr.name(), " is a ",
                                                  hlo::HloOpcodeString(instr.opcode()),
                                                  ", not a dot or convolution"));
  }
  t.padded_m = CeilDiv(t.m, kRowGroup) * kRowGroup;
  t.padded_k = CeilDiv(t.k, t.tile_rows) * t.tile_rows;
  t.padded_n = CeilDiv(t.n, t.tile_cols) * t.tile_cols;
  t.k_tiles = t.padded_k / t.tile_rows;
  t.n_tiles = t.padded_n / t.tile_cols;
  t.m_groups = t.padded_m / kRowGroup;
  const int64_t tiles = t.batch * t.k_tiles * t.n_tiles;
  t.mxus = std::clamp<int64_t>(tiles, 1, std::max<int64_t>(options.num_mxus, 1));
  t.waves = CeilDiv(tiles, t.mxus);
  return t;
}

absl::StatusOr<bool> MxuTilingPass::Run(hlo::HloModule* module) {
  bool changed = false;
  for (hlo::HloComputation* computation : module->computations()) {
    for (HloInstruction* instr : computation->instructions()) {
      if (instr->opcode() != HloOpcode::kDot && instr->opcode() != HloOpcode::kConvolution) {
        continue;
      }
      absl::StatusOr<hlo::MxuTiling> plan = PlanMxuTiling(*instr, options_);
      if (!plan.ok()) return plan.status();
      if (instr->has_mxu_tiling() && instr->mxu_tiling() == *plan) continue;
      instr->set_mxu_tiling(*std::move(plan));
      changed = true;
    }
  }
  return changed;
}

}  // namespace jx::tpu

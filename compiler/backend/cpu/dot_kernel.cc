// Dot and kOutput fusion (dot + elementwise epilogue) on the kernel library's dot_general
// (lax/kernels/dot_general.h), the code eager dot_general runs: every element type, bf16/f16
// widened into the f32 GEMM and integers through the int32/int64 GEMM, results equal to
// eager's bit for bit. A fused epilogue runs over each GEMM block as soon as it is final.
#include <memory>
#include <vector>

#include "jx/compiler/backend/cpu/contraction_fusion.h"
#include "jx/compiler/backend/cpu/cpu_kernels.h"
#include "jx/compiler/hlo/status_macros.h"
#include "jx/lax/kernels/dot_general.h"

namespace jx::cpu::internal {
namespace {

using hlo::HloInstruction;
using hlo::HloOpcode;

class DotKernel : public Kernel {
 public:
  explicit DotKernel(ContractionFusion fusion) : fusion_(std::move(fusion)) {}

  absl::Status Run(absl::Span<const void* const> operands,
                   absl::Span<void* const> results) const override {
    return fusion_.Run(operands, results, [&](void* out, const lax::kernels::OutputEpilogue& epilogue) {
      lax::kernels::DotGeneralArgs d = args_;
      d.lhs = operands[fusion_.operand_slot(0)];
      d.rhs = operands[fusion_.operand_slot(1)];
      d.out = out;
      d.epilogue = epilogue;
      lax::kernels::DotGeneral(d);
    });
  }
  std::string_view kind() const override { return fusion_.has_epilogue() ? "dot+epilogue" : "dot"; }

  // Fills args_ (all but the buffers) from the dot instruction.
  absl::Status Plan() {
    const HloInstruction& dot = fusion_.contraction();
    const std::optional<DType> lhs = KernelDTypeOf(dot.operand(0)->shape().element_type());
    const std::optional<DType> rhs = KernelDTypeOf(dot.operand(1)->shape().element_type());
    const std::optional<DType> out = KernelDTypeOf(dot.shape().element_type());
    if (!lhs || !rhs || !out) return absl::UnimplementedError("dot of non-array element types");
    const hlo::DotDimensionNumbers& dn = dot.dot_dimension_numbers();
    lhs_shape_ = hlo::SpanToVector(dot.operand(0)->shape().dimensions());
    rhs_shape_ = hlo::SpanToVector(dot.operand(1)->shape().dimensions());
    dn_ = dn;
    args_.lhs_dtype = *lhs;
    args_.rhs_dtype = *rhs;
    args_.out_dtype = *out;
    args_.lhs_shape = lhs_shape_;
    args_.rhs_shape = rhs_shape_;
    args_.lhs_batch_dims = dn_.lhs_batch_dims;
    args_.rhs_batch_dims = dn_.rhs_batch_dims;
    args_.lhs_contracting_dims = dn_.lhs_contracting_dims;
    args_.rhs_contracting_dims = dn_.rhs_contracting_dims;
    return absl::OkStatus();
  }

 private:
  ContractionFusion fusion_;
  std::vector<int64_t> lhs_shape_, rhs_shape_;
  hlo::DotDimensionNumbers dn_;
  lax::kernels::DotGeneralArgs args_;  // spans point into the members above
};

}  // namespace

absl::StatusOr<std::unique_ptr<Kernel>> MakeDotKernel(const HloInstruction& instr,
                                                      int64_t tile_elements) {
  HLO_ASSIGN_OR_RETURN(ContractionFusion fusion,
                       ContractionFusion::Make(instr, HloOpcode::kDot, tile_elements));
  auto kernel = std::make_unique<DotKernel>(std::move(fusion));
  HLO_RETURN_IF_ERROR(kernel->Plan());
  return kernel;
}

}  // namespace jx::cpu::internal

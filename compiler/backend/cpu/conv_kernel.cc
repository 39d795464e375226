// Convolution and kOutput fusion (convolution + elementwise epilogue, e.g. bias + relu) on
// the kernel library's convolution (lax/kernels/convolution.h: im2col + GEMM, the depthwise
// direct path), the code eager conv_general_dilated runs: every element type, results equal
// to eager's bit for bit. A fused epilogue runs over each output tile as soon as it is final.
#include <memory>
#include <vector>

#include "jx/compiler/backend/cpu/contraction_fusion.h"
#include "jx/compiler/backend/cpu/cpu_kernels.h"
#include "jx/compiler/hlo/status_macros.h"
#include "jx/compiler/hlo/str_util.h"
#include "jx/lax/kernels/convolution.h"

namespace jx::cpu::internal {
namespace {

using hlo::HloInstruction;
using hlo::HloOpcode;

class ConvKernel : public Kernel {
 public:
  explicit ConvKernel(ContractionFusion fusion) : fusion_(std::move(fusion)) {}

  absl::Status Run(absl::Span<const void* const> operands,
                   absl::Span<void* const> results) const override {
    return fusion_.Run(operands, results, [&](void* out, const lax::kernels::OutputEpilogue& epilogue) {
      lax::kernels::ConvArgs c = args_;
      c.lhs = operands[fusion_.operand_slot(0)];
      c.rhs = operands[fusion_.operand_slot(1)];
      c.out = out;
      c.epilogue = epilogue;
      lax::kernels::ConvGeneralDilated(c);
    });
  }
  std::string_view kind() const override { return fusion_.has_epilogue() ? "conv+epilogue" : "conv"; }

  // Fills args_ (all but the buffers) from the convolution instruction.
  absl::Status Plan() {
    const HloInstruction& conv = fusion_.contraction();
    const std::optional<DType> lhs = KernelDTypeOf(conv.operand(0)->shape().element_type());
    const std::optional<DType> rhs = KernelDTypeOf(conv.operand(1)->shape().element_type());
    const std::optional<DType> out = KernelDTypeOf(conv.shape().element_type());
    if (!lhs || !rhs || !out) return absl::UnimplementedError("convolution of non-array element types");
    const hlo::ConvolutionDimensionNumbers& d = conv.convolution_dimension_numbers();
    const hlo::Window& window = conv.window();
    const size_t nsp = d.input_spatial_dimensions.size();
    if (window.size() != nsp || d.kernel_spatial_dimensions.size() != nsp ||
        d.output_spatial_dimensions.size() != nsp) {
      return absl::InvalidArgumentError(hlo::StrCat("convolution ", conv.name(), ": window has ", window.size(),
                                                    " dims for ", nsp, " spatial dims"));
    }
    lhs_shape_ = hlo::SpanToVector(conv.operand(0)->shape().dimensions());
    rhs_shape_ = hlo::SpanToVector(conv.operand(1)->shape().dimensions());
    out_shape_ = hlo::SpanToVector(conv.shape().dimensions());
    lhs_spec_ = {d.input_batch_dimension, d.input_feature_dimension};
    rhs_spec_ = {d.kernel_output_feature_dimension, d.kernel_input_feature_dimension};
    out_spec_ = {d.output_batch_dimension, d.output_feature_dimension};
    for (size_t i = 0; i < nsp; ++i) {
      lhs_spec_.push_back(d.input_spatial_dimensions[i]);
      rhs_spec_.push_back(d.kernel_spatial_dimensions[i]);
      out_spec_.push_back(d.output_spatial_dimensions[i]);
      const hlo::WindowDim& w = window[i];
      if (d.kernel_spatial_dimensions[i] >= static_cast<int64_t>(rhs_shape_.size()) ||
          w.size != rhs_shape_[d.kernel_spatial_dimensions[i]]) {
        return absl::InvalidArgumentError(hlo::StrCat("convolution ", conv.name(), ": window size ", w.size,
                                                      " does not match the kernel's spatial dim ", i));
      }
      strides_.push_back(w.stride);
      pad_low_.push_back(w.pad_low);
      pad_high_.push_back(w.pad_high);
      lhs_dilation_.push_back(w.lhs_dilation);
      rhs_dilation_.push_back(w.rhs_dilation);
    }
    args_.lhs_dtype = *lhs;
    args_.rhs_dtype = *rhs;
    args_.out_dtype = *out;
    args_.lhs_shape = lhs_shape_;
    args_.rhs_shape = rhs_shape_;
    args_.out_shape = out_shape_;
    args_.lhs_spec = lhs_spec_;
    args_.rhs_spec = rhs_spec_;
    args_.out_spec = out_spec_;
    args_.window_strides = strides_;
    args_.padding_low = pad_low_;
    args_.padding_high = pad_high_;
    args_.lhs_dilation = lhs_dilation_;
    args_.rhs_dilation = rhs_dilation_;
    args_.feature_group_count = conv.feature_group_count();
    args_.batch_group_count = conv.batch_group_count();
    return absl::OkStatus();
  }

 private:
  ContractionFusion fusion_;
  std::vector<int64_t> lhs_shape_, rhs_shape_, out_shape_, lhs_spec_, rhs_spec_, out_spec_;
  std::vector<int64_t> strides_, pad_low_, pad_high_, lhs_dilation_, rhs_dilation_;
  lax::kernels::ConvArgs args_;  // spans point into the members above
};

}  // namespace

absl::StatusOr<std::unique_ptr<Kernel>> MakeConvKernel(const HloInstruction& instr,
                                                       int64_t tile_elements) {
  HLO_ASSIGN_OR_RETURN(ContractionFusion fusion,
                       ContractionFusion::Make(instr, HloOpcode::kConvolution, tile_elements));
  auto kernel = std::make_unique<ConvKernel>(std::move(fusion));
  HLO_RETURN_IF_ERROR(kernel->Plan());
  return kernel;
}

}  // namespace jx::cpu::internal

// conv_general_dilated's lowering rule (-> convolution with dim_labels from the dimension
// numbers and the feature/batch group counts). The result type is the output aval's
// (preferred_element_type); operands of mixed types convert to it first. The precision
// becomes the convolution's operand_precision.
#include "jx/core/registry.h"
#include "jx/lax/convolution.h"
#include "jx/lax/dot_general_lowering.h"
#include "jx/lax/primitives.h"

namespace jx::lax::internal {
namespace {

absl::Status LowerConv(LowerContext& ctx) {
  const ParamMap& params = ctx.params();
  const ConvDimensionNumbers& dn = GetConvDimensionNumbers(params);
  const hlo::PrimitiveType out = LowerContext::TypeOf(ctx.out_aval(0).dtype);
  auto [lhs, rhs] = ContractionOperands(ctx, out);
  hlo::ConvolutionDimensionNumbers c;
  c.input_batch_dimension = dn.lhs_spec[0];
  c.input_feature_dimension = dn.lhs_spec[1];
  c.kernel_output_feature_dimension = dn.rhs_spec[0];
  c.kernel_input_feature_dimension = dn.rhs_spec[1];
  c.output_batch_dimension = dn.out_spec[0];
  c.output_feature_dimension = dn.out_spec[1];
  const std::vector<int64_t>& strides = params.GetInts("window_strides");
  const std::vector<int64_t>& lhs_dilation = params.GetInts("lhs_dilation");
  const std::vector<int64_t>& rhs_dilation = params.GetInts("rhs_dilation");
  const ParamList& padding = params.GetList("padding");
  hlo::Window window;
  for (size_t i = 2; i < dn.lhs_spec.size(); ++i) {
    c.input_spatial_dimensions.push_back(dn.lhs_spec[i]);
    c.kernel_spatial_dimensions.push_back(dn.rhs_spec[i]);
    c.output_spatial_dimensions.push_back(dn.out_spec[i]);
    const size_t s = i - 2;
    const auto& pad = std::get<std::vector<int64_t>>(padding[s].value);
    window.push_back(hlo::WindowDim{rhs.dims()[static_cast<size_t>(dn.rhs_spec[i])], strides[s], pad[0], pad[1],
                                    lhs_dilation[s], rhs_dilation[s]});
  }
  hlo::HloBuilder& b = ctx.builder();
  return lower::Output(ctx, lower::Wrap(b, b.Convolution(lhs.instr(), rhs.instr(), window, c,
                                                         params.GetInt("feature_group_count"),
                                                         params.GetInt("batch_group_count"), out,
                                                         ContractionPrecision(params))));
}

}  // namespace

void RegisterConvolutionLowering(Registry& r) { r.Define(kConvGeneralDilated).lower = LowerConv; }

}  // namespace jx::lax::internal

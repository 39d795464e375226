// Lowering rules of dot_general (-> dot) and conv_general_dilated (-> convolution with
// dim_labels from the dimension numbers and the feature/batch group counts). The result type
// is the output aval's (preferred_element_type); operands of mixed types convert to it first.
#include "jx/compiler/lower/lower_ops.h"
#include "jx/core/registry.h"
#include "jx/lax/convolution.h"
#include "jx/lax/dot_general.h"
#include "jx/lax/primitives.h"

namespace jx::lax::internal {
namespace {

using lower::XOp;

// Both operands in one type: their own when they agree, else the result type.
std::pair<XOp, XOp> CommonOperands(LowerContext& ctx, hlo::PrimitiveType out) {
  XOp lhs(&ctx.builder(), ctx.operand(0)), rhs(&ctx.builder(), ctx.operand(1));
  if (lhs.type() != rhs.type()) {
    lhs = lower::Convert(lhs, out);
    rhs = lower::Convert(rhs, out);
  }
  return {lhs, rhs};
}

absl::Status LowerDot(LowerContext& ctx) {
  const DotDimensionNumbers& dn = GetDotDimensionNumbers(ctx.params());
  const hlo::PrimitiveType out = LowerContext::TypeOf(ctx.out_aval(0).dtype);
  auto [lhs, rhs] = CommonOperands(ctx, out);
  hlo::DotDimensionNumbers d;
  d.lhs_batch_dims = dn.lhs_batch_dims;
  d.rhs_batch_dims = dn.rhs_batch_dims;
  d.lhs_contracting_dims = dn.lhs_contracting_dims;
  d.rhs_contracting_dims = dn.rhs_contracting_dims;
  return lower::Output(ctx, lower::Wrap(ctx.builder(), ctx.builder().Dot(lhs.instr(), rhs.instr(), d, out)));
}

absl::Status LowerConv(LowerContext& ctx) {
  const ParamMap& params = ctx.params();
  const ConvDimensionNumbers& dn = GetConvDimensionNumbers(params);
  const hlo::PrimitiveType out = LowerContext::TypeOf(ctx.out_aval(0).dtype);
  auto [lhs, rhs] = CommonOperands(ctx, out);
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
                                                         params.GetInt("batch_group_count"), out)));
}

}  // namespace

void RegisterLinalgLowering(Registry& r) {
  r.Define(kDotGeneral).lower = LowerDot;
  r.Define(kConvGeneralDilated).lower = LowerConv;
}

}  // namespace jx::lax::internal

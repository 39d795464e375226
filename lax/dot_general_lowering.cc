// dot_general's lowering rule (-> dot). The result type is the output aval's
// (preferred_element_type); operands of mixed types convert to it first. The precision
// becomes the dot's operand_precision.
#include "jx/lax/dot_general_lowering.h"

#include "jx/core/registry.h"
#include "jx/lax/dot_general.h"
#include "jx/lax/primitives.h"

namespace jx::lax::internal {

using lower::XOp;

std::pair<XOp, XOp> ContractionOperands(LowerContext& ctx, hlo::PrimitiveType out) {
  XOp lhs(&ctx.builder(), ctx.operand(0)), rhs(&ctx.builder(), ctx.operand(1));
  if (lhs.type() != rhs.type()) {
    lhs = lower::Convert(lhs, out);
    rhs = lower::Convert(rhs, out);
  }
  return {lhs, rhs};
}

hlo::PrecisionConfig ContractionPrecision(const ParamMap& params) {
  hlo::PrecisionConfig config;
  if (const std::optional<PrecisionPair> p = GetPrecision(params)) {
    static_assert(static_cast<int>(Precision::kHighest) == static_cast<int>(hlo::Precision::kHighest) &&
                  static_cast<int>(Precision::kHigh) == static_cast<int>(hlo::Precision::kHigh));
    for (size_t i = 0; i < 2; ++i) config.operand_precision[i] = static_cast<hlo::Precision>((*p)[i]);
  }
  return config;
}

namespace {

absl::Status LowerDot(LowerContext& ctx) {
  const DotDimensionNumbers& dn = GetDotDimensionNumbers(ctx.params());
  const hlo::PrimitiveType out = LowerContext::TypeOf(ctx.out_aval(0).dtype);
  auto [lhs, rhs] = ContractionOperands(ctx, out);
  hlo::DotDimensionNumbers d;
  d.lhs_batch_dims = dn.lhs_batch_dims;
  d.rhs_batch_dims = dn.rhs_batch_dims;
  d.lhs_contracting_dims = dn.lhs_contracting_dims;
  d.rhs_contracting_dims = dn.rhs_contracting_dims;
  return lower::Output(ctx, lower::Wrap(ctx.builder(), ctx.builder().Dot(lhs.instr(), rhs.instr(), d, out,
                                                                             ContractionPrecision(ctx.params()))));
}

}  // namespace

void RegisterDotGeneralLowering(Registry& r) { r.Define(kDotGeneral).lower = LowerDot; }

}  // namespace jx::lax::internal

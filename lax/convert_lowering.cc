// Lowering rules of the type conversions: convert_element_type, bitcast_convert_type and
// reduce_precision.
#include "jx/compiler/lower/lower_ops.h"
#include "jx/core/registry.h"
#include "jx/lax/primitives.h"

namespace jx::lax::internal {

using lower::XOp;

void RegisterConvertLowering(Registry& r) {
  // To bool is x != 0 (as JAX lowers it); other conversions are XLA's convert.
  r.Define(kConvertElementType).lower = [](LowerContext& ctx) -> absl::Status {
    const XOp x = lower::Operands(ctx)[0];
    const hlo::PrimitiveType to = LowerContext::TypeOf(ctx.out_aval(0).dtype);
    if (to == hlo::PRED && x.type() != hlo::PRED) return lower::Output(ctx, lower::Ne(x, lower::Like(x, 0.0)));
    return lower::Output(ctx, lower::Convert(x, to));
  };
  r.Define(kBitcastConvertType).lower = [](LowerContext& ctx) -> absl::Status {
    const XOp x = lower::Operands(ctx)[0];
    const hlo::PrimitiveType to = LowerContext::TypeOf(ctx.out_aval(0).dtype);
    return lower::Output(ctx, to == x.type() ? x : lower::BitcastConvert(x, to));
  };
  r.Define(kReducePrecision).lower = [](LowerContext& ctx) -> absl::Status {
    return lower::Output(ctx, lower::Wrap(ctx.builder(), ctx.builder().ReducePrecision(
                                                             ctx.operand(0), static_cast<int32_t>(ctx.params().GetInt("exponent_bits")),
                                                             static_cast<int32_t>(ctx.params().GetInt("mantissa_bits")))));
  };
}

}  // namespace jx::lax::internal

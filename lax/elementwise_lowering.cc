// Lowering rules of the binary elementwise primitives, comparisons, select_n, clamp and the
// type conversions. 0-d operands broadcast to the other operand's shape first (lax allows a
// scalar beside an array; HLO has no implicit broadcasting).
#include <functional>

#include "jx/compiler/lower/lower_ops.h"
#include "jx/core/registry.h"
#include "jx/lax/primitives.h"
#include "jx/transforms/ad_util.h"

namespace jx::lax::internal {
namespace {

using hlo::ComparisonDirection;
using hlo::HloOpcode;
using lower::XOp;

void DefineBinary(Registry& r, Primitive p, HloOpcode op) {
  r.Define(p).lower = [op](LowerContext& ctx) -> absl::Status {
    std::vector<XOp> in = lower::ElementwiseOperands(ctx);
    return lower::Output(ctx, lower::Binary(op, in[0], in[1]));
  };
}

void DefineCompare(Registry& r, Primitive p, ComparisonDirection dir) {
  r.Define(p).lower = [dir](LowerContext& ctx) -> absl::Status {
    std::vector<XOp> in = lower::ElementwiseOperands(ctx);
    return lower::Output(ctx, lower::Compare(in[0], in[1], dir));
  };
}

// nextafter on the bits: step the magnitude of `from` one ulp toward `to` (XLA's NextAfter).
XOp NextAfter(const XOp& from, const XOp& to) {
  const hlo::PrimitiveType ut = hlo::BitWidth(from.type()) == 64   ? hlo::U64
                                : hlo::BitWidth(from.type()) == 32 ? hlo::U32
                                                                   : hlo::U16;
  const int bits = hlo::BitWidth(from.type());
  const XOp fi = lower::BitcastConvert(from, ut), ti = lower::BitcastConvert(to, ut);
  const uint64_t sign_mask = uint64_t{1} << (bits - 1);
  const XOp sign = lower::LikeUint(fi, sign_mask), magnitude = lower::LikeUint(fi, ~sign_mask & (sign_mask | (sign_mask - 1)));
  const XOp from_abs = fi & magnitude, to_abs = ti & magnitude;
  const XOp from_sign = fi & sign, to_sign = ti & sign;
  const XOp zero = lower::LikeUint(fi, 0), one = lower::LikeUint(fi, 1);
  const XOp shrink = (from_abs > to_abs) | lower::Ne(from_sign, to_sign);
  XOp result = lower::Select(shrink, fi - one, fi + one);
  // From +-0 toward a nonzero: the smallest subnormal with to's sign.
  const XOp from_zero = lower::Eq(from_abs, zero), to_zero = lower::Eq(to_abs, zero);
  result = lower::Select(from_zero, lower::Select(to_zero, ti, to_sign | one), result);
  result = lower::Select(lower::Eq(fi, ti), ti, result);
  const XOp nan = lower::Ne(from, from) | lower::Ne(to, to);
  result = lower::Select(nan, lower::BitcastConvert(lower::Like(from, NAN), ut), result);
  return lower::BitcastConvert(result, from.type());
}

// select_n over cases by a bool or int32 selector, as a balanced tree of selects.
// cases[i] stands for selector value offset + i; out-of-range selectors clamp, as eager.
XOp SelectN(const XOp& which, absl::Span<const XOp> cases, int64_t offset = 0) {
  if (cases.size() == 1) return cases[0];
  if (which.type() == hlo::PRED) return lower::Select(which, cases[1], cases[0]);
  const size_t mid = cases.size() / 2;
  const XOp low = SelectN(which, cases.subspan(0, mid), offset);
  const XOp high = SelectN(which, cases.subspan(mid), offset + static_cast<int64_t>(mid));
  const XOp pred =
      which < lower::FullInt(which.builder(), which.type(), which.dims(), offset + static_cast<int64_t>(mid));
  return lower::Select(pred, low, high);
}

}  // namespace

void RegisterElementwiseLowering(Registry& r) {
  DefineBinary(r, kAdd, HloOpcode::kAdd);
  DefineBinary(r, kAddAny, HloOpcode::kAdd);
  DefineBinary(r, kSub, HloOpcode::kSubtract);
  DefineBinary(r, kMul, HloOpcode::kMultiply);
  DefineBinary(r, kDiv, HloOpcode::kDivide);
  DefineBinary(r, kRem, HloOpcode::kRemainder);
  DefineBinary(r, kMax, HloOpcode::kMaximum);
  DefineBinary(r, kMin, HloOpcode::kMinimum);
  DefineBinary(r, kAtan2, HloOpcode::kAtan2);
  DefineBinary(r, kAnd, HloOpcode::kAnd);
  DefineBinary(r, kOr, HloOpcode::kOr);
  DefineBinary(r, kXor, HloOpcode::kXor);
  DefineBinary(r, kShiftLeft, HloOpcode::kShiftLeft);
  DefineBinary(r, kShiftRightLogical, HloOpcode::kShiftRightLogical);
  DefineBinary(r, kShiftRightArithmetic, HloOpcode::kShiftRightArithmetic);
  // pow: an integer exponent of a floating base converts to the base's type, as JAX lowers it.
  r.Define(kPow).lower = [](LowerContext& ctx) -> absl::Status {
    std::vector<XOp> in = lower::ElementwiseOperands(ctx);
    return lower::Output(ctx, lower::Pow(in[0], lower::Convert(in[1], in[0].type())));
  };
  r.Define(kNextafter).lower = [](LowerContext& ctx) -> absl::Status {
    std::vector<XOp> in = lower::ElementwiseOperands(ctx);
    return lower::Output(ctx, NextAfter(in[0], in[1]));
  };

  DefineCompare(r, kEq, ComparisonDirection::kEq);
  DefineCompare(r, kNe, ComparisonDirection::kNe);
  DefineCompare(r, kLt, ComparisonDirection::kLt);
  DefineCompare(r, kLe, ComparisonDirection::kLe);
  DefineCompare(r, kGt, ComparisonDirection::kGt);
  DefineCompare(r, kGe, ComparisonDirection::kGe);

  r.Define(kSelectN).lower = [](LowerContext& ctx) -> absl::Status {
    std::vector<XOp> in = lower::ElementwiseOperands(ctx);
    return lower::Output(ctx, SelectN(in[0], absl::MakeConstSpan(in).subspan(1)));
  };
  // clamp(lo, x, hi): HLO's clamp takes scalar bounds as they are.
  r.Define(kClamp).lower = [](LowerContext& ctx) -> absl::Status {
    std::vector<XOp> in = lower::Operands(ctx);
    const std::vector<int64_t>& dims = ctx.out_aval(0).shape;
    const XOp x = lower::BroadcastScalar(in[1], dims);
    return lower::Output(ctx, lower::Wrap(ctx.builder(), ctx.builder().Clamp(in[0].instr(), x.instr(), in[2].instr())));
  };

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

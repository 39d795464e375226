// Lowering rules of the binary elementwise primitives (and add_any, the tangent sum). 0-d
// operands broadcast to the other operand's shape first (lax allows a scalar beside an
// array; HLO has no implicit broadcasting).
#include <cmath>
#include <vector>

#include "jx/compiler/lower/lower_ops.h"
#include "jx/core/registry.h"
#include "jx/lax/primitives.h"
#include "jx/transforms/ad_util.h"

namespace jx::lax::internal {
namespace {

using hlo::HloOpcode;
using lower::XOp;

void DefineBinary(Registry& r, Primitive p, HloOpcode op) {
  r.Define(p).lower = [op](LowerContext& ctx) -> absl::Status {
    std::vector<XOp> in = lower::ElementwiseOperands(ctx);
    return lower::Output(ctx, lower::Binary(op, in[0], in[1]));
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

}  // namespace

void RegisterBinaryLowering(Registry& r) {
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
}

}  // namespace jx::lax::internal

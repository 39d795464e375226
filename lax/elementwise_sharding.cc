// Sharding rules of the elementwise families (unary, binary, comparison, select_n, clamp and
// the dtype conversions that keep the shape): every operand and result dimension is one
// pass-through factor ([i, j], [i, j])->([i, j]), so a sharded operand shards the result alike.
// add_any, the cotangent sum grads are full of, is one of them.
#include "jx/core/registry.h"
#include "jx/lax/primitives.h"
#include "jx/lax/sharding_rules.h"
#include "jx/lax/stop_gradient.h"
#include "jx/transforms/ad_util.h"

namespace jx::lax::internal {

void RegisterElementwiseSharding(Registry& r) {
  static const Primitive kElementwise[] = {

      // unary
      kNeg, kSign, kFloor, kCeil, kRound, kIsFinite, kExp, kExp2, kLog, kLog1p, kExpm1, kTanh, kLogistic, kSin, kCos,
      kTan, kAsin, kAcos, kAtan, kSinh, kCosh, kAsinh, kAcosh, kAtanh, kSqrt, kRsqrt, kCbrt, kAbs, kErf, kErfc,
      kErfInv, kLgamma, kDigamma, kIntegerPow, kSquare, kReciprocal, kNot,
      // binary
      kAdd, kSub, kMul, kDiv, kRem, kPow, kMax, kMin, kAtan2, kAnd, kOr, kXor, kShiftLeft, kShiftRightLogical,
      kShiftRightArithmetic, kNextafter,
      // the cotangent sum of reverse mode (JAX's add_jaxvals)
      kAddAny,
      // comparisons, selection
      kEq, kNe, kLt, kLe, kGt, kGe, kSelectN, kClamp,
      // conversions that keep the shape
      kConvertElementType, kReducePrecision, kCopy,
      // the identity that blocks derivatives (softmax and logsumexp subtract a stopped max)
      kStopGradient,
      // checkpoint_name's tag (an identity)
      Primitive::Intern("name"),

  };
  for (Primitive p : kElementwise) {
    r.Define(p).sharding_rule = [](InAvals in, const ParamMap&, absl::Span<const ShapedArray> out) {
      return ElementwiseShardingRule(in, out);
    };
  }
}

}  // namespace jx::lax::internal

// Sharding rules of the elementwise families (unary, binary, comparison, select_n, clamp and
// the dtype conversions that keep the shape): every operand and result dimension is one
// pass-through factor ([i, j], [i, j])->([i, j]), so a sharded operand shards the result alike.
// add_any, the cotangent sum grads are full of, is one of them; so are checkpoint_name's tag and
// optimization_barrier (each operand passes through to its result).
#include "jx/core/registry.h"
#include "jx/lax/primitives.h"
#include "jx/lax/sharding_rules.h"
#include "jx/lax/stop_gradient.h"
#include "jx/transforms/ad_util.h"
#include "jx/transforms/optimization_barrier.h"

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
  // optimization_barrier: the identity on each of its operands. Operands of one shape share
  // factors (the elementwise rule); otherwise operand i's dimensions are result i's, factor by
  // factor (one mesh axis on two operands' dims then reads as a conflict to propagation).
  r.Define(OptimizationBarrierPrimitive()).sharding_rule = [](InAvals in, const ParamMap&,
                                                              absl::Span<const ShapedArray> out) {
    bool one_shape = true;
    for (const ShapedArray* a : in) one_shape = one_shape && a->shape == in[0]->shape;
    if (one_shape) return ElementwiseShardingRule(in, out);
    ShardingRuleBuilder b;
    std::vector<TensorFactors> tensors;
    for (const ShapedArray* a : in) {
      TensorFactors dims;
      for (int64_t size : a->shape) dims.push_back({b.AddFactor(size)});
      tensors.push_back(std::move(dims));
    }
    for (const TensorFactors& t : tensors) b.AddOperand(t);
    for (const TensorFactors& t : tensors) b.AddResult(t);
    return std::move(b).Build();
  };
}

}  // namespace jx::lax::internal

// Sharding rules of the elementwise families (unary, binary, comparison, select_n, clamp and
// the dtype conversions that keep the shape): every operand and result dimension is one
// pass-through factor ([i, j], [i, j])->([i, j]), so a sharded operand shards the result alike.
// add_any, the cotangent sum grads are full of, is one of them; so are checkpoint_name's tag and
// optimization_barrier (each operand passes through to its result).
#include <algorithm>

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
  // bitcast_convert_type (JAX's rule): the dims both sides have pass through; the trailing dim
  // a width change adds or consumes (f32 -> u16[..., 2], u16[..., 2] -> f32) holds one
  // element's bytes, so it stays whole (JAX drops a consumed dim's axes; here sharding it is
  // the rule's TypeError instead of an implicit gather).
  r.Define(kBitcastConvertType).sharding_rule = [](InAvals in, const ParamMap&, absl::Span<const ShapedArray> out) {
    const ShapedArray& x = *in[0];
    ShardingRuleBuilder b;
    TensorFactors operand, result;
    const int64_t common = std::min(x.ndim(), out[0].ndim());
    for (int64_t d = 0; d < common; ++d) {
      operand.push_back({b.AddFactor(x.shape[d])});
      result.push_back(operand.back());
    }
    for (TensorFactors* t : {&operand, &result}) {
      const Shape& shape = t == &operand ? x.shape : out[0].shape;
      if (static_cast<int64_t>(shape.size()) == common) continue;
      t->push_back({b.AddFactor(shape.back())});
      b.NeedReplication(t->back()[0]);
    }
    b.AddOperand(std::move(operand)).AddResult(std::move(result));
    return std::move(b).Build();
  };
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

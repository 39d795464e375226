// Lowering rules of the reductions: reduce with an add/mul/max/min/and/or to_apply, and
// argmax/argmin as a variadic (value, index) reduce, as JAX lowers them. Sums and products
// are lowered per platform (FloatAccumulation): the CPU accumulates floats in f64, a TPU in f32.
#include "jx/lax/reduction_lowering.h"

#include <string>

#include "jx/compiler/hlo/status_macros.h"
#include "jx/core/errors.h"
#include "jx/lax/primitives.h"

namespace jx::lax::internal {

using hlo::HloOpcode;
using hlo::PrimitiveType;
using lower::XOp;

PrimitiveType AccumulationType(PrimitiveType t, FloatAccumulation acc) {
  if (t != hlo::F16 && t != hlo::BF16 && t != hlo::F32) return t;
  return acc == FloatAccumulation::kF64 ? hlo::F64 : hlo::F32;
}

XOp InitValue(hlo::HloBuilder& b, HloOpcode op, PrimitiveType type) {
  switch (op) {
    case HloOpcode::kAdd: case HloOpcode::kOr: return lower::Full(b, type, {}, 0);
    case HloOpcode::kMultiply: return lower::Full(b, type, {}, 1);
    case HloOpcode::kMaximum: return lower::Lowest(b, type);
    case HloOpcode::kMinimum: return lower::Highest(b, type);
    default:  // kAnd: all bits set
      return type == hlo::PRED ? lower::FullInt(b, type, {}, 1) : lower::FullUint(b, type, {}, ~uint64_t{0});
  }
}

hlo::HloComputation* Reducer(LowerContext& ctx, HloOpcode op, PrimitiveType type) {
  absl::StatusOr<hlo::HloComputation*> c =
      ctx.ScalarBinaryComputation(op, type, std::string(hlo::HloOpcodeString(op)) + "_reducer");
  if (!c.ok()) throw InternalError(std::string(c.status().message()));
  return *c;
}

namespace {

LowerRule ReduceRule(HloOpcode op, FloatAccumulation acc) {
  return [op, acc](LowerContext& ctx) -> absl::Status {
    XOp x = lower::Operands(ctx)[0];
    const PrimitiveType out_type = x.type();
    if (op == HloOpcode::kAdd || op == HloOpcode::kMultiply) x = lower::Convert(x, AccumulationType(out_type, acc));
    hlo::HloBuilder& b = ctx.builder();
    const XOp init = InitValue(b, op, x.type());
    XOp y = lower::Wrap(b, b.Reduce(x.instr(), init.instr(), ctx.params().GetInts("axes"), Reducer(ctx, op, x.type())));
    return lower::Output(ctx, lower::Convert(y, out_type));
  };
}

void DefineReduce(Registry& r, Primitive p, HloOpcode op) {
  if (op == HloOpcode::kAdd || op == HloOpcode::kMultiply) {
    DefinePerPlatform(r, p, [op](FloatAccumulation acc) { return ReduceRule(op, acc); });
  } else {
    r.Define(p).lower = ReduceRule(op, FloatAccumulation::kF64);  // no accumulation: one rule
  }
}

// (value, index) pairs: the larger (argmax) or smaller value wins, NaN beats numbers, ties
// go to the lower index, so the result is the first extreme element (or the first NaN).
absl::StatusOr<hlo::HloComputation*> ArgReducer(LowerContext& ctx, bool is_max, PrimitiveType vt, PrimitiveType it) {
  hlo::HloBuilder b = ctx.NewBuilder(is_max ? "argmax_reducer" : "argmin_reducer");
  const hlo::Shape vs = hlo::ShapeUtil::MakeScalarShape(vt), is = hlo::ShapeUtil::MakeScalarShape(it);
  const XOp acc_v = lower::Wrap(b, b.Parameter(0, vs, "acc_value")), acc_i = lower::Wrap(b, b.Parameter(1, is, "acc_index"));
  const XOp op_v = lower::Wrap(b, b.Parameter(2, vs, "value")), op_i = lower::Wrap(b, b.Parameter(3, is, "index"));
  XOp better = is_max ? op_v > acc_v : op_v < acc_v;
  XOp same = lower::Eq(op_v, acc_v);
  if (hlo::IsFloatingPointType(vt)) {
    const XOp op_nan = lower::Ne(op_v, op_v), acc_nan = lower::Ne(acc_v, acc_v);
    better = (better & !acc_nan) | (op_nan & !acc_nan);
    same = same | (op_nan & acc_nan);
  }
  const XOp pick_index = better | (same & (op_i < acc_i));
  const XOp root = lower::Tuple(b, {lower::Select(better, op_v, acc_v), lower::Select(pick_index, op_i, acc_i)});
  return b.Build(root.instr());
}

void DefineArg(Registry& r, Primitive p, bool is_max) {
  r.Define(p).lower = [is_max](LowerContext& ctx) -> absl::Status {
    const XOp x = lower::Operands(ctx)[0];
    const int64_t axis = ctx.params().GetInts("axes").at(0);
    const PrimitiveType it = LowerContext::TypeOf(ctx.out_aval(0).dtype);
    hlo::HloBuilder& b = ctx.builder();
    const XOp index = lower::Wrap(b, b.Iota(hlo::ShapeUtil::MakeShape(it, x.dims()), axis));
    const XOp init_v = is_max ? lower::Lowest(b, x.type()) : lower::Highest(b, x.type());
    const XOp init_i = lower::FullInt(b, it, {}, 0);
    HLO_ASSIGN_OR_RETURN(hlo::HloComputation * reducer, ArgReducer(ctx, is_max, x.type(), it));
    const XOp both = lower::Wrap(b, b.Reduce({x.instr(), index.instr()}, {init_v.instr(), init_i.instr()}, {axis}, reducer));
    return lower::Output(ctx, lower::GetTupleElement(both, 1));
  };
}

}  // namespace

void RegisterReductionLowering(Registry& r) {
  DefineReduce(r, kReduceSum, HloOpcode::kAdd);
  DefineReduce(r, kReduceProd, HloOpcode::kMultiply);
  DefineReduce(r, kReduceMax, HloOpcode::kMaximum);
  DefineReduce(r, kReduceMin, HloOpcode::kMinimum);
  DefineReduce(r, kReduceAnd, HloOpcode::kAnd);
  DefineReduce(r, kReduceOr, HloOpcode::kOr);
  DefineArg(r, kArgmax, true);
  DefineArg(r, kArgmin, false);
}

}  // namespace jx::lax::internal

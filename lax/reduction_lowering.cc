// Lowering rules of the reductions (reduce with an add/mul/max/min/and/or to_apply; argmax
// and argmin as a variadic (value, index) reduce, as JAX lowers them), the cumulative ops
// (reduce-window over a window covering the prefix, as XLA does on CPU) and the windowed
// reductions. Float sums and products (plain, cumulative and windowed) are lowered per
// platform (FloatAccumulation): the CPU accumulates them in f64, a TPU in f32.
#include <vector>

#include "jx/compiler/hlo/status_macros.h"
#include "jx/compiler/lower/lower_ops.h"
#include "jx/core/errors.h"
#include "jx/core/registry.h"
#include "jx/lax/primitives.h"

namespace jx::lax::internal {
namespace {

using hlo::HloOpcode;
using hlo::PrimitiveType;
using lower::XOp;

// How a platform accumulates float sums and products: the one lowering difference between
// the CPU and a TPU in this family.
enum class FloatAccumulation {
  // The CPU (the generic rule): f16, bf16 and f32 accumulate in f64 and round once, as the
  // eager kernels do (lax/kernels/reducer.h), so a long or cancelling f32 sum agrees with
  // eager execution.
  kF64,
  // A TPU ("tpu" rule): no f64 hardware, so f32 sums in f32; 16-bit floats accumulate in f32,
  // the VPU's width.
  kF32,
};

// The type x (of type t) accumulates in.
PrimitiveType AccumulationType(PrimitiveType t, FloatAccumulation acc) {
  if (t != hlo::F16 && t != hlo::BF16 && t != hlo::F32) return t;
  return acc == FloatAccumulation::kF64 ? hlo::F64 : hlo::F32;
}

// Registers rule(kF64) as p's lowering and rule(kF32) as its "tpu" lowering.
template <typename MakeRule>
void DefinePerPlatform(Registry& r, Primitive p, MakeRule make_rule) {
  PrimitiveRules& rules = r.Define(p);
  rules.lower = make_rule(FloatAccumulation::kF64);
  rules.platform_lower.emplace_back("tpu", make_rule(FloatAccumulation::kF32));
}

// The identity of op over type.
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

// logaddexp(a, b) = max + log1p(exp(-|a - b|)); equal arguments (both infinite included) give
// max + log 2 without forming inf - inf.
absl::StatusOr<hlo::HloComputation*> LogAddExpReducer(LowerContext& ctx, PrimitiveType t) {
  hlo::HloBuilder b = ctx.NewBuilder("logaddexp_reducer");
  const hlo::Shape s = hlo::ShapeUtil::MakeScalarShape(t);
  const XOp x = lower::Wrap(b, b.Parameter(0, s, "lhs")), y = lower::Wrap(b, b.Parameter(1, s, "rhs"));
  const XOp m = lower::Max(x, y);
  const XOp d = lower::Select(lower::Eq(x, y), lower::Like(x, 0.0), -lower::Abs(x - y));
  return b.Build((m + lower::Log1p(lower::Exp(d))).instr());
}

// A window over the whole axis, padded so output i sees the prefix [0, i] (or the suffix).
hlo::Window PrefixWindow(const std::vector<int64_t>& dims, int64_t axis, bool reverse) {
  hlo::Window w(dims.size());
  const int64_t n = dims[static_cast<size_t>(axis)];
  hlo::WindowDim& d = w[static_cast<size_t>(axis)];
  d.size = std::max<int64_t>(n, 1);
  (reverse ? d.pad_high : d.pad_low) = std::max<int64_t>(n - 1, 0);
  return w;
}

LowerRule CumulativeRule(HloOpcode op, bool logaddexp, FloatAccumulation acc) {
  return [op, logaddexp, acc](LowerContext& ctx) -> absl::Status {
    XOp x = lower::Operands(ctx)[0];
    const PrimitiveType out_type = x.type();
    // Running sums and products accumulate as the platform's sums do (the eager scans: f64).
    if (op != HloOpcode::kMaximum && op != HloOpcode::kMinimum) x = lower::Convert(x, AccumulationType(out_type, acc));
    if (x.dims()[static_cast<size_t>(ctx.params().GetInt("axis"))] == 0) return lower::Output(ctx, lower::Convert(x, out_type));
    const int64_t axis = ctx.params().GetInt("axis");
    hlo::HloBuilder& b = ctx.builder();
    hlo::HloComputation* reducer;
    XOp init;
    if (logaddexp) {
      HLO_ASSIGN_OR_RETURN(reducer, LogAddExpReducer(ctx, x.type()));
      init = lower::Lowest(b, x.type());
    } else {
      reducer = Reducer(ctx, op, x.type());
      init = InitValue(b, op, x.type());
    }
    const hlo::Window w = PrefixWindow(x.dims(), axis, ctx.params().GetBool("reverse"));
    const XOp y = lower::Wrap(b, b.ReduceWindow({x.instr()}, {init.instr()}, w, reducer));
    return lower::Output(ctx, lower::Convert(y, out_type));
  };
}

void DefineCumulative(Registry& r, Primitive p, HloOpcode op, bool logaddexp = false) {
  if (op == HloOpcode::kMaximum || op == HloOpcode::kMinimum) {
    r.Define(p).lower = CumulativeRule(op, logaddexp, FloatAccumulation::kF64);  // one rule
  } else {
    DefinePerPlatform(r, p, [op, logaddexp](FloatAccumulation acc) { return CumulativeRule(op, logaddexp, acc); });
  }
}

LowerRule ReduceWindowRule(HloOpcode op, FloatAccumulation acc) {
  return [op, acc](LowerContext& ctx) -> absl::Status {
    XOp x = lower::Operands(ctx)[0];
    const PrimitiveType out_type = x.type();
    if (op == HloOpcode::kAdd) x = lower::Convert(x, AccumulationType(out_type, acc));
    const ParamMap& params = ctx.params();
    const std::vector<int64_t>& dims = params.GetInts("window_dimensions");
    const std::vector<int64_t>& strides = params.GetInts("window_strides");
    const std::vector<int64_t>& base = params.GetInts("base_dilation");
    const std::vector<int64_t>& wdil = params.GetInts("window_dilation");
    const ParamList& padding = params.GetList("padding");
    hlo::Window w(dims.size());
    for (size_t i = 0; i < dims.size(); ++i) {
      const auto& pad = std::get<std::vector<int64_t>>(padding[i].value);
      w[i] = hlo::WindowDim{dims[i], strides[i], pad[0], pad[1], base[i], wdil[i]};
    }
    hlo::HloBuilder& b = ctx.builder();
    const XOp init = InitValue(b, op, x.type());
    const XOp y = lower::Wrap(b, b.ReduceWindow({x.instr()}, {init.instr()}, w, Reducer(ctx, op, x.type())));
    return lower::Output(ctx, lower::Convert(y, out_type));
  };
}

void DefineReduceWindow(Registry& r, Primitive p, HloOpcode op) {
  if (op == HloOpcode::kAdd) {
    DefinePerPlatform(r, p, [op](FloatAccumulation acc) { return ReduceWindowRule(op, acc); });
  } else {
    r.Define(p).lower = ReduceWindowRule(op, FloatAccumulation::kF64);  // no accumulation: one rule
  }
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
  DefineCumulative(r, kCumsum, HloOpcode::kAdd);
  DefineCumulative(r, kCumprod, HloOpcode::kMultiply);
  DefineCumulative(r, kCummax, HloOpcode::kMaximum);
  DefineCumulative(r, kCummin, HloOpcode::kMinimum);
  DefineCumulative(r, kCumlogsumexp, HloOpcode::kAdd, /*logaddexp=*/true);
  DefineReduceWindow(r, kReduceWindowSum, HloOpcode::kAdd);
  DefineReduceWindow(r, kReduceWindowMax, HloOpcode::kMaximum);
}

}  // namespace jx::lax::internal

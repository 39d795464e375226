// Lowering rules of the reductions (reduce with an add/mul/max/min/and/or to_apply; argmax
// and argmin as a variadic (value, index) reduce, as JAX lowers them), the cumulative ops
// (reduce-window over a window covering the prefix, as XLA does on CPU) and the windowed
// reductions. Float sums and products (plain, cumulative and windowed) accumulate in f64 and
// round once, as the eager kernels do (lax/kernels/reducer.h), so a long or cancelling f32
// sum agrees with eager execution.
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

// Float types narrower than f64, which sums and products widen to f64.
bool IsNarrowFloat(PrimitiveType t) { return t == hlo::F16 || t == hlo::BF16 || t == hlo::F32; }

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

void DefineReduce(Registry& r, Primitive p, HloOpcode op) {
  r.Define(p).lower = [op](LowerContext& ctx) -> absl::Status {
    XOp x = lower::Operands(ctx)[0];
    const PrimitiveType out_type = x.type();
    const bool widen = IsNarrowFloat(out_type) && (op == HloOpcode::kAdd || op == HloOpcode::kMultiply);
    if (widen) x = lower::Convert(x, hlo::F64);
    hlo::HloBuilder& b = ctx.builder();
    const XOp init = InitValue(b, op, x.type());
    XOp y = lower::Wrap(b, b.Reduce(x.instr(), init.instr(), ctx.params().GetInts("axes"), Reducer(ctx, op, x.type())));
    return lower::Output(ctx, lower::Convert(y, out_type));
  };
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

void DefineCumulative(Registry& r, Primitive p, HloOpcode op, bool logaddexp = false) {
  r.Define(p).lower = [op, logaddexp](LowerContext& ctx) -> absl::Status {
    XOp x = lower::Operands(ctx)[0];
    const PrimitiveType out_type = x.type();
    // Running sums and products accumulate in f64 below f64 (as the eager scans do).
    const bool widen = hlo::IsFloatingPointType(out_type) && op != HloOpcode::kMaximum && op != HloOpcode::kMinimum;
    if (widen) x = lower::Convert(x, hlo::F64);
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

void DefineReduceWindow(Registry& r, Primitive p, HloOpcode op) {
  r.Define(p).lower = [op](LowerContext& ctx) -> absl::Status {
    XOp x = lower::Operands(ctx)[0];
    const PrimitiveType out_type = x.type();
    if (IsNarrowFloat(out_type) && op == HloOpcode::kAdd) x = lower::Convert(x, hlo::F64);
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

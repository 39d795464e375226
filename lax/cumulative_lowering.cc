// Lowering rules of the cumulative ops (cumsum, cumprod, cummax, cummin, cumlogsumexp): a
// reduce-window over a window covering the prefix (or suffix), as XLA does on CPU. Running
// sums and products accumulate per platform, as the reductions' do.
#include <algorithm>
#include <string>
#include <vector>

#include "jx/compiler/hlo/status_macros.h"
#include "jx/lax/primitives.h"
#include "jx/lax/reduction_lowering.h"

namespace jx::lax::internal {
namespace {

using hlo::HloOpcode;
using hlo::PrimitiveType;
using lower::XOp;

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
hlo::Window PrefixWindow(absl::Span<const int64_t> dims, int64_t axis, bool reverse) {
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

}  // namespace

void RegisterCumulativeLowering(Registry& r) {
  DefineCumulative(r, kCumsum, HloOpcode::kAdd);
  DefineCumulative(r, kCumprod, HloOpcode::kMultiply);
  DefineCumulative(r, kCummax, HloOpcode::kMaximum);
  DefineCumulative(r, kCummin, HloOpcode::kMinimum);
  DefineCumulative(r, kCumlogsumexp, HloOpcode::kAdd, /*logaddexp=*/true);
}

}  // namespace jx::lax::internal

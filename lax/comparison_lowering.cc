// Lowering rules of the comparisons, select_n and clamp. 0-d operands broadcast to the other
// operand's shape first (lax allows a scalar beside an array; HLO has no implicit
// broadcasting).
#include <vector>

#include "jx/compiler/lower/lower_ops.h"
#include "jx/core/registry.h"
#include "jx/lax/primitives.h"

namespace jx::lax::internal {
namespace {

using hlo::ComparisonDirection;
using lower::XOp;

void DefineCompare(Registry& r, Primitive p, ComparisonDirection dir) {
  r.Define(p).lower = [dir](LowerContext& ctx) -> absl::Status {
    std::vector<XOp> in = lower::ElementwiseOperands(ctx);
    return lower::Output(ctx, lower::Compare(in[0], in[1], dir));
  };
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

void RegisterComparisonLowering(Registry& r) {
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
}

}  // namespace jx::lax::internal

// Lowering rules of sort and top_k: HLO sort with a comparator in the total order the eager
// kernels use (-NaN < -inf < ... < -0.0 < +0.0 < ... < inf < NaN); top_k is a stable
// descending sort with an iota, sliced.
#include <vector>

#include "jx/compiler/hlo/status_macros.h"
#include "jx/compiler/lower/lower_ops.h"
#include "jx/core/registry.h"
#include "jx/lax/primitives.h"

namespace jx::lax::internal {
namespace {

using hlo::HloBuilder;
using lower::XOp;

XOp Less(const XOp& a, const XOp& b, bool descending) {
  const hlo::ComparisonType t =
      hlo::IsFloatingPointType(a.type()) ? hlo::ComparisonType::kTotalOrder : hlo::ComparisonType::kDefault;
  return lower::Compare(a, b,
                        descending ? hlo::ComparisonDirection::kGt : hlo::ComparisonDirection::kLt, t);
}
XOp Equal(const XOp& a, const XOp& b) {
  const hlo::ComparisonType t =
      hlo::IsFloatingPointType(a.type()) ? hlo::ComparisonType::kTotalOrder : hlo::ComparisonType::kDefault;
  return lower::Compare(a, b, hlo::ComparisonDirection::kEq, t);
}

// Lexicographic comparator over the first num_keys operands (parameters 2i, 2i+1 compare
// operand i, as XLA's sort passes them).
absl::StatusOr<hlo::HloComputation*> Comparator(LowerContext& ctx, absl::Span<hlo::HloInstruction* const> operands,
                                               int64_t num_keys, bool descending) {
  HloBuilder b = ctx.NewBuilder("compare");
  std::vector<XOp> lhs, rhs;
  for (size_t i = 0; i < operands.size(); ++i) {
    const hlo::Shape s = hlo::ShapeUtil::MakeScalarShape(operands[i]->shape().element_type());
    lhs.push_back(lower::Wrap(b, b.Parameter(static_cast<int64_t>(2 * i), s, "lhs_" + std::to_string(i))));
    rhs.push_back(lower::Wrap(b, b.Parameter(static_cast<int64_t>(2 * i + 1), s, "rhs_" + std::to_string(i))));
  }
  XOp result = Less(lhs[static_cast<size_t>(num_keys - 1)], rhs[static_cast<size_t>(num_keys - 1)], descending);
  for (int64_t k = num_keys - 2; k >= 0; --k) {
    const size_t i = static_cast<size_t>(k);
    result = Less(lhs[i], rhs[i], descending) | (Equal(lhs[i], rhs[i]) & result);
  }
  return b.Build(result.instr());
}

absl::Status LowerSort(LowerContext& ctx) {
  const int64_t num_keys = ctx.params().GetInt("num_keys");
  HLO_ASSIGN_OR_RETURN(hlo::HloComputation * cmp, Comparator(ctx, ctx.operands(), num_keys, false));
  HloBuilder& b = ctx.builder();
  const XOp sorted = lower::Wrap(
      b, b.Sort(ctx.operands(), ctx.params().GetInt("dimension"), cmp, ctx.params().GetBool("is_stable")));
  if (ctx.operands().size() == 1) return lower::Output(ctx, sorted);
  std::vector<XOp> outs;
  for (size_t i = 0; i < ctx.operands().size(); ++i) outs.push_back(lower::GetTupleElement(sorted, static_cast<int64_t>(i)));
  return lower::Outputs(ctx, outs);
}

// top_k along the last axis: values descending, ties to the lower index.
absl::Status LowerTopK(LowerContext& ctx) {
  const XOp x(&ctx.builder(), ctx.operand(0));
  const int64_t k = ctx.params().GetInt("k"), last = x.rank() - 1;
  HloBuilder& b = ctx.builder();
  const hlo::PrimitiveType it = LowerContext::TypeOf(ctx.out_aval(1).dtype);
  const XOp iota = lower::Wrap(b, b.Iota(hlo::ShapeUtil::MakeShape(it, x.dims()), last));
  const std::vector<hlo::HloInstruction*> both = {x.instr(), iota.instr()};
  HLO_ASSIGN_OR_RETURN(hlo::HloComputation * cmp, Comparator(ctx, both, 1, /*descending=*/true));
  const XOp sorted = lower::Wrap(b, b.Sort(both, last, cmp, /*is_stable=*/true));
  std::vector<int64_t> start(static_cast<size_t>(x.rank()), 0), limit = hlo::SpanToVector(x.dims());
  limit.back() = k;
  return lower::Outputs(ctx, {lower::Slice(lower::GetTupleElement(sorted, 0), start, limit),
                              lower::Slice(lower::GetTupleElement(sorted, 1), start, limit)});
}

}  // namespace

void RegisterSortLowering(Registry& r) {
  r.Define(kSort).lower = LowerSort;
  r.Define(kTopK).lower = LowerTopK;
}

}  // namespace jx::lax::internal

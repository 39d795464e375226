// Lowering of the generic `reduce` (JAX's _reduce_lower): one HLO reduce over the operands and
// init values whose to_apply is the body jaxpr lowered over scalars ((acc..., x...) ->
// tuple of the new accumulators, or the one accumulator).
#include <vector>

#include "jx/compiler/hlo/status_macros.h"
#include "jx/compiler/lower/lower_ops.h"
#include "jx/lax/reduce_generic_internal.h"
#include "jx/transforms/jaxpr_util.h"

namespace jx::lax::internal {

void RegisterGenericReduceLowering(Registry& r) {
  r.Define(kReduce).lower = [](LowerContext& ctx) -> absl::Status {
    const size_t n = ctx.out_avals().size();
    const ClosedJaxpr& body = GetJaxpr(ctx.params(), "jaxpr");
    HLO_ASSIGN_OR_RETURN(hlo::HloComputation * reducer,
                         ctx.LowerSubJaxpr(body, "reducer", "reduce", /*tuple_param=*/false, /*tuple_result=*/n > 1));
    const absl::Span<hlo::HloInstruction* const> in = ctx.operands();
    const std::vector<hlo::HloInstruction*> operands(in.begin(), in.begin() + static_cast<ptrdiff_t>(n));
    const std::vector<hlo::HloInstruction*> inits(in.begin() + static_cast<ptrdiff_t>(n), in.end());
    hlo::HloBuilder& b = ctx.builder();
    HLO_ASSIGN_OR_RETURN(hlo::HloInstruction * reduce,
                         b.Reduce(operands, inits, ctx.params().GetInts("dimensions"), reducer));
    if (n == 1) {
      ctx.SetOutputs({reduce});
      return absl::OkStatus();
    }
    const lower::XOp t(&b, reduce);
    std::vector<lower::XOp> outs;
    for (size_t i = 0; i < n; ++i) outs.push_back(lower::GetTupleElement(t, static_cast<int64_t>(i)));
    return lower::Outputs(ctx, outs);
  };
}

}  // namespace jx::lax::internal

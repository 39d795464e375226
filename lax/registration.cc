#include "jx/lax/registration.h"

#include <mutex>

#include "jx/core/sharding_rule_required.h"
#include "jx/lax/primitives.h"
#include "jx/lax/reduce_generic_internal.h"
#include "jx/lax/sharding_rules.h"
#include "jx/transforms/checkpoint.h"
#include "jx/transforms/custom_derivatives.h"
#include "jx/transforms/jit.h"

namespace jx::lax {
namespace internal {
// Lowering rules (lax/*_lowering.cc), set beside each primitive's other rules.
void RegisterUnaryLowering(Registry& r);
void RegisterBinaryLowering(Registry& r);
void RegisterComparisonLowering(Registry& r);
void RegisterConvertLowering(Registry& r);
void RegisterReductionLowering(Registry& r);
void RegisterCumulativeLowering(Registry& r);
void RegisterWindowLowering(Registry& r);
void RegisterShapeLowering(Registry& r);
void RegisterSlicingLowering(Registry& r);
void RegisterGatherScatterLowering(Registry& r);
void RegisterDotGeneralLowering(Registry& r);
void RegisterConvolutionLowering(Registry& r);
void RegisterSortLowering(Registry& r);
void RegisterRandomLowering(Registry& r);
void RegisterControlFlowLowering(Registry& r);
void RegisterDebug(Registry& r);
void RegisterDebugLowering(Registry& r);
void RegisterLinalg(Registry& r);  // lax/linalg.cc: lax.linalg's primitives with all their rules
}  // namespace internal

void internal::RequireLaxShardingRules() {
#define JX_REQUIRE_RULE(handle, name) RequireShardingRule(handle);
  JX_LAX_PRIMITIVES(JX_REQUIRE_RULE)
#undef JX_REQUIRE_RULE
}

void RegisterAll() {
  static std::once_flag once;
  std::call_once(once, [] {
    Registry& r = GlobalRegistry();
    internal::RegisterUnaryOps(r);
    internal::RegisterBinaryOps(r);
    internal::RegisterConvertOps(r);
    internal::RegisterReductionOps(r);
    internal::RegisterGenericReduce(r);
    internal::RegisterCumulativeOps(r);
    internal::RegisterShapeOps(r);
    internal::RegisterSlicingOps(r);
    internal::RegisterGatherScatter(r);
    internal::RegisterDotGeneral(r);
    internal::RegisterConvolution(r);
    internal::RegisterWindowOps(r);
    internal::RegisterSortOps(r);
    internal::RegisterLinalg(r);
    internal::RegisterRandomOps(r);
    internal::RegisterStopGradient(r);
    internal::RegisterControlFlow(r);
    internal::RegisterDebug(r);
    RegisterCustomDerivatives(r);
    RegisterCheckpoint(r);
    internal::RegisterUnaryLowering(r);
    internal::RegisterBinaryLowering(r);
    internal::RegisterComparisonLowering(r);
    internal::RegisterConvertLowering(r);
    internal::RegisterReductionLowering(r);
    internal::RegisterGenericReduceLowering(r);
    internal::RegisterCumulativeLowering(r);
    internal::RegisterWindowLowering(r);
    internal::RegisterShapeLowering(r);
    internal::RegisterSlicingLowering(r);
    internal::RegisterGatherScatterLowering(r);
    internal::RegisterDotGeneralLowering(r);
    internal::RegisterConvolutionLowering(r);
    internal::RegisterSortLowering(r);
    internal::RegisterRandomLowering(r);
    internal::RegisterControlFlowLowering(r);
    internal::RegisterElementwiseSharding(r);
    internal::RegisterDotGeneralSharding(r);
    internal::RegisterReductionSharding(r);
    internal::RegisterShapeSharding(r);
    internal::RegisterSlicingSharding(r);
    internal::RegisterSortSharding(r);
    internal::RegisterWindowSharding(r);
    internal::RegisterConvolutionSharding(r);
    internal::RegisterGatherSharding(r);
    internal::RegisterScatterSharding(r);
    internal::RegisterLinalgSharding(r);
    internal::RequireLaxShardingRules();
    internal::RegisterDebugLowering(r);
    RegisterJit(r);
  });
}

}  // namespace jx::lax

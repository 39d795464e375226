#include "jx/lax/registration.h"

#include <mutex>

#include "jx/transforms/checkpoint.h"
#include "jx/transforms/custom_derivatives.h"
#include "jx/transforms/jit.h"

namespace jx::lax {
namespace internal {
// Lowering rules (lax/*_lowering.cc), set beside each primitive's other rules.
void RegisterUnaryLowering(Registry& r);
void RegisterElementwiseLowering(Registry& r);
void RegisterReductionLowering(Registry& r);
void RegisterShapeLowering(Registry& r);
void RegisterDotGeneralLowering(Registry& r);
void RegisterConvolutionLowering(Registry& r);
void RegisterSortRandomLowering(Registry& r);
void RegisterControlFlowLowering(Registry& r);
}  // namespace internal

void RegisterAll() {
  static std::once_flag once;
  std::call_once(once, [] {
    Registry& r = GlobalRegistry();
    internal::RegisterUnaryOps(r);
    internal::RegisterBinaryOps(r);
    internal::RegisterConvertOps(r);
    internal::RegisterReductionOps(r);
    internal::RegisterCumulativeOps(r);
    internal::RegisterShapeOps(r);
    internal::RegisterSlicingOps(r);
    internal::RegisterGatherScatter(r);
    internal::RegisterDotGeneral(r);
    internal::RegisterConvolution(r);
    internal::RegisterWindowOps(r);
    internal::RegisterSortOps(r);
    internal::RegisterRandomOps(r);
    internal::RegisterStopGradient(r);
    internal::RegisterControlFlow(r);
    RegisterCustomDerivatives(r);
    RegisterCheckpoint(r);
    internal::RegisterUnaryLowering(r);
    internal::RegisterElementwiseLowering(r);
    internal::RegisterReductionLowering(r);
    internal::RegisterShapeLowering(r);
    internal::RegisterDotGeneralLowering(r);
    internal::RegisterConvolutionLowering(r);
    internal::RegisterSortRandomLowering(r);
    internal::RegisterControlFlowLowering(r);
    RegisterJit(r);
  });
}

}  // namespace jx::lax

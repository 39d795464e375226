#include "jx/lax/registration.h"

#include <mutex>

#include "jx/transforms/checkpoint.h"
#include "jx/transforms/custom_derivatives.h"
#include "jx/transforms/jit.h"

namespace jx::lax {

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
    RegisterJit(r);
  });
}

}  // namespace jx::lax

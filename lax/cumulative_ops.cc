// (in progress: the family's rules are being written)
#include "jx/lax/cumulative_ops.h"
#include "jx/lax/registration.h"

namespace jx::lax::internal {
void RegisterCumulativeOps(Registry& r) {}
}  // namespace jx::lax::internal

// (in progress: the family's rules are being written)
#include "jx/lax/reduction_ops.h"
#include "jx/lax/registration.h"

namespace jx::lax::internal {
void RegisterReductionOps(Registry& r) {}
}  // namespace jx::lax::internal

// (in progress: the family's rules are being written)
#include "jx/lax/slicing_ops.h"
#include "jx/lax/registration.h"

namespace jx::lax::internal {
void RegisterSlicingOps(Registry& r) {}
}  // namespace jx::lax::internal

// (in progress: the family's rules are being written)
#include "jx/lax/window_ops.h"
#include "jx/lax/registration.h"

namespace jx::lax::internal {
void RegisterWindowOps(Registry& r) {}
}  // namespace jx::lax::internal

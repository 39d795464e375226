// (in progress: the family's rules are being written)
#include "jx/lax/random_ops.h"
#include "jx/lax/registration.h"

namespace jx::lax::internal {
void RegisterRandomOps(Registry& r) {}
}  // namespace jx::lax::internal

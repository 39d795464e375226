// (in progress: the family's rules are being written)
#include "jx/lax/sort_ops.h"
#include "jx/lax/registration.h"

namespace jx::lax::internal {
void RegisterSortOps(Registry& r) {}
}  // namespace jx::lax::internal

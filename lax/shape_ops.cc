// (in progress: the family's rules are being written)
#include "jx/lax/shape_ops.h"
#include "jx/lax/registration.h"

namespace jx::lax::internal {
void RegisterShapeOps(Registry& r) {}
}  // namespace jx::lax::internal

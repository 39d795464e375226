// (in progress: the family's rules are being written)
#include "jx/lax/convert_ops.h"
#include "jx/lax/registration.h"

namespace jx::lax::internal {
void RegisterConvertOps(Registry& r) {}
}  // namespace jx::lax::internal

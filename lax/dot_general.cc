// (in progress: the family's rules are being written)
#include "jx/lax/dot_general.h"
#include "jx/lax/registration.h"

namespace jx::lax::internal {
void RegisterDotGeneral(Registry& r) {}
}  // namespace jx::lax::internal

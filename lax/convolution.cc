// (in progress: the family's rules are being written)
#include "jx/lax/convolution.h"
#include "jx/lax/registration.h"

namespace jx::lax::internal {
void RegisterConvolution(Registry& r) {}
}  // namespace jx::lax::internal

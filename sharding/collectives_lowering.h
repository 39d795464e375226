// Lowering rules of the collective primitives to HLO collectives (collectives_lowering.cc):
// registered with the primitives (RegisterCollectives calls this).
#pragma once

#include "jx/core/registry.h"

namespace jx {

void RegisterCollectiveLowering(Registry& r);

}  // namespace jx

// Internal to lax: what debug_callback's lowering rule needs from its params.
#pragma once

#include <cstdint>

#include "jx/core/param_map.h"
#include "jx/core/registry.h"

namespace jx::lax::internal {

// The host-callback id of a debug_callback equation's function (registered on first use).
int64_t DebugCallbackHostId(const ParamMap& params);

void RegisterDebug(Registry& r);
void RegisterDebugLowering(Registry& r);

}  // namespace jx::lax::internal

// Lowering rules of the collective primitives to HLO collectives (collectives_lowering.cc):
// registered with the primitives (RegisterCollectives calls RegisterCollectiveLowering).
#pragma once

#include "absl/status/status.h"
#include "jx/core/registry.h"

namespace jx {

void RegisterCollectiveLowering(Registry& r);

// shard_map's lowering rule (registered with the primitive, RegisterShardMap): inside a
// per-device program the body is inlined; over global values it fails, pointing at
// shard_map_internal::ShardMapCompiled.
absl::Status LowerShardMap(LowerContext& ctx);

}  // namespace jx

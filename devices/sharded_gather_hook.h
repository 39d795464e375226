// What device_put does beside copying when it gathers a sharded array onto one device: the
// sharding layer, which knows the slices' interconnects, installs the costing of the shards'
// moves (on a TPU slice: each shard routed over the ICI to the target chip, the chips' clocks
// advanced; sharding/eager_collective_clock.h). devices/ cannot see the TPU layer, hence a hook.
#pragma once

#include "jx/core/array.h"
#include "jx/core/device.h"

namespace jx {

using ShardedGatherHook = void (*)(const Array& sharded, const Device* target);
// Installs hook (nullptr: none); returns the previous one. Thread-safe.
ShardedGatherHook SetShardedGatherHook(ShardedGatherHook hook);

}  // namespace jx

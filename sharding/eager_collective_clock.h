// The simulated time of a collective evaluated eagerly (shard_map's lockstep path) on the
// chips of one TPU slice: each replica group's chips wait for the latest of them, then the
// collective runs for the time the slice's interconnect model gives (ici::CostCollective,
// ici::CostPermute for ppermute), on each chip's ICI lane; the clocks move past it, as a
// compiled pod step's collectives synchronize the chips (devices/tpu/pod_step.h).
// Devices without a clock (the host) and the collectives that move nothing (axis_index,
// pvary) leave the clocks alone. device_put of a sharded array to one chip is costed alike.
//
//   std::vector<Array> out = EvalCollective(p, per_device, params);
//   AdvanceClocksForCollective(p, params, {per_device}, devices);
#pragma once

#include <vector>

#include "jx/core/array.h"
#include "jx/core/device.h"
#include "jx/core/param_map.h"
#include "jx/core/primitive.h"

namespace jx::shard_map_internal {

// operands[k][d]: device d's value of operand k (devices in the collective mesh's row-major
// order); a collective of several operands moves all their bytes as one. Returns the
// collective's modeled seconds (0 when no clock moved).
double AdvanceClocksForCollective(Primitive p, const ParamMap& params, const std::vector<std::vector<Array>>& operands,
                                  const std::vector<const Device*>& devices);

// device_put of a sharded array to one chip of the slice its shards are on: each piece (one
// copy of each) not already there is sent to it over the ICI, timed as an all-gather over
// the chips involved (the rate at which the target's links take the pieces in); those chips
// wait for the latest of them and their clocks move past the transfer. Returns its seconds
// (0: nothing moved or no slice). Installed as device_put's gather hook
// (InstallShardedGatherCost).
double AdvanceClocksForGather(const Array& sharded, const Device* target);
void InstallShardedGatherCost();

}  // namespace jx::shard_map_internal

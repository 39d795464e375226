// Lockstep evaluation of a per-device program over a mesh's devices: ordinary equations run
// on each device through the eager path (each device's op on its own device, so simulated
// chips compute and their clocks advance), collectives move the devices' values between them
// (collective_eval.h) and advance the clocks by the interconnect's time
// (eager_collective_clock.h), and scan, while, cond and calls whose bodies communicate run
// their bodies in lockstep too. shard_map's eager path runs its body this way, and an SPMD
// program on a mesh that is not one TPU slice (the host CPU, chips of several pods) runs its
// partitioned program this way.
//
//   std::vector<PerDevice> outs = EvalLockstep(closed, {x_per_device, w_per_device}, devices);
#pragma once

#include <vector>

#include "jx/core/array.h"
#include "jx/core/device.h"
#include "jx/core/jaxpr.h"

namespace jx::shard_map_internal {

using PerDevice = std::vector<Array>;  // one value per device of the mesh

// args[i][d]: argument i on device d (devices in the collectives' row-major mesh order).
// Returns result k on device d as results[k][d], each placed on its device. A loop
// predicate or branch index that guards collectives must agree across devices (ValueError
// otherwise); a primitive other than scan/while/cond/jit/checkpoint/custom_jvp/vjp whose
// body holds collectives is a ValueError naming it.
std::vector<PerDevice> EvalLockstep(const ClosedJaxpr& closed, const std::vector<PerDevice>& args,
                                    const std::vector<const Device*>& devices);

// Whether every device is a chip of one simulated TPU slice (one pod's client): such a mesh
// compiles an SPMD program into one pod program; any other runs it in lockstep (above).
bool IsOneTpuSlice(const std::vector<const Device*>& devices);

}  // namespace jx::shard_map_internal

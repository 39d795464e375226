// shard_map run as one compiled SPMD program (JAX's jit(shard_map(f))): the body's per-device
// jaxpr is lowered once for the mesh's chips (every chip runs it, partition p on
// mesh.devices()[p], collectives lowered to HLO collectives: collectives_lowering.cc) and
// cached by the devices' program cache; each call puts the arguments on the chips by
// in_specs, runs the program on every chip at once (devices/tpu/pod_program.h) and assembles
// the per-chip results by out_specs, as the eager path (shard_map_eval.cc) does op by op.
//
//   Arrays outs = shard_map_internal::ShardMapCompiled(args, eqn.params, out_avals);
//
// jit's sharded path (spmd's handler) calls this for a program that is one shard_map. On a
// mesh that is not the chips of one TPU slice (the host, chips of several pods) no one program
// runs on its devices: the call runs the body in lockstep (shard_map's eager evaluation,
// lockstep_eval.h), said once on stderr.
#pragma once

#include "absl/types/span.h"
#include "jx/core/array.h"
#include "jx/core/executable.h"
#include "jx/core/param_map.h"

namespace jx::shard_map_internal {

// The compiled per-device program of a shard_map equation (compiled on first use, then
// fetched from the program cache). ValueError for a mesh that is not one TPU slice.
std::shared_ptr<const Executable> CompileShardMap(const ParamMap& params);

// Runs a shard_map equation through CompileShardMap. out_avals: the equation's (global) types.
Arrays ShardMapCompiled(absl::Span<const Array> in, const ParamMap& params, absl::Span<const ShapedArray> out_avals);

}  // namespace jx::shard_map_internal

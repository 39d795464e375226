#include "jx/sharding/shard_map_compiled.h"

#include <atomic>
#include <cstdio>
#include <memory>
#include <vector>

#include "jx/core/device.h"
#include "jx/core/errors.h"
#include "jx/core/sharding.h"
#include "jx/core/str_util.h"
#include "jx/devices/tpu/pod_program.h"
#include "jx/sharding/lockstep_eval.h"
#include "jx/sharding/named_sharding.h"
#include "jx/sharding/shard_map_internal.h"
#include "jx/sharding/sharded_put.h"

namespace jx::shard_map_internal {

namespace {

// The lockstep run of a compiled shard_map is the slow path: said once per process.
void NoteLockstepOnce(const Mesh& mesh) {
  static std::atomic<bool> noted{false};
  if (noted.exchange(true)) return;
  std::fprintf(stderr,
               "jx: jit(shard_map) over %s, whose devices are not the chips of one TPU slice, runs its body in "
               "lockstep over them, equation by equation (no compiled per-device program). This note is printed "
               "once.\n",
               mesh.ToString().c_str());
}

}  // namespace

std::shared_ptr<const Executable> CompileShardMap(const ParamMap& params) {
  const ShardMapParams p = ShardMapParams::From(params);
  const std::vector<const Device*>& devices = p.mesh.devices();
  if (devices.empty()) throw ValueError("shard_map: the mesh has no devices");
  if (!IsOneTpuSlice(devices)) {
    throw ValueError(StrCat("shard_map: one compiled program needs the chips of one TPU slice; ", p.mesh.ToString(),
                            " has ", devices.front()->ToString(), " and devices of other clients or platforms ",
                            "(its calls run in lockstep instead)"));
  }
  return devices.front()->client().Lower(p.jaxpr, {.name = "shard_map", .device_assignment = devices})->Compile();
}

Arrays ShardMapCompiled(absl::Span<const Array> in, const ParamMap& params, absl::Span<const ShapedArray> out_avals) {
  const ShardMapParams p = ShardMapParams::From(params);
  const std::vector<const Device*>& devices = p.mesh.devices();
  const size_t num = devices.size();
  if (!IsOneTpuSlice(devices)) {
    // No one program runs on these devices together (the host, chips of several pods): the
    // body runs in lockstep over them, collectives in loop and branch bodies included.
    NoteLockstepOnce(p.mesh);
    return ShardMapImpl(in, params, out_avals);
  }
  std::shared_ptr<const Executable> exe = CompileShardMap(params);
  auto program = std::dynamic_pointer_cast<const tpu::PodProgram>(exe);
  if (program == nullptr) {
    throw InternalError(StrCat("shard_map: the program compiled for the chips of one TPU slice (",
                               p.mesh.ToString(), ") is not a pod program"));
  }
  std::vector<Arrays> per_chip(num);
  for (size_t i = 0; i < in.size(); ++i) {
    const Array placed = sharding_internal::DevicePutSharded(in[i], NamedSharding(p.mesh, p.in_specs[i]));
    std::vector<Shard> shards = placed.addressable_shards();
    if (shards.size() != num) throw InternalError("shard_map: an argument's shards do not cover the mesh");
    for (size_t d = 0; d < num; ++d) per_chip[d].push_back(shards[d].data);
  }
  std::vector<Arrays> results = program->ExecuteShards(per_chip);
  Arrays outs;
  for (size_t k = 0; k < out_avals.size(); ++k) {
    std::vector<Array> blocks;
    for (size_t d = 0; d < num; ++d) blocks.push_back(results[d][k]);
    outs.push_back(make_array_from_single_device_arrays(out_avals[k].shape, NamedSharding(p.mesh, p.out_specs[k]),
                                                        std::move(blocks)));
  }
  return outs;
}

}  // namespace jx::shard_map_internal

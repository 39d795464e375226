// shard_map's eager evaluation: every argument is laid out over the mesh by its in_spec
// (device_put to a NamedSharding, which keeps an argument already laid out that way), the
// body runs on every device in lockstep, equation by equation (each device's ordinary ops
// on its own chip through the eager path, so the chips compute and their clocks advance;
// collectives move the devices' values between them and advance the clocks by the
// interconnect's time; scan, while, cond and calls whose bodies communicate run their
// bodies in lockstep too: lockstep_eval.h), and each output is assembled from
// the devices' results by its out_spec as a sharded array.
#include <vector>

#include "jx/core/errors.h"
#include "jx/core/sharding.h"
#include "jx/devices/device_put.h"
#include "jx/sharding/lockstep_eval.h"
#include "jx/sharding/named_sharding.h"
#include "jx/sharding/shard_map_internal.h"
#include "jx/sharding/sharded_put.h"

namespace jx::shard_map_internal {
namespace {

Array OnDevice(const Array& x, const Device* device) {
  return x.committed_device() == device ? x : device_put(x, device);
}

}  // namespace

Arrays ShardMapImpl(absl::Span<const Array> in, const ParamMap& params, absl::Span<const ShapedArray> out_avals) {
  const ShardMapParams p = ShardMapParams::From(params);
  const std::vector<const Device*>& devices = p.mesh.devices();
  const size_t num = devices.size();

  std::vector<PerDevice> args;
  for (size_t i = 0; i < in.size(); ++i) {
    const Array placed = sharding_internal::DevicePutSharded(in[i], NamedSharding(p.mesh, p.in_specs[i]));
    std::vector<Shard> shards = placed.addressable_shards();
    if (shards.size() != num) throw InternalError("shard_map: an argument's shards do not cover the mesh");
    PerDevice values(num);
    for (size_t d = 0; d < num; ++d) values[d] = OnDevice(shards[d].data, devices[d]);
    args.push_back(std::move(values));
  }

  std::vector<PerDevice> results = EvalLockstep(p.jaxpr, args, devices);

  Arrays outs;
  for (size_t k = 0; k < results.size(); ++k) {
    std::vector<Array> blocks;
    for (size_t d = 0; d < num; ++d) blocks.push_back(OnDevice(results[k][d], devices[d]));
    outs.push_back(make_array_from_single_device_arrays(out_avals[k].shape, NamedSharding(p.mesh, p.out_specs[k]),
                                                        std::move(blocks)));
  }
  return outs;
}

}  // namespace jx::shard_map_internal

// Eager ops on a device other than the host CPU (JAX's apply_primitive / xla_primitive_callable):
// the primitive is wrapped in a one-equation program, compiled for the device through its
// client (so a simulated chip computes with its numerics and advances its clock), cached per
// (primitive, params, input avals, device), and executed there. The eval interpreter calls it
// when an op's committed arguments live on such a device; the host CPU runs impl rules directly.
//
//   Arrays outs = ApplyPrimitiveOnDevice(lax::kSin, {x_on_chip}, {}, chip);
#pragma once

#include <cstdint>
#include <functional>

#include "absl/types/span.h"
#include "jx/core/array.h"
#include "jx/core/param_map.h"
#include "jx/core/primitive.h"

namespace jx {

class Device;

Arrays ApplyPrimitiveOnDevice(Primitive p, absl::Span<const Array> inputs, const ParamMap& params,
                              const Device& device);

struct ApplyPrimitiveStats {
  int64_t compiles = 0;  // one-equation programs lowered and compiled
  int64_t hits = 0;      // eager ops that found theirs compiled
};
ApplyPrimitiveStats GetApplyPrimitiveStats();

// Eager ops on sharded arrays. When an eagerly evaluated primitive has an argument sharded
// over several devices (a NamedSharding's ConcreteArray), the eval interpreter hands the
// whole op to this handler instead of running it on one device (the committed-device rules
// have already checked that every committed argument shares the sharded arguments' devices).
// A top-level jit call with a sharded argument arrives here too, as one `jit` equation whose
// params hold the traced program ("jaxpr") and its name.
// The SPMD layer installs one that runs the op as a program per device; the default throws
// NotImplementedError naming the op, the argument and its sharding. Returns the previous
// handler; a null handler restores the default. Thread-safe.
using ShardedEagerHandler =
    std::function<Arrays(Primitive p, absl::Span<const Array> inputs, const ParamMap& params)>;
ShardedEagerHandler SetShardedEagerHandler(ShardedEagerHandler handler);
// Runs p through the installed handler (the eval interpreter calls it).
Arrays ApplyShardedPrimitive(Primitive p, absl::Span<const Array> inputs, const ParamMap& params);

}  // namespace jx

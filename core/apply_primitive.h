// Eager ops on a device other than the host CPU (JAX's apply_primitive / xla_primitive_callable):
// the primitive is wrapped in a one-equation program, compiled for the device through its
// client (so a simulated chip computes with its numerics and advances its clock), cached per
// (primitive, params, input avals, device), and executed there. The eval interpreter calls it
// when an op's committed arguments live on such a device; the host CPU runs impl rules directly.
//
//   Arrays outs = ApplyPrimitiveOnDevice(lax::kSin, {x_on_chip}, {}, chip);
#pragma once

#include <cstdint>

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

}  // namespace jx

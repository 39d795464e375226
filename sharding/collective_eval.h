// Evaluation of a collective across the per-device values of a shard_map body (the eager
// path's communication): the values move between devices' buffers through the host, group
// by group as the collective's replica groups say.
//
//   std::vector<Array> out = EvalCollective(lax::kPsum, per_device_x, params);
#pragma once

#include <vector>

#include "jx/core/array.h"
#include "jx/core/param_map.h"
#include "jx/core/primitive.h"

namespace jx::shard_map_internal {

// inputs[d]: device d's operand (row-major device ids of the collective's mesh; empty for
// axis_index). Returns each device's result as an uncommitted host array.
std::vector<Array> EvalCollective(Primitive p, const std::vector<Array>& inputs, const ParamMap& params);

}  // namespace jx::shard_map_internal

// A shard_map equation inside a program the SPMD partitioner partitions (jit of a function
// that calls shard_map among other ops, such as the gradient of a loss taken outside the
// shard_map: its backward pass is a second shard_map fed by the forward one's residuals).
// The per-device program is itself manual over every mesh axis, so a shard_map over the same
// mesh is its body inlined: the operands resharded to in_specs, the body run on the blocks
// (its collectives bind in the per-device program), the results sharded as out_specs say.
//
//   if (IsShardMap(eqn)) outs = InlineShardMap(eqn, operands_resharded_to(ShardMapInShardings(eqn)));
#pragma once

#include <vector>

#include "absl/types/span.h"
#include "jx/core/array.h"
#include "jx/core/jaxpr.h"
#include "jx/core/sharding_rule.h"
#include "jx/sharding/mesh.h"

namespace jx::spmd {

bool IsShardMap(const Eqn& eqn);

// The shardings shard_map's in_specs (out_specs) give its operands (results), per operand
// (result) of `jaxpr`'s equation eqn. Throws ValueError when the shard_map's mesh has other
// axes than `mesh`.
std::vector<DimShardings> ShardMapInShardings(const Jaxpr& jaxpr, const Eqn& eqn, const AbstractMesh& mesh);
std::vector<DimShardings> ShardMapOutShardings(const Jaxpr& jaxpr, const Eqn& eqn, const AbstractMesh& mesh);

// The body on per-device operands already laid out by ShardMapInShardings; the per-device
// results, laid out by ShardMapOutShardings.
Arrays InlineShardMap(const Eqn& eqn, absl::Span<const Array> local_operands);

}  // namespace jx::spmd

// JAX's standard primitives in explicit sharding mode: an op the lax layer defines types its
// results through its sharding rule, and one without a rule is JAX's "sharding rule for <op> is
// not implemented" TypeError when an operand is sharded over Explicit axes, never a silently
// replicated result. Call-like primitives (jit, cond, scan, shard_map, collectives) are not
// listed: they type their results from their bodies.
//
//   jx::RequireShardingRule(lax::kPad);        // lax's registration, for every lax primitive
//   jx::RequiresShardingRule(lax::kPad);       // AbstractEval, when pad has no rule
#pragma once

#include "jx/core/primitive.h"

namespace jx {

void RequireShardingRule(Primitive p);
bool RequiresShardingRule(Primitive p);

}  // namespace jx

// Sharding propagation under jit (Shardy's factor-based propagation, on the jaxpr): from the
// shardings jit is given (in_shardings, sharded arguments, out_shardings) and the program's
// with_sharding_constraint equations, every value of the jaxpr gets a sharding. Each
// equation's sharding rule (core/sharding_rule.h) carries shardings between its operands and
// results factor by factor, forward and backward, until nothing changes. Given shardings
// never change; a choice another operand contradicts stays with the first (the partitioner
// reshards the other) and is logged. An axis never shards a dimension it does not divide.
// Control flow and inner calls (regions.h) carry shardings into and out of their bodies: an
// operand's sharding reaches the body input it feeds (a scan's xs without the scanned dim),
// a body output's reaches the result, and a loop's carry goes round until it stops changing,
// so a scan over stacked, sharded layer weights runs its body on the shards.
//
//   spmd::ShardingPlan plan = spmd::PropagateShardings(jaxpr, mesh, {P("x")-ish spec, {}}, {});
//   plan.sharding(jaxpr.outvars[0]);   // {{"x"}, {}}
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "jx/core/jaxpr.h"
#include "jx/core/sharding_rule.h"
#include "jx/sharding/mesh.h"

namespace jx::spmd {

// A value's sharding when it is fixed by the caller (nullopt: left to propagation).
using MaybeSharding = std::optional<DimShardings>;

struct ShardingPlan {
  // Per var (indexed by Var::index): its sharding (empty: replicated).
  std::vector<DimShardings> vars;
  // Per equation: the mesh axes on each factor of its rule (empty for equations without one).
  std::vector<std::vector<std::vector<std::string>>> eqn_factor_axes;
  // Per equation holding regions (scan, while, cond, an inner jit: regions.h): each region's
  // plan, its body's values sharded as the equation's operands and results (empty otherwise).
  std::vector<std::vector<ShardingPlan>> regions;
  // Why a value ended replicated or an operand needs resharding (one line per decision).
  std::vector<std::string> notes;

  const DimShardings& sharding(Var v) const { return vars[v.index]; }
};

// The primitive with_sharding_constraint binds (JAX prints it sharding_constraint).
const Primitive& ShardingConstraintPrimitive();

// The rule of eqn (its primitive's, from its avals and params), or nullopt without one.
std::optional<ShardingRule> RuleOf(const Jaxpr& jaxpr, const Eqn& eqn);

// Propagates through `jaxpr` (its constvars replicated). `in` has one entry per invar, `out`
// one per outvar (or is empty). Throws ValueError naming the argument when a given sharding
// names an axis the mesh lacks or does not divide its dimension.
ShardingPlan PropagateShardings(const Jaxpr& jaxpr, const AbstractMesh& mesh, absl::Span<const MaybeSharding> in,
                                absl::Span<const MaybeSharding> out);

// "{'x'}, None" style text of a sharding for logs: P('x', None).
std::string ShardingText(const DimShardings& s, int64_t rank);

}  // namespace jx::spmd

// How the SPMD partitioner computes one dot_general on a mesh: the candidates and the choice.
// For each sharded contracting factor it compares all-gathering the operands that hold it
// sharded (then a bigger local dot) against multiplying the shards and reducing the partial
// products (all-reduce, or reduce-scatter where the result is wanted sharded on that axis);
// with one sharded contraction, both against their collective matmuls (collective_matmul.h:
// the gather, or the reduce-scatter, replaced by a loop of partial dots and ring ppermutes,
// one way or both ways round). A dot whose contraction is not sharded but whose operand is
// gathered (a non-contracting or batch dimension) compares the gather with its collective
// matmul. Every candidate is costed by the cost model (spmd_cost.h) as the pod step times the
// program it emits: the local dot as a kernel, the operands' reshards and the collectives, and
// a loop step by step (CollectiveMatmulCost::scheduled_seconds), with XLA's condition (its
// formula) given as the reason. The cheapest
// wins (JX_COLLECTIVE_MATMUL=on takes the cheapest loop, =off none); each choice is recorded
// as a DotDecision and logged (JX_LOG_SPMD=1).
//
//   DotPlan p = PlanDot({{lhs_aval, rhs_aval}, {lhs_sharding, rhs_sharding}, out_aval, out_want},
//                       rule, factor_axes, mesh, *cost, CollectiveMatmulModeFromEnv(), &decisions, &log);
//   p.factors;   // the axes each factor of the rule computes with
//   p.gather;    // set: run AllGatherMatmul on the operands (looped ones as they are)
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "jx/core/shape.h"
#include "jx/core/sharding_rule.h"
#include "jx/sharding/mesh.h"
#include "jx/sharding/spmd/collective_matmul.h"
#include "jx/sharding/spmd/partitioner.h"
#include "jx/sharding/spmd/spmd_cost.h"

namespace jx::spmd {

// One dot_general as the partitioner meets it: global avals, the operands' shardings as they
// are, and the result's sharding as the plan wants it.
struct DotInstance {
  std::vector<ShapedArray> operands;  // lhs, rhs
  std::vector<DimShardings> operand_shardings;
  ShapedArray result;
  DimShardings result_sharding;
  lax::Precision precision = lax::Precision::kDefault;  // the higher of the operands'
};

// How to compute it: the mesh axes of each factor of its rule, and the collective matmul's loop
// if one was chosen (the gather loop replaces the looped operands' all-gathers; the scatter
// loop replaces the dot and the reduce-scatter of its partial products).
struct DotPlan {
  std::vector<std::vector<std::string>> factors;
  std::optional<GatherLoop> gather;
  std::optional<ScatterLoop> scatter;
};

// Plans `dot` with its rule and the factors' axes propagation chose. `decisions` and `log`
// (optional) receive each choice made.
DotPlan PlanDot(const DotInstance& dot, const ShardingRule& rule, std::vector<std::vector<std::string>> factors,
                const Mesh& mesh, const SpmdCostModel& cost, CollectiveMatmulMode mode,
                std::vector<DotDecision>* decisions, std::vector<std::string>* log);

}  // namespace jx::spmd

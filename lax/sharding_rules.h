// Registration of the lax families' sharding rules (core/sharding_rule.h), one function per
// family group, called from RegisterAll beside the other rules.
#pragma once

#include <cstdint>

#include "jx/core/registry.h"

namespace jx::lax::internal {

// A rule built dim by dim between one operand and one result of equal rank: a dim the op keeps
// whole is one factor both share (its sharding passes through); any other dim is a factor on
// each side, both needing replication (pad's padded dims, a sliced or sorted dim, a window).
struct PerDimRule {
  ShardingRuleBuilder b;
  TensorFactors operand, result;

  void Dim(int64_t in_size, int64_t out_size, bool whole);
};

void RegisterElementwiseSharding(Registry& r);  // elementwise_sharding.cc
void RegisterDotGeneralSharding(Registry& r);   // dot_general_sharding.cc
void RegisterReductionSharding(Registry& r);    // reduction_sharding.cc (and cumulative)
void RegisterShapeSharding(Registry& r);        // shape_sharding.cc
void RegisterSlicingSharding(Registry& r);      // slicing_sharding.cc (pad, dynamic_slice, dynamic_update_slice)
void RegisterSortSharding(Registry& r);         // sort_sharding.cc (sort, top_k)
void RegisterWindowSharding(Registry& r);       // window_sharding.cc (reduce_window_*)
void RegisterConvolutionSharding(Registry& r);  // convolution_sharding.cc
void RegisterGatherSharding(Registry& r);       // gather_sharding.cc
void RegisterLinalgSharding(Registry& r);       // linalg_sharding.cc (lax.linalg's primitives)
void RegisterScatterSharding(Registry& r);      // scatter_sharding.cc (scatter, scatter_add/mul/min/max)
// Every lax primitive needs a sharding rule in explicit mode (core/sharding_rule_required.h):
// one without is JAX's "sharding rule for <op> is not implemented" TypeError.
void RequireLaxShardingRules();                 // registration.cc

}  // namespace jx::lax::internal

// Registration of the lax families' sharding rules (core/sharding_rule.h), one function per
// family group, called from RegisterAll beside the other rules.
#pragma once

#include "jx/core/registry.h"

namespace jx::lax::internal {

void RegisterElementwiseSharding(Registry& r);  // elementwise_sharding.cc
void RegisterDotGeneralSharding(Registry& r);   // dot_general_sharding.cc
void RegisterReductionSharding(Registry& r);    // reduction_sharding.cc (and cumulative)
void RegisterShapeSharding(Registry& r);        // shape_sharding.cc

}  // namespace jx::lax::internal

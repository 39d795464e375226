// Internal: the jvp, transpose and batching rules of the unary elementwise family
// (lax/unary_rules.cc), registered from RegisterUnaryOps.
#pragma once

#include "jx/core/registry.h"

namespace jx::lax::internal {

void RegisterUnaryRules(Registry& r);

}  // namespace jx::lax::internal

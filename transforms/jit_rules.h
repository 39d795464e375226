// jit's transformation rules (JAX's pjit rules): jvp, partial evaluation, transpose and
// batching of a `jit` equation, each one jit equation over a transformed jaxpr.
//
// The transformed jaxprs are cached per (inner jaxpr, transformation parameters, input
// avals), as JAX caches jvp_jaxpr / partial_eval_jaxpr_nounits / batch_jaxpr: the second
// call of grad(jit(f)) or vmap(jit(f)) traces and transforms nothing, and its jit equations
// carry the same jaxpr objects as the first call's, whose executables are found by identity
// (jit.cc), so nothing is lowered or compiled again either.
#pragma once

#include <string>
#include <vector>

#include "jx/core/jaxpr.h"
#include "jx/core/registry.h"
#include "jx/transforms/jaxpr_cache.h"

namespace jx::jit_internal {

// The parameters of a jit equation over jaxpr (consts empty).
ParamMap JitParams(const ClosedJaxpr& jaxpr, const std::string& name, const std::vector<bool>& donated);

// Installs the jvp, partial_eval, transpose and batch rules of the jit primitive.
void SetJitTransformRules(PrimitiveRules& rules);

// Counters of the transformed-jaxpr caches (misses are traces), for tests and diagnostics.
struct JitTransformCacheStats {
  JaxprCacheStats jvp, partial_eval, transpose, batch;
};
JitTransformCacheStats GetJitTransformCacheStats();
// The executables of jit equations run eagerly, per jaxpr object (defined in jit.cc).
JaxprCacheStats GetJitExecutableCacheStats();

}  // namespace jx::jit_internal

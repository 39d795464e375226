// jx::clear_caches(): JAX's jax.clear_caches(). Drops every cached trace, derived jaxpr and
// compiled program (jit objects' traces, the transformation rules' caches, the eager
// op programs, the CPU and TPU program caches), so the next call of any jit traces and
// compiles again. Arrays and executables the caller still holds stay valid; programs only
// the caches held are freed.
//
//   jx::clear_caches();   // jax.clear_caches()
#pragma once

#include <cstdint>
#include <functional>

namespace jx {

void clear_caches();

namespace caches_internal {

// A process-lifetime cache registers how to empty itself when it is built (caches are built
// on first use, so one never used has nothing to drop). `clear` must be thread-safe.
void RegisterCache(std::function<void()> clear);

// Bumped by every clear_caches(): a cache with many owners (each jit object's traces)
// compares it with the epoch its entries were made in instead of registering each owner.
uint64_t CacheEpoch();

}  // namespace caches_internal
}  // namespace jx

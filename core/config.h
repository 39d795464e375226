// jx::config: the runtime switches JAX users set with jax.config.update, by JAX's names.
// Each also reads its environment variable, which is the default until update() sets it
// (JX_DEBUG_NANS is read once, at the first check: it guards every eager op):
//   "jax_debug_nans"            JX_DEBUG_NANS=1            NaN outputs raise FloatingPointError
//                                                          (eager ops and jit programs)
//   "jax_log_compiles"          JX_LOG_COMPILES=1          log every compile to stderr
//   "jax_explain_cache_misses"  JX_EXPLAIN_CACHE_MISSES=1  say why jit retraced
// The "jax_" prefix is optional ("debug_nans" works too). jx has no x64 switch (64-bit types
// are always on), so "jax_enable_x64" is unknown here, like any other name: a ValueError that
// lists the known ones.
//
//   jx::config::update("jax_debug_nans", true);   // jax.config.update("jax_debug_nans", True)
//   bool on = jx::config::read("debug_nans");
#pragma once

#include <string_view>

namespace jx::config {

void update(std::string_view name, bool value);
bool read(std::string_view name);

// Fast reads for the runtime (env var unless update() set the flag).
bool debug_nans();
bool log_compiles();
bool explain_cache_misses();

namespace internal {
// While alive on a thread, eager ops there skip the debug_nans check (jit's NaN rerun, which
// reports the first bad equation itself, with its path).
class SuspendEagerNanChecks {
 public:
  SuspendEagerNanChecks();
  ~SuspendEagerNanChecks();
  SuspendEagerNanChecks(const SuspendEagerNanChecks&) = delete;
  SuspendEagerNanChecks& operator=(const SuspendEagerNanChecks&) = delete;

 private:
  bool was_;
};
// debug_nans() and not suspended on this thread.
bool eager_nan_checks();
}  // namespace internal

}  // namespace jx::config

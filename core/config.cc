#include "jx/core/config.h"

#include <atomic>
#include <cstdlib>
#include <string>

#include "jx/core/errors.h"
#include "jx/core/str_util.h"

namespace jx::config {
namespace {

struct Flag {
  std::string_view name;  // JAX's name without the "jax_" prefix
  const char* env;
  std::atomic<int> set{-1};  // -1: follow the environment variable
};

Flag flags[] = {
    {"debug_nans", "JX_DEBUG_NANS"},
    {"log_compiles", "JX_LOG_COMPILES"},
    {"explain_cache_misses", "JX_EXPLAIN_CACHE_MISSES"},
    // Invariant checks that cost time on large programs (a pod dry run verifies its HLO after
    // every pass of the TPU pipeline instead of its input and output only).
    {"enable_checks", "JX_ENABLE_CHECKS"},
};
enum FlagIndex { kDebugNans = 0, kLogCompiles = 1, kExplainCacheMisses = 2 };

bool EnvValue(const char* env) {
  const char* v = std::getenv(env);
  return v != nullptr && v[0] != '\0' && std::string_view(v) != "0";
}

bool Value(const Flag& f) {
  const int set = f.set.load(std::memory_order_relaxed);
  if (set >= 0) return set != 0;
  return EnvValue(f.env);
}

Flag& Find(std::string_view name, std::string_view op) {
  std::string_view bare = name;
  if (bare.substr(0, 4) == "jax_") bare.remove_prefix(4);
  for (Flag& f : flags) {
    if (f.name == bare) return f;
  }
  std::string known;
  for (const Flag& f : flags) StrAppend(&known, known.empty() ? "" : ", ", "'jax_", f.name, "'");
  throw ValueError(StrCat("[config.", op, "] unrecognized config option '", name, "'; jx knows ", known,
                          " (the 'jax_' prefix is optional)"));
}

thread_local bool nan_checks_suspended = false;

}  // namespace

void update(std::string_view name, bool value) {
  Find(name, "update").set.store(value ? 1 : 0, std::memory_order_relaxed);
}
bool read(std::string_view name) {
  const Flag& f = Find(name, "read");
  return &f == &flags[kDebugNans] ? debug_nans() : Value(f);
}

// Checked after every eager op, so its variable is read once (as JAX reads its environment
// at import); update() changes it at any time.
bool debug_nans() {
  const int set = flags[kDebugNans].set.load(std::memory_order_relaxed);
  if (set >= 0) return set != 0;
  static const bool from_env = EnvValue(flags[kDebugNans].env);
  return from_env;
}
bool log_compiles() { return Value(flags[kLogCompiles]); }
bool explain_cache_misses() { return Value(flags[kExplainCacheMisses]); }

namespace internal {
SuspendEagerNanChecks::SuspendEagerNanChecks() : was_(nan_checks_suspended) { nan_checks_suspended = true; }
SuspendEagerNanChecks::~SuspendEagerNanChecks() { nan_checks_suspended = was_; }
bool eager_nan_checks() { return !nan_checks_suspended && debug_nans(); }
}  // namespace internal

}  // namespace jx::config

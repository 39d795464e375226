// TraceContext: the thread-local settings that change what tracing records, so that caches
// of traced and transformed programs (jit's, and the derivations of jit_rules) key on them,
// as JAX's trace_context() does for jax.default_matmul_precision. Each setting's meaning
// belongs to the layer that defines it (lax for the matmul precision); core only stores it.
//
//   TraceContext next = CurrentTraceContext();
//   next.default_matmul_precision = 2;        // what lax::Precision::kHighest encodes to
//   TraceContextScope scope(next);            // restored when scope ends
#pragma once

#include <cstdint>

namespace jx {

struct TraceContext {
  // The precision dots and convolutions without an explicit one get: a lax::Precision value,
  // or -1 for none (the backend's default).
  int8_t default_matmul_precision = -1;
  friend bool operator==(const TraceContext&, const TraceContext&) = default;
};

namespace trace_context_internal {
inline thread_local TraceContext current;
}  // namespace trace_context_internal

inline const TraceContext& CurrentTraceContext() { return trace_context_internal::current; }

// Makes `next` the current thread's context until destroyed (scopes nest).
class TraceContextScope {
 public:
  explicit TraceContextScope(const TraceContext& next) : saved_(trace_context_internal::current) {
    trace_context_internal::current = next;
  }
  ~TraceContextScope() { trace_context_internal::current = saved_; }
  TraceContextScope(const TraceContextScope&) = delete;
  TraceContextScope& operator=(const TraceContextScope&) = delete;

 private:
  TraceContext saved_;
};

}  // namespace jx

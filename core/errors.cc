#include "jx/core/errors.h"

#include <atomic>

namespace jx {
namespace {
std::atomic<ErrorContextFn> g_context_provider{nullptr};
}  // namespace

std::string OpErrorMessage(std::string_view op, std::string_view message) {
  std::string out = StrCat("[", op, "] ", message);
  if (ErrorContextFn fn = g_context_provider.load(std::memory_order_acquire)) {
    std::string context = fn();
    if (!context.empty()) StrAppend(&out, " (", context, ")");
  }
  return out;
}

ErrorContextFn SetErrorContextProvider(ErrorContextFn fn) {
  return g_context_provider.exchange(fn, std::memory_order_acq_rel);
}

}  // namespace jx

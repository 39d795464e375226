#include "jx/lax/registration.h"

#include <mutex>

namespace jx::lax {

void RegisterAll() {
  static std::once_flag once;
  std::call_once(once, [] {
    Registry& r = GlobalRegistry();
    internal::RegisterUnaryOps(r);
    internal::RegisterBinaryOps(r);
  });
}

}  // namespace jx::lax

#include "jx/nn/sequential.h"

#include "jx/core/errors.h"
#include "jx/lax/random/random.h"

namespace jx::nn {

std::ostream& operator<<(std::ostream& os, const StaticFunction& f) {
  if (!f.name.empty()) return os << "<function " << f.name << ">";
  return os << "<function at " << reinterpret_cast<const void*>(f.fn) << ">";
}

Array Lambda::operator()(const Array& x) const {
  JX_CHECK_OP(fn.value.fn != nullptr, ValueError, "Lambda", "called without a function (default-constructed)");
  return fn.value.fn(x);
}

namespace internal {
std::vector<Array> SplitKeys(const Array& key, size_t n) {
  std::vector<Array> out;
  if (n == 0) return out;
  const Array keys = jx::random::split(key, static_cast<int64_t>(n));
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) out.push_back(keys[static_cast<int64_t>(i)]);
  return out;
}
}  // namespace internal

}  // namespace jx::nn

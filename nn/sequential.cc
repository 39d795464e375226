#include "jx/nn/sequential.h"

#include "jx/lax/random/random.h"

namespace jx::nn {

Array Lambda::operator()(const Array& x) const { return fn.value(x); }

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

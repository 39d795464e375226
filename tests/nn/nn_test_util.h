// Helpers shared by the jx::nn tests.
#pragma once

#include <string>

#include "jx/jx.h"

namespace jx::nn::testing {

// max |a - b| over all elements, compared in float64 (read on the host).
inline double MaxAbsDiff(const Array& a, const Array& b) {
  namespace jnp = jx::numpy;
  return jnp::max(jnp::abs(jnp::subtract(a.astype(float64), b.astype(float64)))).item<double>();
}

// The message of the E that f throws, or "(no error)".
template <typename E, typename F>
std::string ErrorOf(F f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace jx::nn::testing

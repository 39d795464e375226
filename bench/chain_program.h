// The straight-line program the per-equation benchmarks scale (tracing and transformations in
// transform_bench, compilation in compile_bench): n equations, alternating sin and mul.
#pragma once

#include <cstdint>

#include <jx/jx.h>

namespace chain {

inline jx::Array Chain(const jx::Array& x, int64_t n) {
  jx::Array y = x;
  for (int64_t i = 0; i < n; i += 2) {
    y = jx::lax::sin(y);
    y = jx::lax::mul(y, x);
  }
  return y;
}

}  // namespace chain

// The microbatched training step the unreduced-accumulation tests share (tests/devices/tpu
// through shard_map, tests/sharding through jit with shardings): a two-layer linear net on 8
// v5e chips, each microbatch's rows split over the data axis, with values in {-1, 0, 1} so
// every product and sum is exact in bf16 and f32 and the gradients compare exactly.
#pragma once

#include <cstdint>
#include <vector>

#include "jx/jx.h"

namespace jx::testing {

inline constexpr int64_t kLayers = 2, kMicrobatches = 4, kRowsPerChip = 2, kDim = 4, kChips = 8;

// One microbatch's loss: 0.5 |x w1 w2|^2 (the net regressing to zero).
inline Array Loss(const std::vector<Array>& ws, const Array& x) {
  Array h = x;
  for (const Array& w : ws) h = numpy::matmul(h, w);
  return numpy::sum(h * h) * 0.5f;
}

// Values in {-1, 0, 1}, a fixed pattern per seed.
inline Array SmallInts(std::vector<int64_t> shape, int seed) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<float>((i * 7 + seed * 3) % 3 - 1);
  return numpy::array(v, Shape(shape.begin(), shape.end()));
}

}  // namespace jx::testing

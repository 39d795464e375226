// Helpers shared by jx::random's source files (not part of the API).
#pragma once

#include <cstdint>
#include <string_view>

#include "jx/core/array.h"

namespace jx::random::internal {

// TypeError unless key is one raw u32[2] key.
void CheckKey(std::string_view op, const Array& key);
// ValueError unless dtype is a float dtype ("dtype argument to `op` must be a float dtype").
void CheckFloat(std::string_view op, DType dtype);
// JAX's _check_shape: a parameter's shape must broadcast to exactly `shape`.
void CheckShape(std::string_view op, const Shape& shape, const Shape& param);
// keys[i] of a u32[n, 2] array of keys, as a u32[2] key.
Array KeyAt(const Array& keys, int64_t i);

// The float format facts the samplers need (jnp.finfo's, as doubles).
struct FloatInfo {
  int nbits, nmant;
  uint64_t one_bits;  // bit pattern of 1.0
  double tiny;        // smallest normal
  double neg_one_up;  // nextafter(-1, 0) = -1 + epsneg
  double eps;         // 2**-nmant
};
FloatInfo Finfo(DType d);

}  // namespace jx::random::internal

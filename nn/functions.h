// jax.nn's functions (jax.nn.relu, gelu, softmax, ...), with JAX's names, numerics and
// derivatives: numerically stable for large inputs, finite derivatives where JAX's are.
//
//   jx::Array h = jx::nn::relu(x);
#pragma once

#include "jx/core/array.h"

namespace jx::nn {

// max(x, 0); its derivative at 0 is 0, as JAX's.
Array relu(const Array& x);

}  // namespace jx::nn

// Sorting: multi-operand lexicographic sort (stable by default) and top_k.
//
//   auto sorted = lax::sort({keys, values}, /*dimension=*/-1, /*is_stable=*/true, /*num_keys=*/1);
//   auto [vals, idx] = lax::top_k(x, 5);
#pragma once

#include <utility>
#include <vector>

#include "jx/core/array.h"

namespace jx::lax {

// NaNs sort to the end; -0.0 sorts before +0.0 (JAX's total order).
std::vector<Array> sort(const std::vector<Array>& operands, int64_t dimension = -1, bool is_stable = true,
                        int64_t num_keys = 1);
Array sort(const Array& x, int64_t dimension = -1, bool is_stable = true);
// The k largest entries along the last axis, in descending order, and their int32 indices.
std::pair<Array, Array> top_k(const Array& x, int64_t k);

}  // namespace jx::lax

// Shape primitives: broadcasting, reshaping, transposition and friends.
//
//   lax::broadcast_in_dim(x, {4, 3}, {1});   // x: f32[3]
//   lax::transpose(x, {1, 0}); lax::iota(jx::int32, 5);
#pragma once

#include <vector>

#include "jx/core/array.h"

namespace jx::lax {

Array broadcast_in_dim(const Array& x, const Shape& shape, const std::vector<int64_t>& broadcast_dimensions);
// Prepends dimensions: broadcast(x, {2}) of f32[3] is f32[2,3].
Array broadcast(const Array& x, const Shape& sizes);
Array reshape(const Array& x, const Shape& new_sizes);
Array transpose(const Array& x, const std::vector<int64_t>& permutation);
Array squeeze(const Array& x, const std::vector<int64_t>& dimensions);
Array expand_dims(const Array& x, const std::vector<int64_t>& dimensions);
Array rev(const Array& x, const std::vector<int64_t>& dimensions);
Array iota(DType dtype, int64_t size);
Array broadcasted_iota(DType dtype, const Shape& shape, int64_t dimension);
Array copy(const Array& x);

}  // namespace jx::lax

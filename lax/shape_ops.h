// Shape primitives: broadcasting, reshaping, transposition and friends. Like JAX's lax, the
// identity cases (transpose by the identity permutation, reshape to the same shape, squeeze of
// no axes) return the operand itself; squeeze and expand_dims accept negative axes.
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
// Transposes x by `dimensions` first (JAX's reshape(..., dimensions=...)).
Array reshape(const Array& x, const Shape& new_sizes, const std::vector<int64_t>& dimensions);
Array transpose(const Array& x, const std::vector<int64_t>& permutation);
Array squeeze(const Array& x, const std::vector<int64_t>& dimensions);
Array expand_dims(const Array& x, const std::vector<int64_t>& dimensions);
Array rev(const Array& x, const std::vector<int64_t>& dimensions);
Array iota(DType dtype, int64_t size);
Array broadcasted_iota(DType dtype, const Shape& shape, int64_t dimension);
Array copy(const Array& x);

}  // namespace jx::lax

// dot_general: contraction over any batch and contracting dimensions (GEMM through Eigen,
// multi-threaded on the jx pool). Output dims: batch, lhs free, rhs free.
//
//   lax::dot_general(a, b, {{1}, {0}, {}, {}});   // matmul of f32[m,k] and f32[k,n]
#pragma once

#include <optional>
#include <vector>

#include "jx/core/array.h"

namespace jx::lax {

struct DotDimensionNumbers {
  std::vector<int64_t> lhs_contracting_dims;
  std::vector<int64_t> rhs_contracting_dims;
  std::vector<int64_t> lhs_batch_dims;
  std::vector<int64_t> rhs_batch_dims;
};

Array dot_general(const Array& lhs, const Array& rhs, const DotDimensionNumbers& dimension_numbers,
                  std::optional<DType> preferred_element_type = std::nullopt);
// Vector/matrix dot of rank-1/2 operands, as lax.dot.
Array dot(const Array& lhs, const Array& rhs, std::optional<DType> preferred_element_type = std::nullopt);

}  // namespace jx::lax

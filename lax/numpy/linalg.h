// jnp products: dot, matmul (batched, broadcasting), einsum, tensordot, inner, outer, vdot.
// Operands are promoted to their JAX result type; contractions run on lax::dot_general.
//
//   jnp::matmul(a, b);                               // (..., n, k) @ (..., k, m), batch dims broadcast
//   jnp::dot(a, b);                                  // NumPy's dot
//   jnp::einsum("bij,bjk->bik", a, b);               // any one-, two- or n-operand expression
//   jnp::einsum("ii->i", m);                         // diagonal; "ij->" sums everything
//   jnp::einsum("...ij,...jk", a, b);                // ellipsis and implicit output
//   jnp::tensordot(a, b, 2);                         // last 2 axes of a with first 2 of b
//   jnp::tensordot(a, b, {{1, 0}, {0, 1}});
#pragma once

#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "jx/core/array.h"

namespace jx::numpy {

Array dot(const Array& a, const Array& b);
Array matmul(const Array& a, const Array& b);
Array vdot(const Array& a, const Array& b);
Array inner(const Array& a, const Array& b);
Array outer(const Array& a, const Array& b);
Array tensordot(const Array& a, const Array& b, int64_t axes = 2);
Array tensordot(const Array& a, const Array& b, const std::pair<std::vector<int64_t>, std::vector<int64_t>>& axes);
Array kron(const Array& a, const Array& b);

// NumPy's einsum subscripts: letters, optional "...", optional "->output" (implicit output:
// the labels used once, sorted). Repeated labels in one operand take a diagonal; labels that
// are absent from the output are summed. Several operands contract left to right.
Array einsum(std::string_view subscripts, const std::vector<Array>& operands);
template <typename... Arrays>
  requires(sizeof...(Arrays) > 0 && (std::is_convertible_v<const Arrays&, const Array&> && ...))
Array einsum(std::string_view subscripts, const Arrays&... operands) {
  return einsum(subscripts, std::vector<Array>{operands...});
}

}  // namespace jx::numpy

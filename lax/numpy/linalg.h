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
//   jnp::matmul(a, b, lax::Precision::kHighest, jx::float32);  // JAX's precision= and
//   jnp::einsum("ij,jk->ik", {a, b}, "highest");              // preferred_element_type=
//   jnp::matmul(a, b, jx::P("x", jx::none));                  // JAX's out_sharding=
//   jnp::einsum("ij,jk->ik", {a, b}, jx::P(jx::none, "y"));
//
// precision and preferred_element_type go to every dot_general the product emits (see
// lax/dot_general.h): precision changes no numbers on the CPU; preferred_element_type is the
// result dtype (bf16 operands -> f32, int8 -> int32). out_sharding (explicit sharding mode)
// types the result, in the result's dim order: it goes to the dot_general that makes the
// result (einsum's last contraction), so a contraction over sharded dims is reduced into it.
#pragma once

#include <optional>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "jx/core/array.h"
#include "jx/core/out_sharding.h"
#include "jx/lax/precision.h"

namespace jx::numpy {

Array dot(const Array& a, const Array& b, lax::PrecisionLike precision = {},
          std::optional<DType> preferred_element_type = std::nullopt);
Array matmul(const Array& a, const Array& b, lax::PrecisionLike precision = {},
             std::optional<DType> preferred_element_type = std::nullopt, const OutSharding& out_sharding = {});
Array matmul(const Array& a, const Array& b, const OutSharding& out_sharding);
Array vdot(const Array& a, const Array& b, lax::PrecisionLike precision = {},
           std::optional<DType> preferred_element_type = std::nullopt);
Array inner(const Array& a, const Array& b, lax::PrecisionLike precision = {},
            std::optional<DType> preferred_element_type = std::nullopt);
Array outer(const Array& a, const Array& b);
Array tensordot(const Array& a, const Array& b, int64_t axes = 2, lax::PrecisionLike precision = {},
                std::optional<DType> preferred_element_type = std::nullopt);
Array tensordot(const Array& a, const Array& b, const std::pair<std::vector<int64_t>, std::vector<int64_t>>& axes,
                lax::PrecisionLike precision = {}, std::optional<DType> preferred_element_type = std::nullopt);
Array kron(const Array& a, const Array& b);

// NumPy's einsum subscripts: letters, optional "...", optional "->output" (implicit output:
// the labels used once, sorted). Repeated labels in one operand take a diagonal; labels that
// are absent from the output are summed. Several operands contract left to right.
// out_sharding needs a contraction (two operands or more): ValueError otherwise.
Array einsum(std::string_view subscripts, const std::vector<Array>& operands, lax::PrecisionLike precision = {},
             std::optional<DType> preferred_element_type = std::nullopt, const OutSharding& out_sharding = {});
Array einsum(std::string_view subscripts, const std::vector<Array>& operands, const OutSharding& out_sharding);
template <typename... Arrays>
  requires(sizeof...(Arrays) > 0 && (std::is_convertible_v<const Arrays&, const Array&> && ...))
Array einsum(std::string_view subscripts, const Arrays&... operands) {
  return einsum(subscripts, std::vector<Array>{operands...});
}

}  // namespace jx::numpy

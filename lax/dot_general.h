// dot_general: contraction over any batch and contracting dimensions (GEMM through Eigen,
// multi-threaded on the jx pool). Output dims: batch, lhs free, rhs free.
//
//   lax::dot_general(a, b, {{1}, {0}, {}, {}});   // matmul of f32[m,k] and f32[k,n]
//   lax::dot_general(a, b, {{2}, {1}, {0}, {0}}); // batched matmul f32[b,m,k] x f32[b,k,n]
//   lax::dot(a, b);                                // rank-1/2 operands, as lax.dot
//
// Dtypes follow JAX: operands of different dtypes compute in the more precise of the two
// (XLA's HigherPrecisionType); integers accumulate with wrap-around in at least 32 bits, bool
// as OR of ANDs, float16/bfloat16 in float32. preferred_element_type widens the result
// (integer -> integer of the same signedness or -> floating, floating -> floating, never
// narrower): bf16 x bf16 -> f32 and int8 x int8 -> int32 are the common ones.
// precision (lax/precision.h) is stored for targets with rounding matrix units (a TPU's MXU);
// it changes no numbers on the CPU. The printed params read as JAX's:
//   dimension_numbers=(([1], [0]), ([], [])) precision=None preferred_element_type=None
//   ... precision=(Precision.HIGHEST, Precision.HIGHEST) preferred_element_type=float32
//
//   lax::dot_general(a, b, {{1}, {0}, {}, {}}, lax::Precision::kHighest, jx::float32);
//
// out_sharding (JAX's out_sharding=, core/out_sharding.h) types the result in explicit sharding
// mode: with it a contraction over sharded dims is not ambiguous (without it, a TypeError): the
// partial sums are all-reduced, or reduce-scattered into the dims it shards. Printed as
// out_sharding=P(None, 'y'); vmap keeps it (the batch dim whole).
//
//   lax::dot_general(a, b, {{1}, {0}, {}, {}}, jx::P("x", jx::none));   // f32[8@x,4@y] x f32[4@y,16]
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "jx/core/array.h"
#include "jx/core/out_sharding.h"
#include "jx/core/param_map.h"
#include "jx/core/registry.h"
#include "jx/lax/precision.h"

namespace jx::lax {

struct DotDimensionNumbers {
  std::vector<int64_t> lhs_contracting_dims;
  std::vector<int64_t> rhs_contracting_dims;
  std::vector<int64_t> lhs_batch_dims;
  std::vector<int64_t> rhs_batch_dims;
  friend bool operator==(const DotDimensionNumbers&, const DotDimensionNumbers&) = default;
};

Array dot_general(const Array& lhs, const Array& rhs, const DotDimensionNumbers& dimension_numbers,
                  PrecisionLike precision = {}, std::optional<DType> preferred_element_type = std::nullopt,
                  const OutSharding& out_sharding = {});
// JAX's dot_general(..., out_sharding=s) with no precision or preferred_element_type given.
Array dot_general(const Array& lhs, const Array& rhs, const DotDimensionNumbers& dimension_numbers,
                  const OutSharding& out_sharding);
// JAX's dot_general(..., preferred_element_type=t) with no precision given.
Array dot_general(const Array& lhs, const Array& rhs, const DotDimensionNumbers& dimension_numbers,
                  std::optional<DType> preferred_element_type);
// Vector/matrix dot of rank-1/2 operands, as lax.dot.
Array dot(const Array& lhs, const Array& rhs, PrecisionLike precision = {},
          std::optional<DType> preferred_element_type = std::nullopt);
Array dot(const Array& lhs, const Array& rhs, std::optional<DType> preferred_element_type);

namespace internal {
// The params dot_general binds with (precision already canonical), and the dimension numbers
// stored in them (for rules in other layers: transforms, lowering).
ParamMap DotGeneralParams(const DotDimensionNumbers& dimension_numbers, const std::optional<PrecisionPair>& precision,
                          std::optional<DType> preferred_element_type);
const DotDimensionNumbers& GetDotDimensionNumbers(const ParamMap& params);

// Shared with conv_general_dilated: JAX's _validate_preferred_element_type for an op whose
// operands compute in `input` (throws TypeError naming op, lhs and rhs); returns the result
// dtype. And the optional dtype param `name` (None or absent: nullopt).
DType ValidatePreferredElementType(std::string_view op, DType input, std::optional<DType> preferred,
                                   const ShapedArray& lhs, const ShapedArray& rhs);
std::optional<DType> OptionalDTypeParam(const ParamMap& params, std::string_view name);

// Sets dot_general's jvp, transpose and batch rules (lax/dot_general_rules.cc).
void DefineDotGeneralRules(PrimitiveRules& rules);
}  // namespace internal

}  // namespace jx::lax

// Shared pieces of the jvp, transpose and batching rules of the primitive families.
//
//   rules.jvp = [](auto primals, auto tangents, const ParamMap& params) {
//     Array t = Instantiate(tangents[0], primals[0]);
//     return JvpResult{{sin(primals[0])}, {mul(t, cos(primals[0]))}};
//   };
//   rules.batch = BatchElementwise(kSin);
#pragma once

#include <vector>

#include "jx/core/registry.h"
#include "jx/transforms/ad_util.h"

namespace jx::lax::internal {

// The tangent, or zeros shaped and typed like primal when it is a symbolic zero.
Array Instantiate(const Array& tangent, const Array& primal);
// Sum of tangents where either may be a symbolic zero (undefined).
Array AddTangents(const Array& a, const Array& b);

// A tangent of a 0-d operand of an elementwise op broadcast to the output's shape (other
// tangents, and undefined ones, are returned as they are).
Array BroadcastScalarTo(const Array& t, const Shape& shape);
// The cotangent of an elementwise op's operand of aval `aval`: summed to shape () when the
// operand was a 0-d one broadcast against shaped operands (undefined stays undefined).
Array UnbroadcastScalar(const Array& ct, const ShapedArray& aval);

// Batching for elementwise primitives (any arity): moves every batch dimension to the front
// and binds p once. An unbatched operand is broadcast along the batch, except a 0-d one
// whose bit is set in scalar_ok (an operand the primitive accepts as 0-d beside shaped ones:
// every operand of add, only `which` of select_n), which stays 0-d. A batched operand that
// is 0-d per example, beside shaped ones, is broadcast from [n] to the batched shape.
BatchRule BatchElementwise(Primitive p, uint64_t scalar_ok = ~uint64_t{0});

// x with exactly the dtype and weak type of aval: a cotangent or tangent produced in a wider
// type (mixed precision, preferred_element_type) converted back.
Array MatchAval(const Array& x, const ShapedArray& aval);

// The permutation p with p[perm[i]] = i (a transpose's inverse).
std::vector<int64_t> InversePermutation(const std::vector<int64_t>& perm);

// x with its batch dimension moved to 0, or broadcast to have one of size n if unbatched.
Array MoveBatchToFront(const Array& x, int64_t dim, int64_t n);

}  // namespace jx::lax::internal

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

// Batching for elementwise primitives (any arity; 0-d operands broadcast like the others):
// moves every batch dimension to the front and materializes it for unbatched operands,
// then binds p once.
BatchRule BatchElementwise(Primitive p);

// x with its batch dimension moved to 0, or broadcast to have one of size n if unbatched.
Array MoveBatchToFront(const Array& x, int64_t dim, int64_t n);

}  // namespace jx::lax::internal

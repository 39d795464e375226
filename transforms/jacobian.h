// Jacobians by batching the basic transformations over a standard basis, as JAX does:
// jacfwd pushes one basis tangent per input element through jvp under vmap; jacrev pulls
// one basis cotangent per output element back through the vjp under vmap.
//
//   std::vector<std::vector<Array>> J = jx::JacfwdFlat(fn, {x, w});
//   // J[k][i] has shape outs[k].shape ++ inputs[i].shape
#pragma once

#include <vector>

#include "jx/transforms/ad.h"

namespace jx {

using JacobianBlocks = std::vector<std::vector<Array>>;  // [output leaf][input leaf]

// Forward mode: cost grows with the number of input elements.
JacobianBlocks JacfwdFlat(const ArraysFn& fn, absl::Span<const Array> inputs);
// Reverse mode: cost grows with the number of output elements.
JacobianBlocks JacrevFlat(const ArraysFn& fn, absl::Span<const Array> inputs);

// x reshaped (a reshape primitive bound on the current interpreter).
Array ReshapeTo(const Array& x, Shape shape);

}  // namespace jx

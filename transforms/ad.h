// Reverse mode as JAX does it: linearize (jvp with the tangents staged by a partial-
// evaluation interpreter: known primal work runs now, the linear tangent program becomes a
// jaxpr), then transpose that linear jaxpr with each primitive's transpose rule.
//
//   auto [outs, pullback] = jx::VjpCall(f, {x, w});
//   Arrays cts = pullback({ct});   // one cotangent per input of f
#pragma once

#include <functional>
#include <vector>

#include "jx/core/jaxpr.h"

namespace jx {

using ArraysFn = std::function<Arrays(absl::Span<const Array>)>;

struct Linearized {
  Arrays primals_out;
  // Maps the tangents of the differentiable inputs (in order) to the nonzero output tangents.
  ClosedJaxpr linear;
  std::vector<bool> input_has_tangent;   // per input of f
  std::vector<bool> output_is_zero;      // per output of f: tangent is a symbolic zero
  std::vector<ShapedArray> in_avals;     // per input of f
};

Linearized Linearize(const ArraysFn& fn, absl::Span<const Array> primals);

// Transposes a jaxpr that is linear in its invars: cotangents of its outputs (undefined:
// zero) -> cotangents of its invars (undefined where no cotangent flows). Equations that do
// not depend on the invars are evaluated forward first.
Arrays BackwardPass(const Jaxpr& jaxpr, absl::Span<const Array> consts, absl::Span<const Array> cts_out);

using Pullback = std::function<Arrays(absl::Span<const Array> cts_out)>;

// Outputs of fn and the pullback: cotangents of the outputs -> cotangents of every input
// (zeros for inputs without tangent space or without a path to an output).
std::pair<Arrays, Pullback> VjpCall(const ArraysFn& fn, absl::Span<const Array> primals);

}  // namespace jx

// Partial evaluation under a checkpoint policy (JAX's pe.partial_eval_jaxpr_custom with a
// `saveable` policy): the known part computes what depends only on known inputs, and of the
// known values the unknown part reads, only those a saveable equation produced (or known
// inputs) are residuals; the other known equations they need are recomputed in the unknown
// part. Equations with a sub-jaxpr and a partial_eval rule (scan, cond, ...) whose inputs are
// partly known are first split by that rule, so the policy reaches their bodies: the rule's
// own partial evaluation of the body runs under the same policy (the policy is in effect for
// PartialEvalJaxpr while a ScopedRematPolicy lives), and the residuals it stacks are saved.
#pragma once

#include <functional>

#include "absl/types/span.h"
#include "jx/core/jaxpr.h"
#include "jx/core/param_map.h"
#include "jx/core/primitive.h"
#include "jx/transforms/jaxpr_util.h"

namespace jx {

// JAX's policy(prim, *avals, **params) -> bool: whether an equation's outputs may be saved.
using SaveablePolicy = std::function<bool(Primitive, absl::Span<const ShapedArray> in_avals, const ParamMap& params)>;

// While alive, PartialEvalJaxpr on this thread applies `policy` (nested scopes: the innermost).
class ScopedRematPolicy {
 public:
  explicit ScopedRematPolicy(const SaveablePolicy* policy);
  ~ScopedRematPolicy();
  ScopedRematPolicy(const ScopedRematPolicy&) = delete;
  ScopedRematPolicy& operator=(const ScopedRematPolicy&) = delete;

 private:
  const SaveablePolicy* previous_;
};
const SaveablePolicy* CurrentRematPolicy();

// PartialEvalJaxpr's contract (known(consts..., known inputs...) -> (known outputs...,
// residuals...); unknown(residuals..., unknown inputs...) -> unknown outputs) with residuals
// chosen by `saveable`.
PartialEvalResult PartialEvalJaxprCustom(const ClosedJaxpr& j, const std::vector<bool>& in_unknown,
                                         const std::vector<bool>& force_out_unknown, const SaveablePolicy& saveable);

}  // namespace jx

// LowerJaxpr: a closed jaxpr -> an HLO module, the first step of jit. Each equation is
// lowered by its primitive's lower rule (PrimitiveRules::lower, registered beside the
// primitive's other rules in lax/); a primitive without one fails with a status naming it.
//
// Calling convention of the module's entry computation "main":
//   - parameters are the jaxpr's invars, in order ("Arg_0", ...); by default the
//     ClosedJaxpr's consts are folded in as HLO constants (they are concrete at lowering
//     time); with consts_as_parameters they become the leading parameters instead, in
//     constvar order, and the caller passes ClosedJaxpr::consts first;
//   - the root is the single output itself when the jaxpr has exactly one output, else a
//     tuple of the outputs (tuple_result forces the tuple).
// Weak types lower as their dtype. Equations are walked iteratively; sub-jaxprs (cond
// branches, loop bodies) become computations of the same module. A primitive's rule for
// options.platform (PrimitiveRules::platform_lower) wins over its generic one: the CPU and
// a TPU lower f32 sums differently (lax/reduction_lowering.cc).
//
//   lax::RegisterAll();
//   ClosedJaxpr j = TraceToJaxpr(f, {ShapedArray{{3}, float32}}, "f");
//   absl::StatusOr<std::unique_ptr<hlo::HloModule>> m = LowerJaxpr(j, "jit_f");
//   // HloModule jit_f ... ENTRY %main (Arg_0: f32[3]) -> f32[3] { ... sine(...),
//   //   metadata={op_type="sin" op_name="jit(f)/sin"} ... }
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "jx/compiler/hlo/hlo_module.h"
#include "jx/core/jaxpr.h"

namespace jx {

struct LowerOptions {
  bool consts_as_parameters = false;
  bool tuple_result = false;
  // The outermost op_name scope; empty: derived from the module name ("jit_f" -> "jit(f)").
  std::string name_stack = {};
  // The target's platform ("cpu", "tpu"), as its Device::platform() names it.
  std::string platform = "cpu";
};

absl::StatusOr<std::unique_ptr<hlo::HloModule>> LowerJaxpr(const ClosedJaxpr& jaxpr, std::string module_name,
                                                           const LowerOptions& options = {});

}  // namespace jx

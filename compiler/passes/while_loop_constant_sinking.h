// WhileLoopConstantSinking (XLA's, with its sink_broadcast_of_constants): a loop state element
// that starts as a constant the body passes through unchanged holds that constant on every
// trip, so its reads in the body and the condition read a copy of the constant instead:
//
//   ones = broadcast(1.0)                      ones = broadcast(1.0)
//   while (i, g, ones):                        while (i, g, ones):
//     c = dynamic-slice(ones, i)        ->       c = dynamic-slice(broadcast(1.0), i)
//     ...                                        ...
//
// Later simplification folds the copy into its readers (a slice of a splat is a splat), and
// WhileLoopSimplifier drops the element nothing reads any more (the ones-cotangent stack the
// transpose of a scan carries). Sunk: scalar constants and broadcasts of scalar constants
// (cheap to rebuild in the body; an array literal would be duplicated). The element stays in
// the state, so the loop's results do not change.
//
//   WhileLoopConstantSinking pass;
//   HLO_ASSIGN_OR_RETURN(bool changed, pass.Run(module));
#pragma once

#include <string_view>

#include "jx/compiler/hlo/hlo_pass.h"

namespace jx::hlo {

class WhileLoopConstantSinking : public HloPass {
 public:
  std::string_view name() const override { return "while-loop-constant-sinking"; }
  absl::StatusOr<bool> Run(HloModule* module) override;
};

}  // namespace jx::hlo

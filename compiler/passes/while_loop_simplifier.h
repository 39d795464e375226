// WhileLoopSimplifier: the dead-state removal of XLA's WhileLoopSimplifier
// (TryRemoveDeadWhileParams). A loop state element that the condition does not read and the
// body only passes through to the same position holds its initial value on every trip; it
// leaves the state, and reads of it after the loop read the initial value:
//
//   while (i, g, ones):                  while (i, g):
//     ... reads i, g only ...      ->      ...
//     (i + 1, g', ones)                    (i + 1, g')
//   use(gte(loop, 2))                    use(ones)
//
// After WhileLoopConstantSinking this drops a constant stack a loop carried only to slice it
// (the ones-cotangent of the transpose of a scan), and with it its fill before the loop. Loops
// whose body or condition another instruction shares, whose state is not built by a tuple, or
// whose results are read other than through get-tuple-element are left alone; one element
// always stays.
//
//   WhileLoopSimplifier pass;
//   HLO_ASSIGN_OR_RETURN(bool changed, pass.Run(module));
#pragma once

#include <string_view>

#include "jx/compiler/hlo/hlo_pass.h"

namespace jx::hlo {

class WhileLoopSimplifier : public HloPass {
 public:
  std::string_view name() const override { return "while-loop-simplifier"; }
  absl::StatusOr<bool> Run(HloModule* module) override;
};

}  // namespace jx::hlo

#include "jx/compiler/passes/dce.h"

#include <vector>

#include "absl/container/flat_hash_set.h"
#include "jx/compiler/hlo/hlo_module.h"
#include "jx/compiler/hlo/status_macros.h"
#include "jx/compiler/hlo/str_util.h"

namespace jx::hlo {

absl::StatusOr<bool> HloDCE::RunOnComputation(HloComputation* computation) {
  // Reverse post order visits users before operands, so one sweep removes whole dead
  // chains: by the time an operand is reached, its dead users are gone.
  std::vector<HloInstruction*> order = computation->MakeInstructionPostOrder();
  bool changed = false;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    HloInstruction* instr = *it;
    if (instr->user_count() > 0 || instr->IsRoot() ||
        instr->opcode() == HloOpcode::kParameter || instr->HasSideEffect()) {
      continue;
    }
    HLO_RETURN_IF_ERROR(computation->RemoveInstruction(instr));
    changed = true;
  }
  return changed;
}

absl::StatusOr<bool> HloDCE::Run(HloModule* module) {
  bool changed = false;
  // Computations reachable from the entry through called computations.
  absl::flat_hash_set<HloComputation*> live;
  std::vector<HloComputation*> worklist;
  if (module->entry_computation() != nullptr) {
    live.insert(module->entry_computation());
    worklist.push_back(module->entry_computation());
  }
  while (!worklist.empty()) {
    HloComputation* c = worklist.back();
    worklist.pop_back();
    HLO_ASSIGN_OR_RETURN(bool c_changed, RunOnComputation(c));
    changed |= c_changed;
    for (HloInstruction* instr : c->instructions()) {
      for (HloComputation* callee : instr->called_computations()) {
        if (callee != nullptr && live.insert(callee).second) worklist.push_back(callee);
      }
    }
  }
  // Remove the dead computations together: one pass over the module checks that no live
  // computation calls them (none can), however many there are.
  std::vector<HloComputation*> dead;
  for (HloComputation* c : module->computations()) {
    if (!live.contains(c)) dead.push_back(c);
  }
  if (!dead.empty()) {
    HLO_RETURN_IF_ERROR(module->RemoveComputations(dead));
    changed = true;
  }
  return changed;
}

}  // namespace jx::hlo

#include "jx/compiler/passes/dce.h"

#include <algorithm>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/container/inlined_vector.h"
#include "jx/compiler/hlo/hlo_module.h"
#include "jx/compiler/hlo/instruction_prefetch.h"
#include "jx/compiler/hlo/status_macros.h"
#include "jx/compiler/hlo/str_util.h"

namespace jx::hlo {

namespace {

bool IsDead(const HloInstruction& instr) {
  return instr.user_count() == 0 && !instr.IsRoot() && instr.opcode() != HloOpcode::kParameter &&
         !instr.HasSideEffect();
}

}  // namespace

absl::StatusOr<bool> HloDCE::RunOnComputation(HloComputation* computation,
                                              std::vector<HloComputation*>* callees) {
  // One walk in storage order finds what nothing reads (and, for the caller, what calls
  // computations); removing an instruction may leave its operands unread, and they go next,
  // so whole dead chains go without a post order (on a big computation, each walk is a cache
  // miss per instruction). The instructions removed are the same in any order.
  std::vector<HloInstruction*> dead;
  std::vector<HloInstruction*> callers;
  const auto prefetch = [](const HloInstruction* ahead) {
    PrefetchInstructionHead(ahead);  // users, opcode
    __builtin_prefetch(&ahead->called_computations());
  };
  ForEachInStorageOrder(*computation, prefetch, [&](HloInstruction* instr) {
    if (IsDead(*instr)) {
      dead.push_back(instr);
    } else if (callees != nullptr && !instr->called_computations().empty()) {
      callers.push_back(instr);
    }
    return true;
  });
  const bool changed = !dead.empty();
  absl::flat_hash_set<const HloInstruction*> removed_callers;  // callers found dead later
  while (!dead.empty()) {
    HloInstruction* instr = dead.back();
    dead.pop_back();
    const absl::InlinedVector<HloInstruction*, 4> operands(instr->operands().begin(), instr->operands().end());
    if (callees != nullptr && !instr->called_computations().empty()) removed_callers.insert(instr);
    HLO_RETURN_IF_ERROR(computation->RemoveInstruction(instr));
    for (size_t i = 0; i < operands.size(); ++i) {
      // Its last reader gone, an operand is dead: queued once (it may be read twice).
      if (std::find(operands.begin(), operands.begin() + i, operands[i]) == operands.begin() + i &&
          IsDead(*operands[i])) {
        dead.push_back(operands[i]);
      }
    }
  }
  for (const HloInstruction* caller : callers) {
    if (removed_callers.contains(caller)) continue;
    for (HloComputation* callee : caller->called_computations()) callees->push_back(callee);
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
  std::vector<HloComputation*> callees;
  while (!worklist.empty()) {
    HloComputation* c = worklist.back();
    worklist.pop_back();
    callees.clear();
    HLO_ASSIGN_OR_RETURN(bool c_changed, RunOnComputation(c, &callees));
    changed |= c_changed;
    for (HloComputation* callee : callees) {
      if (callee != nullptr && live.insert(callee).second) worklist.push_back(callee);
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

#include "jx/compiler/passes/constant_folding.h"

#include <memory>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "jx/compiler/hlo/hlo_evaluator.h"
#include "jx/compiler/hlo/hlo_module.h"
#include "jx/compiler/hlo/instruction_prefetch.h"
#include "jx/compiler/hlo/status_macros.h"

namespace jx::hlo {
namespace {

bool IsImpure(const HloInstruction& instr) {
  return instr.HasSideEffect() || instr.opcode() == HloOpcode::kRngBitGenerator ||
         instr.opcode() == HloOpcode::kCustomCall;
}

// Whether instr, or anything in the computations it calls (transitively), is impure.
bool IsOrContainsImpure(const HloInstruction& instr) {
  if (IsImpure(instr)) return true;
  std::vector<const HloComputation*> worklist;
  absl::flat_hash_set<const HloComputation*> seen;
  for (const HloComputation* c : instr.called_computations()) {
    if (c != nullptr && seen.insert(c).second) worklist.push_back(c);
  }
  while (!worklist.empty()) {
    const HloComputation* c = worklist.back();
    worklist.pop_back();
    for (const HloInstruction* inner : c->instructions()) {
      if (IsImpure(*inner)) return true;
      for (const HloComputation* callee : inner->called_computations()) {
        if (callee != nullptr && seen.insert(callee).second) worklist.push_back(callee);
      }
    }
  }
  return false;
}

// What a glance at instr and its operands' opcodes rules out (no constant operands, above
// all): a computation with nothing that passes needs no post order.
bool MayFold(const HloInstruction& instr) {
  switch (instr.opcode()) {
    case HloOpcode::kParameter:
    case HloOpcode::kConstant:
    case HloOpcode::kTuple:
    case HloOpcode::kBroadcast:
    case HloOpcode::kIota:
      return false;
    default:
      break;
  }
  if (instr.operand_count() == 0) return false;
  for (const HloInstruction* operand : instr.operands()) {
    if (operand->opcode() != HloOpcode::kConstant) return false;
  }
  return true;
}

bool ShouldTryFolding(const HloInstruction& instr) {
  if (!MayFold(instr) || !instr.shape().IsArray()) return false;
  if (instr.user_count() == 0 && !instr.IsRoot()) return false;
  int64_t operand_elements = 0;
  for (const HloInstruction* operand : instr.operands()) {
    if (operand->shape().IsArray()) operand_elements += ShapeUtil::ElementsIn(operand->shape());
  }
  if (operand_elements > HloConstantFolding::kMaxElements ||
      ShapeUtil::ElementsIn(instr.shape()) > HloConstantFolding::kMaxElements) {
    return false;
  }
  return !IsOrContainsImpure(instr);
}

}  // namespace

absl::StatusOr<bool> HloConstantFolding::RunOnComputation(HloComputation* computation) {
  if (!AnyInstruction(*computation, MayFold)) return false;  // most computations
  // Loops are never run at compile time (as XLA: max_loop_iterations = 0).
  HloEvaluator evaluator(/*max_loop_iterations=*/0);
  bool changed = false;
  // Post order: a folded operand is already a constant when its users are visited.
  // ReplaceInstruction only removes the replaced instruction and its (earlier) operands.
  for (HloInstruction* instr : computation->MakeInstructionPostOrder()) {
    if (!ShouldTryFolding(*instr)) continue;
    std::vector<const Literal*> operands;
    for (const HloInstruction* operand : instr->operands()) operands.push_back(&operand->literal());
    absl::StatusOr<Literal> value = evaluator.EvaluateInstruction(*instr, operands);
    if (!value.ok()) continue;  // not foldable (e.g. unsupported here); leave it be
    std::unique_ptr<HloInstruction> constant =
        HloInstruction::Create(HloOpcode::kConstant, instr->shape(), {});
    constant->set_literal(*std::move(value));
    constant->set_metadata(instr->metadata());
    HloInstruction* added = computation->AddInstruction(std::move(constant), "constant");
    HLO_RETURN_IF_ERROR(computation->ReplaceInstruction(instr, added));
    changed = true;
  }
  return changed;
}

absl::StatusOr<bool> HloConstantFolding::Run(HloModule* module) {
  bool changed = false;
  for (HloComputation* computation : module->computations()) {
    if (computation->IsFusionComputation()) continue;
    HLO_ASSIGN_OR_RETURN(bool c, RunOnComputation(computation));
    changed |= c;
  }
  return changed;
}

}  // namespace jx::hlo

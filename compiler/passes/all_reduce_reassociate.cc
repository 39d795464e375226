#include "jx/compiler/passes/all_reduce_reassociate.h"

#include <vector>

#include "jx/compiler/hlo/hlo_module.h"
#include "jx/compiler/hlo/status_macros.h"
#include "jx/compiler/passes/all_reduce_utils.h"

namespace jx::hlo {
namespace {

// Whether `combine`'s operands are two all-reduces it may replace by one: each reduces with
// combine's op, feeds only `combine`, and they match in groups and type.
bool IsReassociable(const HloInstruction* combine) {
  if (combine->operand_count() != 2) return false;
  const HloInstruction* a = combine->operand(0);
  const HloInstruction* b = combine->operand(1);
  if (a == b || a->opcode() != HloOpcode::kAllReduce || b->opcode() != HloOpcode::kAllReduce) return false;
  if (AllReduceReductionOp(*a) != combine->opcode() || AllReduceReductionOp(*b) != combine->opcode()) return false;
  if (a->user_count() != 1 || b->user_count() != 1 || a->IsRoot() || b->IsRoot()) return false;
  if (!SameAllReduceGroups(*a, *b)) return false;
  return ShapeUtil::Compatible(a->shape(), b->shape()) && ShapeUtil::Compatible(a->shape(), combine->shape());
}

}  // namespace

absl::StatusOr<bool> AllReduceReassociate::RunOnComputation(HloComputation* computation) {
  bool changed = false;
  // Operands before users: in a chain the inner combine becomes an all-reduce first, so the
  // outer one then sees two all-reduces.
  for (HloInstruction* combine : computation->MakeInstructionPostOrder()) {
    if (!combine->IsElementwise() || !IsReassociable(combine)) continue;
    HLO_RETURN_IF_ERROR(ReassociateCollectivePair(computation, combine).status());
    changed = true;
  }
  return changed;
}

absl::StatusOr<bool> AllReduceReassociate::Run(HloModule* module) {
  bool changed = false;
  for (HloComputation* computation : module->MakeComputationPostOrder()) {
    if (computation->IsFusionComputation()) continue;
    HLO_ASSIGN_OR_RETURN(bool c_changed, RunOnComputation(computation));
    changed |= c_changed;
  }
  return changed;
}

}  // namespace jx::hlo

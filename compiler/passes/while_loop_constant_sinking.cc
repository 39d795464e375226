#include "jx/compiler/passes/while_loop_constant_sinking.h"

#include <cstdint>
#include <optional>
#include <vector>

#include "jx/compiler/hlo/hlo_builder.h"
#include "jx/compiler/hlo/hlo_module.h"
#include "jx/compiler/hlo/status_macros.h"
#include "jx/compiler/passes/while_loop_utils.h"

namespace jx::hlo {
namespace {

// A scalar constant, or a broadcast of one.
bool IsSinkable(const HloInstruction& v) {
  if (v.opcode() == HloOpcode::kConstant) return ShapeUtil::IsScalar(v.shape());
  return v.opcode() == HloOpcode::kBroadcast && v.operand(0)->opcode() == HloOpcode::kConstant &&
         ShapeUtil::IsScalar(v.operand(0)->shape());
}

// A copy of a sinkable value added to c.
absl::StatusOr<HloInstruction*> Rebuild(const HloInstruction& v, HloComputation* c) {
  HloBuilder b(c);
  b.set_metadata(v.metadata());
  if (v.opcode() == HloOpcode::kConstant) return b.Constant(v.literal());
  HLO_ASSIGN_OR_RETURN(HloInstruction * scalar, b.Constant(v.operand(0)->literal()));
  return b.Broadcast(scalar, v.shape().dimensions(), {});
}

// Makes the reads `reads` of state element `index` in c read a copy of `value`, except the
// pass-through at the body root's own position `index` (keep_root_position).
absl::StatusOr<bool> SinkInto(HloComputation* c, const std::vector<HloInstruction*>& reads, int64_t index,
                              const HloInstruction& value, bool keep_root_position) {
  HloInstruction* root = c->root_instruction();
  HloInstruction* copy = nullptr;
  bool changed = false;
  for (HloInstruction* read : reads) {
    const InstructionVector users = read->users();
    for (HloInstruction* user : users) {
      if (user == root && keep_root_position) {
        for (int64_t j = 0; j < root->operand_count(); ++j) {
          if (root->operand(j) != read || j == index) continue;
          if (copy == nullptr) {
            HLO_ASSIGN_OR_RETURN(copy, Rebuild(value, c));
          }
          HLO_RETURN_IF_ERROR(root->ReplaceOperandWith(j, copy));
          changed = true;
        }
        continue;
      }
      if (copy == nullptr) {
        HLO_ASSIGN_OR_RETURN(copy, Rebuild(value, c));
      }
      HLO_RETURN_IF_ERROR(read->ReplaceUseWith(user, copy));
      changed = true;
    }
    if (read->user_count() == 0 && !read->IsRoot()) HLO_RETURN_IF_ERROR(c->RemoveInstruction(read));
  }
  return changed;
}

absl::StatusOr<bool> SinkConstants(HloInstruction* loop) {
  const HloInstruction* init = loop->operand(0);
  HloComputation* body = loop->while_body();
  HloComputation* cond = loop->while_condition();
  const HloInstruction* root = body->root_instruction();
  if (init->opcode() != HloOpcode::kTuple || root->opcode() != HloOpcode::kTuple) return false;
  const int64_t size = loop->shape().tuple_shapes_size();
  const auto body_reads = TupleReads(*body, size);
  const auto cond_reads = TupleReads(*cond, size);
  if (!body_reads || !cond_reads) return false;
  bool changed = false;
  for (int64_t i = 0; i < size; ++i) {
    const HloInstruction& value = *init->operand(i);
    const HloInstruction* next = root->operand(i);
    const bool invariant = next->opcode() == HloOpcode::kGetTupleElement &&
                           next->operand(0) == body->parameter_instruction(0) && next->tuple_index() == i;
    if (!invariant || !IsSinkable(value)) continue;
    const auto k = static_cast<size_t>(i);
    HLO_ASSIGN_OR_RETURN(bool in_body, SinkInto(body, (*body_reads)[k], i, value, true));
    HLO_ASSIGN_OR_RETURN(bool in_cond, SinkInto(cond, (*cond_reads)[k], i, value, false));
    changed |= in_body || in_cond;
  }
  return changed;
}

}  // namespace

absl::StatusOr<bool> WhileLoopConstantSinking::Run(HloModule* module) {
  if (!MayHoldWhileLoops(*module)) return false;
  const auto callers = CallerCounts(*module);
  bool changed = false;
  for (HloComputation* computation : module->MakeComputationPostOrder()) {
    if (computation->IsFusionComputation()) continue;
    for (HloInstruction* loop : LoopsWithOwnComputations(*computation, callers)) {
      HLO_ASSIGN_OR_RETURN(bool sunk, SinkConstants(loop));
      changed |= sunk;
    }
  }
  return changed;
}

}  // namespace jx::hlo

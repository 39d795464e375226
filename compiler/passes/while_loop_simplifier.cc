#include "jx/compiler/passes/while_loop_simplifier.h"

#include <cstdint>
#include <optional>
#include <vector>

#include "jx/compiler/hlo/hlo_builder.h"
#include "jx/compiler/hlo/hlo_module.h"
#include "jx/compiler/hlo/status_macros.h"
#include "jx/compiler/passes/while_loop_utils.h"

namespace jx::hlo {
namespace {

// Whether state element i only passes through the body: every read of it feeds the root's
// position i and nothing else, and the root's position i is such a read.
bool PassesThrough(const HloInstruction& root, const std::vector<HloInstruction*>& reads, int64_t i) {
  const HloInstruction* next = root.operand(i);
  bool feeds_root = false;
  for (const HloInstruction* read : reads) {
    for (const HloInstruction* user : read->users()) {
      if (user != &root) return false;
    }
    for (int64_t j = 0; j < root.operand_count(); ++j) {
      if (root.operand(j) == read && j != i) return false;
    }
    feeds_root |= next == read;
  }
  return feeds_root;
}

// Renumbers the reads of the kept elements of c's tuple parameter (new_index[i] < 0: dead,
// its reads removed) and gives the parameter the new state shape.
absl::Status Renumber(HloComputation* c, const std::vector<std::vector<HloInstruction*>>& reads,
                      const std::vector<int64_t>& new_index, const Shape& state) {
  for (size_t i = 0; i < reads.size(); ++i) {
    for (HloInstruction* read : reads[i]) {
      if (new_index[i] >= 0) {
        read->set_tuple_index(new_index[i]);
      } else {
        HLO_RETURN_IF_ERROR(c->RemoveInstruction(read));
      }
    }
  }
  *c->parameter_instruction(0)->mutable_shape() = state;
  return absl::OkStatus();
}

absl::StatusOr<bool> RemoveDeadState(HloInstruction* loop) {
  HloComputation* parent = loop->parent();
  HloComputation* body = loop->while_body();
  HloComputation* cond = loop->while_condition();
  HloInstruction* init = loop->mutable_operand(0);
  HloInstruction* root = body->root_instruction();
  if (!loop->shape().IsTuple() || loop->IsRoot() || init->opcode() != HloOpcode::kTuple ||
      root->opcode() != HloOpcode::kTuple) {
    return false;
  }
  for (const HloInstruction* user : loop->users()) {
    if (user->opcode() != HloOpcode::kGetTupleElement) return false;
  }
  const int64_t size = loop->shape().tuple_shapes_size();
  const auto body_reads = TupleReads(*body, size);
  const auto cond_reads = TupleReads(*cond, size);
  if (!body_reads || !cond_reads) return false;
  std::vector<int64_t> new_index(static_cast<size_t>(size), -1);
  std::vector<Shape> shapes;
  std::vector<HloInstruction*> init_elements, next_elements;
  for (int64_t i = 0; i < size; ++i) {
    const auto k = static_cast<size_t>(i);
    if ((*cond_reads)[k].empty() && PassesThrough(*root, (*body_reads)[k], i)) continue;
    new_index[k] = static_cast<int64_t>(shapes.size());
    shapes.push_back(loop->shape().tuple_shapes(i));
    init_elements.push_back(init->mutable_operand(i));
    next_elements.push_back(root->mutable_operand(i));
  }
  if (shapes.empty() || static_cast<int64_t>(shapes.size()) == size) return false;
  const Shape state = ShapeUtil::MakeTupleShape(shapes);

  // The body's new root first: the old one holds the dead elements' reads.
  HloBuilder bb(body);
  bb.set_metadata(root->metadata());
  HLO_ASSIGN_OR_RETURN(HloInstruction * new_root, bb.Tuple(next_elements));
  body->set_root_instruction(new_root);
  HLO_RETURN_IF_ERROR(body->RemoveInstruction(root));
  HLO_RETURN_IF_ERROR(Renumber(body, *body_reads, new_index, state));
  HLO_RETURN_IF_ERROR(Renumber(cond, *cond_reads, new_index, state));

  // The loop's results: a dead element's reads read its initial value.
  const InstructionVector users = loop->users();
  for (HloInstruction* user : users) {
    const int64_t to = new_index[static_cast<size_t>(user->tuple_index())];
    if (to >= 0) {
      user->set_tuple_index(to);
      continue;
    }
    HLO_RETURN_IF_ERROR(user->ReplaceAllUsesWith(init->mutable_operand(user->tuple_index())));
    HLO_RETURN_IF_ERROR(parent->RemoveInstruction(user));
  }
  HloBuilder pb(parent);
  pb.set_metadata(init->metadata());
  HLO_ASSIGN_OR_RETURN(HloInstruction * new_init, pb.Tuple(init_elements));
  *loop->mutable_shape() = state;
  loop->DetachFromOperands();  // the state's shape changed: ReplaceOperandWith would refuse it
  loop->AppendOperand(new_init);
  if (init->user_count() == 0 && !init->IsRoot()) HLO_RETURN_IF_ERROR(parent->RemoveInstructionAndUnusedOperands(init));
  return true;
}

}  // namespace

absl::StatusOr<bool> WhileLoopSimplifier::Run(HloModule* module) {
  if (!MayHoldWhileLoops(*module)) return false;
  const auto callers = CallerCounts(*module);
  bool changed = false;
  for (HloComputation* computation : module->MakeComputationPostOrder()) {
    if (computation->IsFusionComputation()) continue;
    for (HloInstruction* loop : LoopsWithOwnComputations(*computation, callers)) {
      HLO_ASSIGN_OR_RETURN(bool removed, RemoveDeadState(loop));
      changed |= removed;
    }
  }
  return changed;
}

}  // namespace jx::hlo

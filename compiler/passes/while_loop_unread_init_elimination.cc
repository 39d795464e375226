#include "jx/compiler/passes/while_loop_unread_init_elimination.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "jx/compiler/hlo/allocate_buffer.h"
#include "jx/compiler/hlo/hlo_builder.h"
#include "jx/compiler/hlo/hlo_module.h"
#include "jx/compiler/hlo/status_macros.h"
#include "jx/compiler/passes/while_loop_utils.h"

namespace jx::hlo {
namespace {

// Whether the body's next value `next` of a state element read by `reads` fills it row by row:
// next = dynamic-update-slice(read, row, index, ...), the read's only use, writing one whole
// row (every dimension but the first in full) at an index taking each of the element's rows
// once over the trips.
bool FillsRowByRow(const HloInstruction* next, const std::vector<HloInstruction*>& reads, const HloInstruction& loop,
                   const Counter& counter) {
  if (next->opcode() != HloOpcode::kDynamicUpdateSlice || reads.size() != 1) return false;
  const HloInstruction* read = reads[0];
  if (next->operand(0) != read || read->user_count() != 1) return false;
  for (int64_t i = 1; i < next->operand_count(); ++i) {
    if (next->operand(i) == read) return false;
  }
  absl::Span<const int64_t> dims = next->shape().dimensions();
  absl::Span<const int64_t> row = next->operand(1)->shape().dimensions();
  if (!next->shape().IsArray() || dims.empty() || dims[0] != counter.trips || row[0] != 1) return false;
  for (size_t d = 1; d < dims.size(); ++d) {
    if (row[d] != dims[d]) return false;  // then its start index is 0 (clamped): the whole row
  }
  return TakesEachRowOnce(next->operand(2), loop, counter);
}

absl::StatusOr<bool> EliminateUnreadInits(HloComputation* computation, HloInstruction* loop) {
  HloInstruction* init = loop->mutable_operand(0);
  if (init->opcode() != HloOpcode::kTuple || init->user_count() != 1 || init->IsRoot()) return false;
  const std::optional<Counter> counter = UnitStepCounter(*loop);
  if (!counter) return false;
  const int64_t n = loop->shape().tuple_shapes_size();
  const auto cond_reads = TupleReads(*loop->while_condition(), n);
  const auto body_reads = TupleReads(*loop->while_body(), n);
  const HloInstruction* root = loop->while_body()->root_instruction();
  if (!cond_reads || !body_reads || root->opcode() != HloOpcode::kTuple) return false;
  bool changed = false;
  for (int64_t k = 0; k < n; ++k) {
    const size_t i = static_cast<size_t>(k);
    HloInstruction* old = init->mutable_operand(k);
    if (k == counter->index || !(*cond_reads)[i].empty() || IsAllocateBuffer(*old) ||
        !FillsRowByRow(root->operand(k), (*body_reads)[i], *loop, *counter)) {
      continue;
    }
    HloBuilder b(computation);
    b.set_metadata(old->metadata());
    HLO_ASSIGN_OR_RETURN(HloInstruction * buffer, b.CustomCall(std::string(kAllocateBufferTarget), {}, old->shape()));
    HLO_RETURN_IF_ERROR(init->ReplaceOperandWith(k, buffer));
    if (old->user_count() == 0 && !old->IsRoot() && old->opcode() != HloOpcode::kParameter && !old->HasSideEffect()) {
      HLO_RETURN_IF_ERROR(computation->RemoveInstructionAndUnusedOperands(old));
    }
    changed = true;
  }
  return changed;
}

}  // namespace

absl::StatusOr<bool> WhileLoopUnreadInitElimination::Run(HloModule* module) {
  if (!MayHoldWhileLoops(*module)) return false;
  bool changed = false;
  for (HloComputation* computation : module->MakeComputationPostOrder()) {
    if (computation->IsFusionComputation()) continue;
    std::vector<HloInstruction*> loops;
    for (HloInstruction* instr : computation->instructions()) {
      if (instr->opcode() == HloOpcode::kWhile) loops.push_back(instr);
    }
    for (HloInstruction* loop : loops) {
      HLO_ASSIGN_OR_RETURN(bool eliminated, EliminateUnreadInits(computation, loop));
      changed |= eliminated;
    }
  }
  return changed;
}

}  // namespace jx::hlo

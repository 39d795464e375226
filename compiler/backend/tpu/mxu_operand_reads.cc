#include "jx/compiler/backend/tpu/mxu_operand_reads.h"

#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "jx/compiler/hlo/hlo_instruction.h"
#include "jx/compiler/hlo/shape.h"
#include "jx/compiler/hlo/status_macros.h"
#include "jx/compiler/hlo/str_util.h"

namespace jx::tpu {
namespace {

using hlo::HloInstruction;
using hlo::HloOpcode;

bool IsContraction(const HloInstruction& instr) {
  return instr.opcode() == HloOpcode::kDot || instr.opcode() == HloOpcode::kConvolution;
}

// Whether `user` reads `value` only as a contraction's operand: a dot or convolution, or a
// fusion whose parameters bound to `value` are read only by contractions in its body.
bool ReadsOnlyIntoContractions(const HloInstruction& user, const HloInstruction* value) {
  if (IsContraction(user)) return true;
  if (user.opcode() != HloOpcode::kFusion) return false;
  const hlo::HloComputation* body = user.fused_instructions_computation();
  for (int64_t i = 0; i < user.operand_count(); ++i) {
    if (user.operand(i) != value) continue;
    for (const HloInstruction* reader : body->parameter_instruction(i)->users()) {
      if (!IsContraction(*reader)) return false;
    }
  }
  return true;
}

// A convert between floating-point types that only contractions read.
bool IsMxuOperandConvert(const HloInstruction& instr) {
  if (instr.opcode() != HloOpcode::kConvert || instr.users().empty()) return false;
  if (!hlo::IsFloatingPointType(instr.shape().element_type()) ||
      !hlo::IsFloatingPointType(instr.operand(0)->shape().element_type())) {
    return false;
  }
  for (const HloInstruction* user : instr.users()) {
    if (!ReadsOnlyIntoContractions(*user, &instr)) return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<int64_t> ReadMxuOperandsAsStored(hlo::HloComputation* computation) {
  std::vector<HloInstruction*> order = computation->MakeSequentialOrder();
  absl::flat_hash_set<const HloInstruction*> removed;
  // Last to first: the outer convert of a round trip goes first, then the inner one is read
  // only by contractions.
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    HloInstruction* convert = *it;
    if (!IsMxuOperandConvert(*convert) || convert == computation->root_instruction()) continue;
    // The readers take the stored operand: the convert first takes its shape, as the rewired
    // edges must join values of one shape (the fusions' parameters keep theirs: nothing runs this).
    *convert->mutable_shape() = convert->operand(0)->shape();
    HLO_RETURN_IF_ERROR(convert->ReplaceAllUsesWith(convert->mutable_operand(0)));
    HLO_RETURN_IF_ERROR(computation->RemoveInstruction(convert));
    removed.insert(convert);
  }
  if (removed.empty()) return 0;
  std::vector<HloInstruction*> kept;
  kept.reserve(order.size() - removed.size());
  for (HloInstruction* instr : order) {
    if (!removed.contains(instr)) kept.push_back(instr);
  }
  computation->set_schedule(std::move(kept));
  return static_cast<int64_t>(removed.size());
}

absl::StatusOr<int64_t> ShareAsyncCollectiveResults(hlo::HloComputation* computation) {
  std::vector<HloInstruction*> order = computation->MakeSequentialOrder();
  int64_t replaced = 0;
  for (HloInstruction*& slot : order) {
    HloInstruction* done = slot;
    if (!hlo::IsAsyncCollectiveDone(done->opcode())) continue;
    // The start is its result (an all-reduce-start, of one operand or several), or holds it
    // as leaf 1 (operands, result).
    HloInstruction* start = done->mutable_operand(0);
    HloInstruction* result = start;
    if (!hlo::ShapeUtil::Compatible(start->shape(), done->shape())) {
      if (!start->shape().IsTuple() || start->shape().tuple_shapes_size() != 2 ||
          !hlo::ShapeUtil::Compatible(start->shape().tuple_shapes(1), done->shape())) {
        return absl::InternalError(hlo::StrCat(done->name(), " (", done->shape().ToString(), ") is not its start ",
                                          start->name(), "'s result (", start->shape().ToString(), ")"));
      }
      auto gte = HloInstruction::Create(HloOpcode::kGetTupleElement, start->shape().tuple_shapes(1), {start});
      gte->set_tuple_index(1);
      result = computation->AddInstruction(std::move(gte), done->name() + ".result");
    }
    HLO_RETURN_IF_ERROR(done->ReplaceAllUsesWith(result));
    HLO_RETURN_IF_ERROR(computation->RemoveInstruction(done));
    slot = result == start ? nullptr : result;
    ++replaced;
  }
  if (replaced == 0) return 0;
  std::vector<HloInstruction*> kept;
  kept.reserve(order.size());
  for (HloInstruction* instr : order) {
    if (instr != nullptr) kept.push_back(instr);
  }
  computation->set_schedule(std::move(kept));
  return replaced;
}

}  // namespace jx::tpu

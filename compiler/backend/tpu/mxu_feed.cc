#include "jx/compiler/backend/tpu/mxu_feed.h"

#include "jx/compiler/backend/tpu/tpu_layout.h"
#include "jx/compiler/hlo/hlo_computation.h"

namespace jx::tpu {
namespace {

using hlo::HloInstruction;
using hlo::HloOpcode;

bool IsContraction(const HloInstruction& instr) {
  return instr.opcode() == HloOpcode::kDot || instr.opcode() == HloOpcode::kConvolution;
}

bool IsFloatConvert(const HloInstruction& instr) {
  return instr.opcode() == HloOpcode::kConvert && instr.shape().IsArray() &&
         instr.operand(0)->shape().IsArray() &&
         hlo::IsFloatingPointType(instr.shape().element_type()) &&
         hlo::IsFloatingPointType(instr.operand(0)->shape().element_type());
}

// The value under a chain of float converts.
const HloInstruction* BelowConverts(const HloInstruction* x) {
  while (IsFloatConvert(*x)) x = x->operand(0);
  return x;
}

// The value under a chain of float converts and static slices.
const HloInstruction* BelowConvertsAndSlices(const HloInstruction* x) {
  while (IsFloatConvert(*x) || x->opcode() == HloOpcode::kSlice) x = x->operand(0);
  return x;
}

// Whether a fusion computes nothing but float converts (and static slices: the block the
// operand's DMA fetches) of its one parameter, ending in a convert.
bool IsConvertFusion(const HloInstruction& instr) {
  if (instr.opcode() != HloOpcode::kFusion || instr.operand_count() != 1) return false;
  const hlo::HloComputation* fused = instr.fused_instructions_computation();
  if (fused == nullptr || fused->root_instruction() == nullptr ||
      !IsFloatConvert(*fused->root_instruction())) {
    return false;
  }
  return BelowConvertsAndSlices(fused->root_instruction())->opcode() == HloOpcode::kParameter;
}

// Whether every read of `value` by `user` is as a contraction operand (through fusions
// nested in `user`: an attention kernel's dot fusions).
bool ReadsAsMxuOperand(const HloInstruction& user, const HloInstruction& value) {
  if (IsContraction(user)) return true;
  if (user.opcode() != HloOpcode::kFusion) return false;
  const hlo::HloComputation* fused = user.fused_instructions_computation();
  if (fused == nullptr) return false;
  for (int64_t i = 0; i < user.operand_count(); ++i) {
    if (user.operand(i) != &value) continue;
    if (i >= fused->num_parameters()) return false;
    const HloInstruction* param = fused->parameter_instruction(i);
    if (param == nullptr || param->users().empty()) return false;
    for (const HloInstruction* reader : param->users()) {
      if (!IsContraction(*reader) && !(reader->opcode() == HloOpcode::kFusion && ReadsAsMxuOperand(*reader, *param))) {
        return false;
      }
    }
  }
  return true;
}

}  // namespace

bool IsMxuFeed(const HloInstruction& instr) {
  if (!IsFloatConvert(instr) && !IsConvertFusion(instr)) return false;
  if (instr.users().empty() || instr.IsRoot()) return false;
  for (const HloInstruction* user : instr.users()) {
    if (!ReadsAsMxuOperand(*user, instr)) return false;
  }
  return true;
}

double MxuFeedBytesPerElement(const HloInstruction& operand) {
  const hlo::Shape& stored = MxuFeedSource(operand).shape();
  if (!stored.IsArray()) return 0;
  const int64_t elements = hlo::ShapeUtil::ElementsIn(stored);
  return elements > 0 ? static_cast<double>(PaddedBytes(stored)) / static_cast<double>(elements) : 0;
}

const HloInstruction& MxuFeedSource(const HloInstruction& operand) {
  if (!IsMxuFeed(operand)) return operand;
  return operand.opcode() == HloOpcode::kFusion ? *operand.operand(0)
                                                 : *BelowConverts(&operand);
}

}  // namespace jx::tpu

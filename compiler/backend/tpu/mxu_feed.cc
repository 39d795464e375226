#include "jx/compiler/backend/tpu/mxu_feed.h"

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

// Whether a fusion computes nothing but float converts of its one parameter.
bool IsConvertFusion(const HloInstruction& instr) {
  if (instr.opcode() != HloOpcode::kFusion || instr.operand_count() != 1) return false;
  const hlo::HloComputation* fused = instr.fused_instructions_computation();
  if (fused == nullptr || fused->root_instruction() == nullptr ||
      !IsFloatConvert(*fused->root_instruction())) {
    return false;
  }
  return BelowConverts(fused->root_instruction())->opcode() == HloOpcode::kParameter;
}

// Whether every read of `value` by `user` is as a contraction operand.
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
      if (!IsContraction(*reader)) return false;
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

const HloInstruction& MxuFeedSource(const HloInstruction& operand) {
  if (!IsMxuFeed(operand)) return operand;
  return operand.opcode() == HloOpcode::kFusion ? *operand.operand(0)
                                                 : *BelowConverts(&operand);
}

}  // namespace jx::tpu

#include "jx/compiler/backend/cpu/vector_computation.h"

#include "absl/container/flat_hash_map.h"
#include "jx/compiler/hlo/status_macros.h"

namespace jx::cpu::internal {

using hlo::HloBuilder;
using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::HloOpcode;
using hlo::Shape;
using hlo::ShapeUtil;

bool IsVectorizable(const HloComputation& computation) {
  for (const HloInstruction* instr : computation.MakeInstructionPostOrder()) {
    switch (instr->opcode()) {
      case HloOpcode::kParameter:
        if (!instr->shape().IsArray() || instr->shape().rank() != 0) return false;
        break;
      case HloOpcode::kConstant:
        if (!instr->shape().IsArray() || instr->shape().rank() != 0) return false;
        break;
      case HloOpcode::kTuple:
        if (instr != computation.root_instruction()) return false;
        break;
      case HloOpcode::kReducePrecision:
        return false;  // attributes the vector clone would not carry
      default:
        if (!instr->IsElementwise() || !instr->shape().IsArray() || instr->operand_count() > 3) return false;
    }
  }
  return true;
}

absl::StatusOr<std::vector<HloInstruction*>> ApplyToVectors(HloBuilder& b, const HloComputation& computation,
                                                            const std::vector<HloInstruction*>& a,
                                                            const std::vector<HloInstruction*>& x, int64_t length) {
  absl::flat_hash_map<const HloInstruction*, HloInstruction*> value;
  const size_t n = a.size();
  for (const HloInstruction* instr : computation.MakeInstructionPostOrder()) {
    std::vector<HloInstruction*> ops;
    for (const HloInstruction* o : instr->operands()) ops.push_back(value.at(o));
    HloInstruction* v = nullptr;
    const Shape vec = instr->shape().IsArray() ? ShapeUtil::MakeShape(instr->shape().element_type(), {length}) : Shape();
    switch (instr->opcode()) {
      case HloOpcode::kParameter: {
        const size_t p = static_cast<size_t>(instr->parameter_number());
        v = p < n ? a[p] : x[p - n];
        break;
      }
      case HloOpcode::kConstant: {
        HLO_ASSIGN_OR_RETURN(HloInstruction * c, b.Constant(hlo::Literal(instr->literal())));
        HLO_ASSIGN_OR_RETURN(v, b.Broadcast(c, {length}, {}));
        break;
      }
      case HloOpcode::kTuple:
        return ops;  // the root (IsVectorizable)
      case HloOpcode::kCompare: {
        HLO_ASSIGN_OR_RETURN(v, b.Compare(ops[0], ops[1], instr->comparison_direction(), instr->comparison_type()));
        break;
      }
      case HloOpcode::kConvert: {
        HLO_ASSIGN_OR_RETURN(v, b.Convert(ops[0], instr->shape().element_type()));
        break;
      }
      default: {
        auto clone = HloInstruction::Create(instr->opcode(), vec, ops);
        HLO_ASSIGN_OR_RETURN(v, b.AddInstruction(std::move(clone)));
        break;
      }
    }
    value[instr] = v;
  }
  return std::vector<HloInstruction*>{value.at(computation.root_instruction())};
}

}  // namespace jx::cpu::internal

#include "jx/compiler/passes/while_loop_utils.h"

#include "jx/compiler/hlo/literal.h"
#include "jx/compiler/hlo/status_macros.h"

namespace jx::hlo {

std::optional<std::vector<std::vector<HloInstruction*>>> TupleReads(const HloComputation& c, int64_t size) {
  if (c.num_parameters() != 1) return std::nullopt;
  const HloInstruction* param = c.parameter_instruction(0);
  if (param->IsRoot()) return std::nullopt;
  std::vector<std::vector<HloInstruction*>> reads(static_cast<size_t>(size));
  for (HloInstruction* user : param->users()) {
    if (user->opcode() != HloOpcode::kGetTupleElement) return std::nullopt;
    reads[static_cast<size_t>(user->tuple_index())].push_back(user);
  }
  return reads;
}

absl::flat_hash_map<const HloComputation*, int64_t> CallerCounts(const HloModule& module) {
  absl::flat_hash_map<const HloComputation*, int64_t> callers;
  for (const HloComputation* c : module.computations()) {
    for (const HloInstruction* instr : c->instructions()) {
      for (const HloComputation* callee : instr->called_computations()) ++callers[callee];
    }
  }
  return callers;
}

std::vector<HloInstruction*> LoopsWithOwnComputations(
    const HloComputation& computation, const absl::flat_hash_map<const HloComputation*, int64_t>& callers) {
  auto calls = [&](const HloComputation* c) {
    auto it = callers.find(c);
    return it == callers.end() ? 0 : it->second;
  };
  std::vector<HloInstruction*> loops;
  for (HloInstruction* instr : computation.instructions()) {
    if (instr->opcode() == HloOpcode::kWhile && calls(instr->while_body()) == 1 &&
        calls(instr->while_condition()) == 1) {
      loops.push_back(instr);
    }
  }
  return loops;
}

absl::StatusOr<HloInstruction*> Zeros(HloBuilder& b, const Shape& shape) {
  HLO_ASSIGN_OR_RETURN(HloInstruction * zero, b.Constant(Literal::CreateScalar(shape.element_type(), 0)));
  if (shape.rank() == 0) return zero;
  return b.Broadcast(zero, shape.dimensions(), {});
}

}  // namespace jx::hlo

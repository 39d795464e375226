#include "jx/compiler/passes/while_loop_utils.h"

#include <algorithm>

#include "jx/compiler/hlo/literal.h"
#include "jx/compiler/hlo/pattern_matcher.h"
#include "jx/compiler/hlo/status_macros.h"

namespace jx::hlo {

namespace m = ::jx::hlo::match;

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

bool MayHoldWhileLoops(const HloModule& module) {
  for (const HloComputation* c : module.computations()) {
    if (c != module.entry_computation() && !c->IsFusionComputation()) return true;
  }
  return false;
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

std::optional<int64_t> IntegerConstant(const HloInstruction* v) {
  if (v->opcode() != HloOpcode::kConstant || !ShapeUtil::IsScalar(v->shape()) ||
      !IsIntegralType(v->shape().element_type())) {
    return std::nullopt;
  }
  return v->literal().GetAsInt64(0);
}

std::optional<Counter> UnitStepCounter(const HloInstruction& loop) {
  const HloInstruction* init = loop.operand(0);
  const HloInstruction* cond_param = loop.while_condition()->parameter_instruction(0);
  const HloInstruction* body_param = loop.while_body()->parameter_instruction(0);
  HloInstruction* compare = loop.while_condition()->root_instruction();
  HloInstruction* root = loop.while_body()->root_instruction();
  if (init->opcode() != HloOpcode::kTuple || root->opcode() != HloOpcode::kTuple ||
      compare->opcode() != HloOpcode::kCompare) {
    return std::nullopt;
  }
  // counter < limit, or limit > counter.
  const ComparisonDirection dir = compare->comparison_direction();
  const HloInstruction* counter = nullptr;
  const HloInstruction* limit = nullptr;
  if (dir == ComparisonDirection::kLt) {
    counter = compare->operand(0), limit = compare->operand(1);
  } else if (dir == ComparisonDirection::kGt) {
    counter = compare->operand(1), limit = compare->operand(0);
  } else {
    return std::nullopt;
  }
  const std::optional<int64_t> bound = IntegerConstant(limit);
  if (!bound || counter->opcode() != HloOpcode::kGetTupleElement || counter->operand(0) != cond_param) {
    return std::nullopt;
  }
  const int64_t k = counter->tuple_index();
  if (k >= init->operand_count() || k >= root->operand_count()) return std::nullopt;
  const std::optional<int64_t> start = IntegerConstant(init->operand(k));
  HloInstruction* read = nullptr;
  if (!start || !Match(root->mutable_operand(k), m::AddAnyOrder(m::Op(&read), m::ConstantScalar(1))) ||
      read->opcode() != HloOpcode::kGetTupleElement || read->operand(0) != body_param || read->tuple_index() != k) {
    return std::nullopt;
  }
  return Counter{.index = k, .start = *start, .trips = std::max<int64_t>(0, *bound - *start)};
}

bool TakesEachRowOnce(const HloInstruction* index, const HloInstruction& loop, const Counter& c) {
  const HloInstruction* param = loop.while_body()->parameter_instruction(0);
  auto is_counter = [&](const HloInstruction* v) {
    return v->opcode() == HloOpcode::kGetTupleElement && v->operand(0) == param && v->tuple_index() == c.index;
  };
  if (is_counter(index)) return c.start == 0;
  if (index->opcode() != HloOpcode::kSubtract) return false;
  const std::optional<int64_t> k0 = IntegerConstant(index->operand(0));
  const std::optional<int64_t> k1 = IntegerConstant(index->operand(1));
  if (k0 && is_counter(index->operand(1))) return *k0 - c.start == c.trips - 1;  // k - (start + t)
  return k1 && is_counter(index->operand(0)) && *k1 == c.start;                  // (start + t) - start
}

absl::StatusOr<HloInstruction*> Zeros(HloBuilder& b, const Shape& shape) {
  HLO_ASSIGN_OR_RETURN(HloInstruction * zero, b.Constant(Literal::CreateScalar(shape.element_type(), 0)));
  if (shape.rank() == 0) return zero;
  return b.Broadcast(zero, shape.dimensions(), {});
}

}  // namespace jx::hlo

#include "jx/compiler/backend/cpu/scalar_semantics.h"

#include <unordered_map>

namespace jx::cpu::internal {

using hlo::ComparisonDirection;
using hlo::ComparisonType;
using hlo::HloInstruction;
using hlo::HloOpcode;

std::optional<HloOpcode> SimpleBinaryReducer(const hlo::HloComputation& c) {
  const HloInstruction* root = c.root_instruction();
  if (c.num_parameters() != 2 || root->operand_count() != 2) return std::nullopt;
  const HloInstruction* a = root->operand(0);
  const HloInstruction* b = root->operand(1);
  if (a->opcode() != HloOpcode::kParameter || b->opcode() != HloOpcode::kParameter || a == b) {
    return std::nullopt;
  }
  switch (root->opcode()) {
    case HloOpcode::kAdd: case HloOpcode::kMultiply: case HloOpcode::kMaximum:
    case HloOpcode::kMinimum: case HloOpcode::kAnd: case HloOpcode::kOr: case HloOpcode::kXor:
      return root->opcode();
    default:
      return std::nullopt;
  }
}

namespace {

// Relation of x to y given the class of the pair (a, b) and which of a/b x and y are:
// -1 less, 0 equal, 1 greater, 2 unordered.
int Relation(int cls, bool x_is_a, bool y_is_a) {
  if (x_is_a == y_is_a) {
    // x compared with itself: unordered only if it is NaN.
    const bool nan = x_is_a ? (cls == 3 || cls == 5) : (cls == 4 || cls == 5);
    return nan ? 2 : 0;
  }
  if (cls >= 3) return 2;
  const int ab = cls - 1;  // a relative to b
  return x_is_a ? ab : -ab;
}

bool Holds(ComparisonDirection dir, int rel) {
  switch (dir) {
    case ComparisonDirection::kEq: return rel == 0;
    case ComparisonDirection::kNe: return rel != 0;
    case ComparisonDirection::kLt: return rel == -1;
    case ComparisonDirection::kLe: return rel == -1 || rel == 0;
    case ComparisonDirection::kGt: return rel == 1;
    case ComparisonDirection::kGe: return rel == 1 || rel == 0;
  }
  return false;
}

}  // namespace

std::optional<PredicateTable> PredicateTable::Analyze(const HloInstruction& root,
                                                      std::vector<ComparedPair>& pairs) {
  // The instructions root depends on, operands first (iterative post order).
  std::vector<const HloInstruction*> order;
  {
    std::unordered_map<const HloInstruction*, bool> visited;
    std::vector<std::pair<const HloInstruction*, size_t>> stack{{&root, 0}};
    visited[&root] = true;
    while (!stack.empty()) {
      auto& [instr, next] = stack.back();
      if (next < static_cast<size_t>(instr->operand_count())) {
        const HloInstruction* op = instr->operand(static_cast<int64_t>(next++));
        if (!visited[op]) {
          visited[op] = true;
          stack.push_back({op, 0});
        }
        continue;
      }
      order.push_back(instr);
      stack.pop_back();
    }
  }
  // Per compare: its pair and which side each operand is.
  struct CompareInfo {
    size_t pair;
    bool lhs_is_a, rhs_is_a;
  };
  std::unordered_map<const HloInstruction*, CompareInfo> compares;
  auto side = [&](const HloInstruction* p, size_t* pair, bool* is_a) {
    if (p->opcode() != HloOpcode::kParameter) return false;
    for (size_t k = 0; k < pairs.size(); ++k) {
      if (p->parameter_number() == pairs[k].a || p->parameter_number() == pairs[k].b) {
        *pair = k;
        *is_a = p->parameter_number() == pairs[k].a;
        return true;
      }
    }
    return false;
  };
  for (const HloInstruction* instr : order) {
    switch (instr->opcode()) {
      case HloOpcode::kParameter:
        if (instr != &root) continue;
        return std::nullopt;
      case HloOpcode::kCompare: {
        size_t p0, p1;
        bool a0, a1;
        if (!side(instr->operand(0), &p0, &a0) || !side(instr->operand(1), &p1, &a1) || p0 != p1) {
          return std::nullopt;
        }
        const hlo::PrimitiveType t = instr->operand(0)->shape().element_type();
        if (t != pairs[p0].type) return std::nullopt;
        const int k = hlo::IsFloatingPointType(t) &&
                      instr->comparison_type() == ComparisonType::kTotalOrder;
        if (pairs[p0].kind >= 0 && pairs[p0].kind != k) return std::nullopt;
        pairs[p0].kind = k;
        compares[instr] = {p0, a0, a1};
        continue;
      }
      case HloOpcode::kAnd: case HloOpcode::kOr: case HloOpcode::kXor: case HloOpcode::kNot:
        if (instr->shape().element_type() != hlo::PRED || instr->shape().rank() != 0) {
          return std::nullopt;
        }
        // A pred parameter used as a value (not compared) is outside the table's form.
        for (const HloInstruction* op : instr->operands()) {
          if (op->opcode() == HloOpcode::kParameter) return std::nullopt;
        }
        continue;
      case HloOpcode::kConstant:
        if (instr->shape().element_type() != hlo::PRED || instr->shape().rank() != 0) {
          return std::nullopt;
        }
        continue;
      default:
        return std::nullopt;
    }
  }
  int64_t entries = 1;
  for (const ComparedPair& p : pairs) entries *= p.classes();
  if (entries > 4096) return std::nullopt;
  PredicateTable t;
  t.table_.resize(entries);
  std::vector<int> cls(pairs.size(), 0);
  std::unordered_map<const HloInstruction*, bool> value;
  for (int64_t e = 0; e < entries; ++e) {
    int64_t rest = e;
    for (size_t k = 0; k < pairs.size(); ++k) {
      cls[k] = static_cast<int>(rest % pairs[k].classes());
      rest /= pairs[k].classes();
    }
    for (const HloInstruction* instr : order) {
      bool v = false;
      switch (instr->opcode()) {
        case HloOpcode::kCompare: {
          const CompareInfo& c = compares.at(instr);
          v = Holds(instr->comparison_direction(), Relation(cls[c.pair], c.lhs_is_a, c.rhs_is_a));
          break;
        }
        case HloOpcode::kAnd: v = value[instr->operand(0)] && value[instr->operand(1)]; break;
        case HloOpcode::kOr: v = value[instr->operand(0)] || value[instr->operand(1)]; break;
        case HloOpcode::kXor: v = value[instr->operand(0)] != value[instr->operand(1)]; break;
        case HloOpcode::kNot: v = !value[instr->operand(0)]; break;
        case HloOpcode::kConstant: v = instr->literal().GetAsInt64(0) != 0; break;
        default: break;
      }
      value[instr] = v;
    }
    t.table_[e] = value[&root];
  }
  return t;
}

}  // namespace jx::cpu::internal

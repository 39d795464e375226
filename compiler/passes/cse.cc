#include "jx/compiler/passes/cse.h"

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/hash/hash.h"
#include "jx/compiler/hlo/hlo_module.h"
#include "jx/compiler/hlo/status_macros.h"

namespace jx::hlo {
namespace {

bool IsCseCandidate(const HloInstruction* instr) {
  switch (instr->opcode()) {
    case HloOpcode::kParameter:
    case HloOpcode::kRngBitGenerator:  // two draws are two draws, as in XLA
      return false;
    default:
      return !instr->HasSideEffect();
  }
}

// A hash consistent with "identical": equal instructions hash equally. Attributes other
// than the literal are left to the full comparison.
size_t HashInstruction(const HloInstruction* instr) {
  size_t h = absl::HashOf(static_cast<int>(instr->opcode()), instr->shape().dimensions(),
                          static_cast<int>(instr->shape().element_type()));
  for (const HloInstruction* operand : instr->operands()) h = absl::HashOf(h, operand);
  if (instr->opcode() == HloOpcode::kConstant && instr->literal().shape().IsArray()) {
    absl::Span<const uint8_t> bytes = instr->literal().untyped_data();
    h = absl::HashOf(h, absl::string_view(reinterpret_cast<const char*>(bytes.data()),
                                          bytes.size()));
  }
  return h;
}

bool Identical(const HloInstruction* a, const HloInstruction* b) {
  return a->operands() == b->operands() && a->IdenticalIgnoringOperands(*b);
}

// The set of distinct instructions seen so far, keyed by "identical": one open-addressing
// table instead of a bucket vector per hash (a malloc per distinct instruction).
struct IdenticalHash {
  size_t operator()(const HloInstruction* instr) const { return HashInstruction(instr); }
};
struct IdenticalEq {
  bool operator()(const HloInstruction* a, const HloInstruction* b) const { return a == b || Identical(a, b); }
};

}  // namespace

absl::StatusOr<bool> HloCSE::RunOnComputation(HloComputation* computation) {
  // Operands come before users, so once an instruction's operands are canonical, its own
  // duplicates have exactly the same operand pointers.
  std::vector<HloInstruction*> order = computation->MakeInstructionPostOrder();
  absl::flat_hash_set<HloInstruction*, IdenticalHash, IdenticalEq> seen;
  seen.reserve(order.size());  // hashes are computed once: no rehashing
  bool changed = false;
  for (HloInstruction* instr : order) {
    if (!IsCseCandidate(instr)) continue;
    auto [it, inserted] = seen.insert(instr);
    if (inserted) continue;
    HloInstruction* equivalent = *it;
    // instr's operands are shared with `equivalent`, so only instr itself goes away.
    HLO_RETURN_IF_ERROR(instr->ReplaceAllUsesWith(equivalent));
    HLO_RETURN_IF_ERROR(computation->RemoveInstruction(instr));
    changed = true;
  }
  return changed;
}

absl::StatusOr<bool> HloCSE::Run(HloModule* module) {
  bool changed = false;
  for (HloComputation* computation : module->MakeComputationPostOrder()) {
    HLO_ASSIGN_OR_RETURN(bool c_changed, RunOnComputation(computation));
    changed |= c_changed;
  }
  return changed;
}

}  // namespace jx::hlo

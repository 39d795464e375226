#include "jx/compiler/passes/cse.h"

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/hash/hash.h"
#include "jx/compiler/hlo/hlo_module.h"
#include "jx/compiler/hlo/instruction_map.h"
#include "jx/compiler/hlo/instruction_prefetch.h"
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

struct IdenticalHash {
  size_t operator()(const HloInstruction* instr) const { return HashInstruction(instr); }
};
struct IdenticalEq {
  bool operator()(const HloInstruction* a, const HloInstruction* b) const { return a == b || Identical(a, b); }
};

// Past this many users of its least-read operand, an instruction is looked up by hash: a
// scan of the users would make many distinct readers of one value (the slices or
// get-tuple-elements of one array or tuple) quadratic.
constexpr int64_t kMaxUsersToScan = 32;

const HloInstruction* LeastReadOperand(const HloInstruction& instr) {
  const HloInstruction* least = nullptr;
  for (const HloInstruction* operand : instr.operands()) {
    if (least == nullptr || operand->user_count() < least->user_count()) least = operand;
  }
  return least;
}

// Whether the computation holds two identical CSE candidates, read in storage order. Where it
// holds none, the post-order run merges nothing (its first merge is such a pair, met before
// anything changed), so a computation without duplicates needs no post order. A candidate is
// compared with the instructions the run would compare it with (the other readers of its
// least-read operand, or the hash table) in either order: a pair is met at its first member.
bool HasIdenticalPair(const HloComputation& computation) {
  absl::flat_hash_set<const HloInstruction*, IdenticalHash, IdenticalEq> hashed;
  bool found = false;
  ForEachInStorageOrder(computation, PrefetchInstructionHead, [&](const HloInstruction* instr) {
    if (!IsCseCandidate(instr)) return true;
    const HloInstruction* least_read = LeastReadOperand(*instr);
    if (least_read == nullptr || least_read->user_count() > kMaxUsersToScan) {
      found = !hashed.insert(instr).second;
      return !found;
    }
    for (const HloInstruction* user : least_read->users()) {
      if (user != instr && Identical(user, instr)) {
        found = true;
        break;
      }
    }
    return !found;
  });
  return found;
}

// The instructions of one computation already visited in post order, each the only one of
// its kind (the walk removes later duplicates), found by what an instruction is identical
// to. Two instructions can only be identical if they read the same operands, so most are
// looked up among the users of their least-read operand: no table the size of the module,
// and the candidates sit next to the instruction's own operands. Instructions without
// operands (constants, iotas) and those whose operands are all widely read are kept in a
// hash table instead.
class VisitedInstructions {
 public:
  explicit VisitedInstructions(const std::vector<HloInstruction*>& order) : order_(order) {}

  // The visited instruction identical to the one at `order[index]`, or null. Records that
  // instruction as visited when none is.
  HloInstruction* FindOrAdd(size_t index) {
    HloInstruction* instr = order_[index];
    const HloInstruction* least_read = LeastReadOperand(*instr);
    if (least_read == nullptr || least_read->user_count() > kMaxUsersToScan) {
      auto [it, inserted] = hashed_.insert(instr);
      if (inserted) return nullptr;
      NumberPositions();  // before the merge this pair leads to removes an instruction
      return *it;
    }
    for (HloInstruction* user : least_read->users()) {
      if (user != instr && Identical(user, instr) && Visited(user, index)) return user;
    }
    return nullptr;
  }

  // After the users of the instruction at `order[index]` were moved to `equivalent`: if
  // `equivalent` has just become widely read, the visited users that were found by scanning
  // its users so far go into the hash table, where a later instruction reading it will
  // look them up.
  void UsersMoved(HloInstruction* equivalent, int64_t users_before, size_t index) {
    if (users_before > kMaxUsersToScan || equivalent->user_count() <= kMaxUsersToScan) return;
    for (HloInstruction* user : equivalent->users()) {
      if (IsCseCandidate(user) && Visited(user, index)) hashed_.insert(user);
    }
  }

 private:
  // Whether instr comes before `order[index]`. Asked only once an identical pair is found.
  bool Visited(const HloInstruction* instr, size_t index) {
    NumberPositions();
    return static_cast<size_t>(position_->Get(instr)) < index;
  }

  // Numbers the instructions of `order` by position, once. Identical pairs are rare, so this
  // waits for the first one, on either path; it must come before that pair's merge removes
  // an instruction of `order` (a hash-table merge that numbered nothing, followed by a scan
  // that did, read a removed instruction).
  void NumberPositions() {
    if (position_.has_value()) return;
    position_.emplace(*order_.front()->parent());
    for (size_t i = 0; i < order_.size(); ++i) (*position_)[order_[i]] = static_cast<int64_t>(i);
  }

  const std::vector<HloInstruction*>& order_;
  absl::flat_hash_set<HloInstruction*, IdenticalHash, IdenticalEq> hashed_;
  std::optional<InstructionMap<int64_t>> position_;
};

}  // namespace

absl::StatusOr<bool> HloCSE::RunOnComputation(HloComputation* computation) {
  if (!HasIdenticalPair(*computation)) return false;  // most computations of a big program
  // Operands come before users, so once an instruction's operands are canonical, its own
  // duplicates have exactly the same operand pointers.
  const std::vector<HloInstruction*> order = computation->MakeInstructionPostOrder();
  VisitedInstructions visited(order);
  bool changed = false;
  for (size_t i = 0; i < order.size(); ++i) {
    HloInstruction* instr = order[i];
    if (!IsCseCandidate(instr)) continue;
    HloInstruction* equivalent = visited.FindOrAdd(i);
    if (equivalent == nullptr) continue;
    // instr's operands are shared with `equivalent`, so only instr itself goes away.
    const int64_t users_before = equivalent->user_count();
    HLO_RETURN_IF_ERROR(instr->ReplaceAllUsesWith(equivalent));
    HLO_RETURN_IF_ERROR(computation->RemoveInstruction(instr));
    visited.UsersMoved(equivalent, users_before, i);
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

#include "jx/compiler/hlo/hlo_computation.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "jx/compiler/hlo/hlo_module.h"
#include "jx/compiler/hlo/instruction_prefetch.h"
#include "jx/compiler/hlo/str_util.h"

namespace jx::hlo {

HloComputation::~HloComputation() {
  // Users point into this list; drop edges first so destruction order does not matter.
  for (auto& instr : instructions_) {
    if (instr == nullptr) continue;
    instr->users_.clear();
    instr->user_set_.reset();
  }
}

HloInstruction* HloComputation::Adopt(std::unique_ptr<HloInstruction> instr, std::string name) {
  HloInstruction* raw = instr.get();
  raw->parent_ = this;
  raw->unique_id_ = parent_->NewUniqueId();
  raw->name_ = std::move(name);
  for (HloInstruction* operand : raw->operands_) operand->AddUser(raw);
  if (raw->opcode() == HloOpcode::kParameter) {
    const int64_t n = raw->parameter_number();
    if (n >= num_parameters()) parameters_.resize(n + 1, nullptr);
    parameters_[n] = raw;
  }
  raw->position_ = static_cast<uint32_t>(instructions_.size());
  instructions_.push_back(std::move(instr));
  ++live_count_;
  schedule_.clear();
  InvalidatePostOrder();
  if (!raw->called_.empty()) CallGraphChanged();
  return raw;
}

void HloComputation::InvalidatePostOrder() {
  post_order_valid_ = false;
  if (orders_callees_) CallGraphChanged();
}

void HloComputation::CallGraphChanged() { parent_->InvalidateComputationOrder(); }

HloInstruction* HloComputation::AddInstruction(std::unique_ptr<HloInstruction> instr,
                                               std::string_view name) {
  std::string prefix =
      name.empty() ? std::string(HloOpcodeString(instr->opcode())) : std::string(name);
  std::string unique = parent_->UniqueInstructionName(prefix, /*exact_if_free=*/!name.empty());
  return Adopt(std::move(instr), std::move(unique));
}

absl::StatusOr<HloInstruction*> HloComputation::AddInstructionWithExactName(
    std::unique_ptr<HloInstruction> instr, std::string_view name) {
  if (absl::Status st = parent_->ReserveInstructionName(name); !st.ok()) return st;
  return Adopt(std::move(instr), std::string(name));
}

HloInstruction* HloComputation::GetInstructionWithName(std::string_view name) const {
  for (const auto& instr : instructions_) {
    if (instr != nullptr && instr->name() == name) return instr.get();
  }
  return nullptr;
}

bool HloComputation::Owns(const HloInstruction* instr) const {
  return instr != nullptr && instr->parent_ == this && instr->position_ < instructions_.size() &&
         instructions_[instr->position_].get() == instr;
}

void HloComputation::Compact() {
  // Each live instruction learns its new slot: on a big computation a cache miss apiece
  // unless loaded ahead (a pass moving a whole group out compacts when half is gone).
  constexpr size_t kAhead = kPrefetchAhead;
  const size_t n = instructions_.size();
  size_t out = 0;
  for (size_t i = 0; i < n; ++i) {
    if (i + kAhead < n && instructions_[i + kAhead] != nullptr) {
      __builtin_prefetch(instructions_[i + kAhead].get(), /*rw=*/1);
    }
    if (instructions_[i] == nullptr) continue;
    instructions_[i]->position_ = static_cast<uint32_t>(out);
    if (out != i) instructions_[out] = std::move(instructions_[i]);
    ++out;
  }
  instructions_.resize(out);
}

bool HloComputation::IsEntryComputation() const {
  return parent_->entry_computation() == this;
}

std::vector<HloInstruction*> HloComputation::MakeInstructionPostOrder() const {
  std::lock_guard<std::mutex> lock(post_order_mutex_);
  if (!post_order_valid_) {
    post_order_ = ComputePostOrder();
    post_order_valid_ = true;
  }
  return post_order_;
}

std::vector<HloInstruction*> HloComputation::ComputePostOrder() const {
  std::vector<HloInstruction*> order;
  order.reserve(live_count_);
  // The unused instructions the walk starts from: one pass reading only what the walk reads
  // first (the users, beside the operands).
  std::vector<HloInstruction*> starts;
  ForEachInStorageOrder(*this, PrefetchInstructionHead, [&](HloInstruction* instr) {
    if (instr->user_count() == 0 && instr != root_) starts.push_back(instr);
    return true;
  });
  // The visited set: a flag per slot of the instruction list (far cheaper than hashing
  // pointers on big programs). An operand of another computation (fusion moving a group,
  // or a malformed graph) has no slot here and is hashed.
  std::vector<uint8_t> visited_slots(instructions_.size(), 0);
  absl::flat_hash_set<const HloInstruction*> visited_strays;
  auto visit = [&](const HloInstruction* instr) {
    if (instr->parent_ != this || instr->position_ >= visited_slots.size()) [[unlikely]] {
      return visited_strays.insert(instr).second;
    }
    uint8_t& flag = visited_slots[instr->position_];
    if (flag != 0) return false;
    flag = 1;
    return true;
  };
  // Explicit DFS stack. A frame keeps what the walk needs of its instruction (the operand
  // array and count), so finishing it does not read the instruction again.
  struct Frame {
    HloInstruction* instr;
    HloInstruction* const* operands;
    uint32_t operand_count;
    uint32_t next;
  };
  std::vector<Frame> stack;
  size_t own = 0;  // instructions of this computation in order (a malformed graph may stray)
  // On a big computation every step of the walk is a cache miss unless it was foreseen. Going
  // down, the walk follows operand edges, and a program built operands first (lowered, parsed,
  // cloned) keeps an operand just before its user in storage: the instruction kPrefetchAhead
  // slots before the one pushed is where a long descent will be by then. Going up, a frame
  // reads its operand array again (inline in the instruction for one or two operands): the
  // frame kPrefetchAhead below the top is where the climb will be.
  const size_t slots = instructions_.size();
  auto push = [&](HloInstruction* instr) {
    own += instr->parent_ == this;  // read by visit just before: no second miss
    if (instr->parent_ == this && instr->position_ >= kPrefetchAhead && instr->position_ < slots) {
      if (const HloInstruction* ahead = instructions_[instr->position_ - kPrefetchAhead].get()) {
        PrefetchInstructionHead(ahead);
      }
    }
    stack.push_back({instr, instr->operands_.data(), static_cast<uint32_t>(instr->operands_.size()), 0});
  };
  auto visit_from = [&](HloInstruction* start) {
    if (!visit(start)) return;
    push(start);
    while (!stack.empty()) {
      Frame& top = stack.back();
      if (top.next < top.operand_count) {
        HloInstruction* operand = top.operands[top.next++];
        if (visit(operand)) push(operand);  // may move the stack: top is not used after
        continue;
      }
      order.push_back(top.instr);
      stack.pop_back();
      if (stack.size() > kPrefetchAhead) __builtin_prefetch(stack[stack.size() - 1 - kPrefetchAhead].operands);
    }
  };
  // Nothing uses an unused instruction, so no walk reaches one before its own turn.
  for (HloInstruction* start : starts) visit_from(start);
  if (root_ != nullptr) visit_from(root_);
  // Anything left is only used by instructions outside every walk (cycles); keep it.
  if (own < static_cast<size_t>(live_count_)) {
    for (const auto& instr : instructions_) {
      if (instr != nullptr) visit_from(instr.get());
    }
  }
  return order;
}

std::vector<HloInstruction*> HloComputation::MakeSequentialOrder() const {
  // Operands can be rewired without adding or removing anything: check the order holds.
  bool valid = static_cast<int64_t>(schedule_.size()) == live_count_;
  absl::flat_hash_set<const HloInstruction*> done;
  for (size_t i = 0; valid && i < schedule_.size(); ++i) {
    const HloInstruction* instr = schedule_[i];
    valid = Owns(instr) && done.insert(instr).second;
    for (int64_t j = 0; valid && j < instr->operand_count(); ++j) {
      valid = done.contains(instr->operand(j));
    }
  }
  return valid ? schedule_ : MakeInstructionPostOrder();
}

absl::Status HloComputation::RemoveInstruction(HloInstruction* instr) {
  if (!Owns(instr)) {
    return absl::InvalidArgumentError(
        StrCat("instruction ", instr->name(), " is not in computation ", name_));
  }
  if (instr->user_count() > 0) {
    return absl::FailedPreconditionError(StrCat("cannot remove ", instr->name(), " from ",
                                                      name_, ": it still has ",
                                                      instr->user_count(), " user(s)"));
  }
  if (instr == root_) {
    return absl::FailedPreconditionError(
        StrCat("cannot remove ", instr->name(), ": it is the root of ", name_));
  }
  if (instr->opcode() == HloOpcode::kParameter) {
    const int64_t n = instr->parameter_number();
    if (n < num_parameters() && parameters_[n] == instr) {
      parameters_.erase(parameters_.begin() + n);
      // Later parameters shift down so numbering stays dense.
      for (int64_t i = n; i < num_parameters(); ++i) parameters_[i]->set_parameter_number(i);
    }
  }
  instr->DetachFromOperands();
  Release(instr);
  return absl::OkStatus();
}

std::unique_ptr<HloInstruction> HloComputation::Release(HloInstruction* instr) {
  std::unique_ptr<HloInstruction> owned = std::move(instructions_[instr->position_]);
  --live_count_;
  // Compacting is linear, so wait until half the slots are empty; never under a live
  // InstructionRange (it would skip or repeat instructions).
  const size_t dead = instructions_.size() - static_cast<size_t>(live_count_);
  if (dead > 64 && dead > static_cast<size_t>(live_count_) &&
      live_ranges_.load(std::memory_order_relaxed) == 0) {
    Compact();
  }
  schedule_.clear();
  InvalidatePostOrder();
  if (!owned->called_.empty()) CallGraphChanged();
  return owned;
}

absl::Status HloComputation::MoveInstructionFrom(HloInstruction* instr) {
  HloComputation* from = instr->parent_;
  if (from == nullptr || from == this || from->parent_ != parent_ || !from->Owns(instr)) {
    return absl::InvalidArgumentError(StrCat("cannot move ", instr->name(), " into ", name_,
                                             ": it is not in another computation of the module"));
  }
  if (instr->opcode() == HloOpcode::kParameter || instr == from->root_) {
    return absl::FailedPreconditionError(StrCat("cannot move ", instr->name(), " out of ", from->name_,
                                                ": it is a parameter or the root"));
  }
  std::unique_ptr<HloInstruction> owned = from->Release(instr);
  instr->parent_ = this;
  instr->position_ = static_cast<uint32_t>(instructions_.size());
  instructions_.push_back(std::move(owned));
  ++live_count_;
  schedule_.clear();
  InvalidatePostOrder();  // Release told the module if instr calls computations
  return absl::OkStatus();
}

absl::Status HloComputation::RemoveInstructionAndUnusedOperands(HloInstruction* instr) {
  std::vector<HloInstruction*> worklist = {instr};
  absl::flat_hash_set<HloInstruction*> removed;
  while (!worklist.empty()) {
    HloInstruction* next = worklist.back();
    worklist.pop_back();
    if (removed.contains(next) || next->user_count() > 0 || next == root_ ||
        (next != instr && (next->opcode() == HloOpcode::kParameter || next->HasSideEffect()))) {
      continue;
    }
    const InstructionVector operands = next->operands();
    if (absl::Status st = RemoveInstruction(next); !st.ok()) return st;
    removed.insert(next);
    for (HloInstruction* operand : operands) worklist.push_back(operand);
  }
  return absl::OkStatus();
}

absl::Status HloComputation::ReplaceInstruction(HloInstruction* old_instr,
                                                HloInstruction* new_instr) {
  if (absl::Status st = old_instr->ReplaceAllUsesWith(new_instr); !st.ok()) return st;
  if (old_instr->user_count() > 0 || old_instr == new_instr) return absl::OkStatus();
  return RemoveInstructionAndUnusedOperands(old_instr);
}

ProgramShape HloComputation::ComputeProgramShape() const {
  ProgramShape shape;
  for (const HloInstruction* p : parameters_) {
    shape.parameters.push_back(p != nullptr ? p->shape() : Shape());
    shape.parameter_names.push_back(p != nullptr ? p->name() : "");
  }
  if (root_ != nullptr) shape.result = root_->shape();
  return shape;
}

}  // namespace jx::hlo

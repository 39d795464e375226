// HloModule::Clone: a structural deep copy. Printing a module and parsing the text back
// allocated and scanned the whole program twice, the biggest single cost of compiling a large
// program (issue 16); this copies the objects directly, each once.
#include "jx/compiler/hlo/hlo_module.h"

#include <mutex>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "jx/compiler/hlo/status_macros.h"
#include "jx/compiler/hlo/str_util.h"

namespace jx::hlo {
namespace {

// The copies of one computation's instructions, by slot of its instruction list.
struct ComputationCopy {
  const HloComputation* original = nullptr;
  HloComputation* copy = nullptr;
  std::vector<HloInstruction*> at_slot;
};

}  // namespace

absl::StatusOr<std::unique_ptr<HloModule>> HloModule::Clone() const {
  auto clone = std::make_unique<HloModule>(name_);
  // The name generators as they are, so the copy names new instructions as the original would.
  clone->next_unique_id_ = next_unique_id_;
  clone->instruction_names_ = instruction_names_;
  clone->next_computation_suffix_ = next_computation_suffix_;

  // Computations first, in creation order (a callee may come after its caller).
  std::vector<ComputationCopy> copies(computations_.size());
  absl::flat_hash_map<const HloComputation*, ComputationCopy*> copy_of;
  copy_of.reserve(computations_.size());
  for (size_t k = 0; k < computations_.size(); ++k) {
    const HloComputation& from = *computations_[k];
    auto to = std::unique_ptr<HloComputation>(new HloComputation(clone.get(), from.name_));
    copies[k].original = &from;
    copies[k].copy = to.get();
    copy_of.emplace(&from, &copies[k]);
    clone->computation_names_.emplace(from.name_, to.get());
    clone->computations_.push_back(std::move(to));
  }
  auto computation_copy = [&](const HloComputation* c, std::string_view user) -> absl::StatusOr<HloComputation*> {
    if (c == nullptr) return nullptr;
    auto it = copy_of.find(c);
    if (it == copy_of.end()) {
      return absl::FailedPreconditionError(
          StrCat("cannot clone module ", name_, ": ", user, " refers to computation ", c->name(),
                 ", which is not in the module"));
    }
    return it->second->copy;
  };

  // Then every instruction without its edges, slot by slot (removed slots are dropped).
  for (ComputationCopy& cc : copies) {
    const HloComputation& from = *cc.original;
    HloComputation& to = *cc.copy;
    cc.at_slot.assign(from.instructions_.size(), nullptr);
    to.instructions_.reserve(from.live_count_);
    for (size_t slot = 0; slot < from.instructions_.size(); ++slot) {
      const HloInstruction* instr = from.instructions_[slot].get();
      if (instr == nullptr) continue;
      std::unique_ptr<HloInstruction> copy = instr->CloneDetached();
      copy->name_ = instr->name_;
      copy->unique_id_ = instr->unique_id_;
      copy->parent_ = &to;
      copy->position_ = static_cast<uint32_t>(to.instructions_.size());
      cc.at_slot[slot] = copy.get();
      to.instructions_.push_back(std::move(copy));
    }
    to.live_count_ = from.live_count_;
  }
  // An instruction's copy; `near` (the computation being copied) answers without a lookup.
  auto instruction_copy = [&](const HloInstruction* instr, const ComputationCopy& near,
                              std::string_view user) -> absl::StatusOr<HloInstruction*> {
    if (instr == nullptr) return nullptr;
    const ComputationCopy* cc = &near;
    if (instr->parent_ != near.original) {
      auto it = copy_of.find(instr->parent_);
      cc = it == copy_of.end() ? nullptr : it->second;
    }
    if (cc == nullptr || !cc->original->Owns(instr)) {
      return absl::FailedPreconditionError(StrCat("cannot clone module ", name_, ": ", user, " refers to ",
                                                  instr->name(), ", which is not in the module"));
    }
    return cc->at_slot[instr->position_];
  };

  // Then the edges, called computations and each computation's parameters, root and schedule.
  for (ComputationCopy& cc : copies) {
    const HloComputation& from = *cc.original;
    HloComputation& to = *cc.copy;
    for (size_t slot = 0; slot < from.instructions_.size(); ++slot) {
      const HloInstruction* instr = from.instructions_[slot].get();
      if (instr == nullptr) continue;
      HloInstruction* copy = cc.at_slot[slot];
      copy->operands_.reserve(instr->operands_.size());
      for (const HloInstruction* operand : instr->operands_) {
        HLO_ASSIGN_OR_RETURN(HloInstruction * mapped, instruction_copy(operand, cc, instr->name()));
        copy->operands_.push_back(mapped);
      }
      copy->users_.reserve(instr->users_.size());
      for (const HloInstruction* user : instr->users_) {
        HLO_ASSIGN_OR_RETURN(HloInstruction * mapped, instruction_copy(user, cc, instr->name()));
        copy->users_.push_back(mapped);
      }
      if (instr->user_set_ != nullptr) {
        copy->user_set_ =
            std::make_unique<absl::flat_hash_set<const HloInstruction*>>(copy->users_.begin(), copy->users_.end());
      }
      for (HloComputation*& called : copy->called_) {
        HLO_ASSIGN_OR_RETURN(called, computation_copy(called, instr->name()));
      }
    }
    to.parameters_.reserve(from.parameters_.size());
    for (const HloInstruction* p : from.parameters_) {
      HLO_ASSIGN_OR_RETURN(HloInstruction * mapped, instruction_copy(p, cc, from.name()));
      to.parameters_.push_back(mapped);
    }
    HLO_ASSIGN_OR_RETURN(to.root_, instruction_copy(from.root_, cc, from.name()));
    if (from.fusion_instruction_ != nullptr) {
      HLO_ASSIGN_OR_RETURN(to.fusion_instruction_, instruction_copy(from.fusion_instruction_, cc, from.name()));
    }
    to.schedule_.reserve(from.schedule_.size());
    for (const HloInstruction* instr : from.schedule_) {
      HLO_ASSIGN_OR_RETURN(HloInstruction * mapped, instruction_copy(instr, cc, from.name()));
      to.schedule_.push_back(mapped);
    }
    // The post order too, where the original has one: the copy's own first walk would find the
    // same order (same graph, same instruction order) at the cost of a walk over the program.
    std::lock_guard<std::mutex> lock(from.post_order_mutex_);
    if (from.post_order_valid_) {
      to.post_order_.reserve(from.post_order_.size());
      for (const HloInstruction* instr : from.post_order_) {
        HLO_ASSIGN_OR_RETURN(HloInstruction * mapped, instruction_copy(instr, cc, from.name()));
        to.post_order_.push_back(mapped);
      }
      to.post_order_valid_ = true;
    }
  }
  HLO_ASSIGN_OR_RETURN(clone->entry_, computation_copy(entry_, StrCat("module ", name_, "'s entry")));
  return clone;
}

}  // namespace jx::hlo

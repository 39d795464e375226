// HloComputation: a function of HLO instructions: parameters, a root, and the instructions
// it owns. Computations are created by their HloModule (HloModule::AddComputation) and
// filled by HloBuilder or the parser. Graph walks are iterative, so deep programs cannot
// overflow the stack.
//
//   HloComputation* c = module->AddComputation("add");
//   for (HloInstruction* instr : c->MakeInstructionPostOrder()) { ... }   // operands first
//   c->ReplaceInstruction(old_instr, new_instr);  // rewire users, drop old_instr
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "jx/compiler/hlo/hlo_instruction.h"

namespace jx::hlo {

class HloComputation {
 public:
  // The owned instructions in insertion order. A vector, so walks over it read memory in
  // sequence (a linked list made every step of every walk a dependent cache miss on big
  // programs); a removed instruction leaves a null slot until the vector is compacted.
  using InstructionList = std::vector<std::unique_ptr<HloInstruction>>;

  // Iterates the owned instructions (insertion order) as HloInstruction*. As with a list,
  // instructions added while iterating are visited and removed ones are skipped: the
  // computation does not compact its storage while a range is alive.
  class InstructionRange {
   public:
    class Iterator {
     public:
      Iterator(const InstructionList* list, size_t i) : list_(list), i_(i) { Skip(); }
      HloInstruction* operator*() const { return (*list_)[i_].get(); }
      Iterator& operator++() {
        ++i_;
        Skip();
        return *this;
      }
      // end() is "past the last slot" at the time of comparison.
      bool operator==(const Iterator& other) const { return Index() == other.Index(); }
      bool operator!=(const Iterator& other) const { return !(*this == other); }

     private:
      size_t Index() const { return std::min(i_, list_->size()); }
      void Skip() {
        while (i_ < list_->size() && (*list_)[i_] == nullptr) ++i_;
      }
      const InstructionList* list_;
      size_t i_;
    };
    explicit InstructionRange(const HloComputation& c) : c_(&c) {
      c_->live_ranges_.fetch_add(1, std::memory_order_relaxed);
    }
    InstructionRange(const InstructionRange& other) : InstructionRange(*other.c_) {}
    InstructionRange& operator=(const InstructionRange&) = delete;
    ~InstructionRange() { c_->live_ranges_.fetch_sub(1, std::memory_order_relaxed); }
    Iterator begin() const { return Iterator(&c_->instructions_, 0); }
    Iterator end() const { return Iterator(&c_->instructions_, SIZE_MAX); }

   private:
    const HloComputation* c_;
  };

  HloComputation(const HloComputation&) = delete;
  HloComputation& operator=(const HloComputation&) = delete;
  ~HloComputation();

  const std::string& name() const { return name_; }
  HloModule* parent() const { return parent_; }

  // Takes ownership, gives the instruction a module-unique id and name (`name` if given and
  // free, else "<name or opcode>.<id>") and links it as a user of its operands. Parameters
  // also take their slot in parameter_instructions() (parameter_number() must be set).
  HloInstruction* AddInstruction(std::unique_ptr<HloInstruction> instr,
                                 std::string_view name = "");
  // Like AddInstruction, but keeps `name` exactly (the parser); fails if it is taken.
  absl::StatusOr<HloInstruction*> AddInstructionWithExactName(
      std::unique_ptr<HloInstruction> instr, std::string_view name);

  int64_t num_parameters() const { return static_cast<int64_t>(parameters_.size()); }
  HloInstruction* parameter_instruction(int64_t i) const { return parameters_[i]; }
  const std::vector<HloInstruction*>& parameter_instructions() const { return parameters_; }

  HloInstruction* root_instruction() const { return root_; }
  void set_root_instruction(HloInstruction* root) {
    root_ = root;
    InvalidatePostOrder();
  }

  int64_t instruction_count() const { return live_count_; }
  InstructionRange instructions() const { return InstructionRange(*this); }
  bool ContainsInstruction(const HloInstruction* instr) const {
    return instr != nullptr && instr->parent() == this;
  }
  HloInstruction* GetInstructionWithName(std::string_view name) const;

  // Every instruction after its operands. Unused instructions come first (in insertion
  // order, each after its own operands); the root comes last. The order is kept until the
  // graph changes (an instruction added or removed, an operand edge rewired, the root moved),
  // so a pass that changed nothing does not make the next one walk the computation again.
  std::vector<HloInstruction*> MakeInstructionPostOrder() const;

  // The sequential order a scheduler chose (HloScheduling); empty if none. Adding or
  // removing an instruction clears it.
  const std::vector<HloInstruction*>& schedule() const { return schedule_; }
  void set_schedule(std::vector<HloInstruction*> order) { schedule_ = std::move(order); }
  // The order to run the instructions in: the schedule while it still holds every
  // instruction once, each after its operands; else MakeInstructionPostOrder().
  std::vector<HloInstruction*> MakeSequentialOrder() const;

  // Removes an instruction that has no users and is not the root. Removing a parameter is
  // allowed only for fusion/non-entry use by passes that renumber parameters themselves.
  absl::Status RemoveInstruction(HloInstruction* instr);
  // Moves instr from another computation of the module into this one, keeping its name, id,
  // attributes and operand and user edges: the caller rewires the edges that would cross
  // computations (fusion moves a group's members into the fused computation instead of
  // copying them). Parameters and roots do not move.
  absl::Status MoveInstructionFrom(HloInstruction* instr);
  // Removes instr, then every operand left without users (transitively; never parameters).
  absl::Status RemoveInstructionAndUnusedOperands(HloInstruction* instr);
  // Rewires all uses of old_instr (and the root) to new_instr, then removes old_instr and
  // its newly dead operands.
  absl::Status ReplaceInstruction(HloInstruction* old_instr, HloInstruction* new_instr);
  absl::Status ReplaceAllUsesWith(HloInstruction* old_instr, HloInstruction* new_instr) {
    return old_instr->ReplaceAllUsesWith(new_instr);
  }

  bool IsFusionComputation() const { return fusion_instruction_ != nullptr; }
  HloInstruction* FusionInstruction() const { return fusion_instruction_; }
  void SetFusionInstruction(HloInstruction* fusion) { fusion_instruction_ = fusion; }
  bool IsEntryComputation() const;

  ProgramShape ComputeProgramShape() const;
  // "%name (p: f32[8]) -> f32[8] {\n  ...\n}" (ENTRY-prefixed for the entry computation).
  std::string ToString(const HloPrintOptions& options = {}) const;

 private:
  friend class HloModule;
  friend class HloInstruction;  // operand edits invalidate the post order
  HloComputation(HloModule* parent, std::string name) : parent_(parent), name_(std::move(name)) {}
  HloInstruction* Adopt(std::unique_ptr<HloInstruction> instr, std::string name);
  // True if instr is held in this computation's instruction list.
  bool Owns(const HloInstruction* instr) const;
  // Empties instr's slot (compacting when half the slots are empty) and hands it over.
  std::unique_ptr<HloInstruction> Release(HloInstruction* instr);
  // Drops the null slots of removed instructions, keeping the order.
  void Compact();
  std::vector<HloInstruction*> ComputePostOrder() const;
  // After any edit of the instruction graph: drops the kept post order, and the module's
  // computation order when this computation's callees are ordered by it.
  void InvalidatePostOrder();
  // After an edit of which computations this computation's instructions call.
  void CallGraphChanged();

  HloModule* parent_;
  std::string name_;
  InstructionList instructions_;     // null slots: removed instructions
  int64_t live_count_ = 0;           // non-null slots
  mutable std::atomic<int> live_ranges_{0};  // InstructionRanges alive (no compaction then)
  std::vector<HloInstruction*> parameters_;
  HloInstruction* root_ = nullptr;
  HloInstruction* fusion_instruction_ = nullptr;
  std::vector<HloInstruction*> schedule_;
  // MakeInstructionPostOrder's last answer while post_order_valid_; the mutex lets const
  // walks run from several threads.
  mutable std::mutex post_order_mutex_;
  mutable std::vector<HloInstruction*> post_order_;
  mutable bool post_order_valid_ = false;
  // Set by the module's computation order: whether it visits this computation's callees in
  // this computation's instruction post order (it calls two or more distinct computations).
  mutable bool orders_callees_ = false;
};

}  // namespace jx::hlo

// HloModule: a compilation unit: named computations (one of them the entry) plus the
// unique-id and name generators every instruction draws from.
//
//   auto module = std::make_unique<HloModule>("jit_f");
//   HloBuilder b(module.get(), "main");            // adds computation "main"
//   ... b.Parameter(0, shape), b.Sin(x) ...
//   module->set_entry_computation(b.Build(root).value());
//   std::cout << module->ToString();               // XLA-style text; ParseHloModule reads it
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "jx/compiler/hlo/hlo_computation.h"
#include "jx/compiler/hlo/name_uniquer.h"

namespace jx::hlo {

class HloModule {
 public:
  explicit HloModule(std::string name) : name_(std::move(name)) {}
  HloModule(const HloModule&) = delete;
  HloModule& operator=(const HloModule&) = delete;

  const std::string& name() const { return name_; }

  // Adds an empty computation; `name` is uniquified ("add", then "add.1", ...).
  HloComputation* AddComputation(std::string_view name);
  // The parser's variant: keeps `name` exactly, fails if taken.
  absl::StatusOr<HloComputation*> AddComputationWithExactName(std::string_view name);
  // Fails if c is the entry or still called by an instruction of another computation.
  absl::Status RemoveComputation(HloComputation* c);
  // Removes all of `dead` in one pass over the module (removing them one at a time walks
  // the module once each); fails, removing none, if one is the entry, is not in the module,
  // or is called by an instruction of a computation not in `dead`.
  absl::Status RemoveComputations(absl::Span<HloComputation* const> dead);

  HloComputation* entry_computation() const { return entry_; }
  void set_entry_computation(HloComputation* c) {
    entry_ = c;
    InvalidateComputationOrder();
  }

  // In creation order.
  std::vector<HloComputation*> computations() const;
  int64_t computation_count() const { return static_cast<int64_t>(computations_.size()); }
  HloComputation* GetComputationWithName(std::string_view name) const;
  // Callees before callers (iterative walk); computations no instruction calls come in
  // creation order, the entry last. Kept until the call graph changes (a computation added
  // or removed, the entry moved, an instruction that calls computations added, removed or
  // retargeted, or the instruction order of a computation whose callees it orders), so
  // the passes that list the computations do not each read every instruction.
  std::vector<HloComputation*> MakeComputationPostOrder() const;

  // Ids are module-unique and never reused.
  int64_t NewUniqueId() { return next_unique_id_++; }
  // Returns `prefix` itself when exact_if_free and unused, else "prefix.<n>" unused so far.
  std::string UniqueInstructionName(std::string_view prefix, bool exact_if_free = false);
  absl::Status ReserveInstructionName(std::string_view name);

  // "HloModule name, entry_computation_layout={...}\n\n<computations>".
  std::string ToString(const HloPrintOptions& options = {}) const;
  // A deep copy, made structurally (hlo_module_clone.cc): the same computations and
  // instructions in the same order, with their names, ids, attributes, user order and
  // schedules, and the same name generators, so the copy prints as the original does and
  // goes on naming new instructions as the original would. Never fails; the status is kept
  // for callers written against the text-based clone.
  absl::StatusOr<std::unique_ptr<HloModule>> Clone() const;

 private:
  friend class HloComputation;  // instruction edits invalidate the computation order
  // Drops a removed computation's name; AddComputation may hand it out again.
  void ForgetComputationName(const std::string& name);
  std::vector<HloComputation*> ComputeComputationPostOrder() const;
  void InvalidateComputationOrder() { computation_order_valid_ = false; }

  std::string name_;
  std::vector<std::unique_ptr<HloComputation>> computations_;
  HloComputation* entry_ = nullptr;
  int64_t next_unique_id_ = 1;
  NameUniquer instruction_names_;
  absl::flat_hash_map<std::string, HloComputation*> computation_names_;
  // Per name AddComputation was asked for: every "name.<n>" with 1 <= n < hint is taken.
  absl::flat_hash_map<std::string, int64_t> next_computation_suffix_;
  // MakeComputationPostOrder's last answer while computation_order_valid_; the mutex lets
  // const walks run from several threads.
  mutable std::mutex computation_order_mutex_;
  mutable std::vector<HloComputation*> computation_order_;
  mutable bool computation_order_valid_ = false;
};

}  // namespace jx::hlo

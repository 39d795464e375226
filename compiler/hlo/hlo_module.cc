#include "jx/compiler/hlo/hlo_module.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "jx/compiler/hlo/instruction_prefetch.h"
#include "jx/compiler/hlo/str_util.h"

namespace jx::hlo {
namespace {

// Keeps generated "prefix.<n>" names clear of names that already end in ".<n>", e.g.
// when a parsed module holds "add.7". Returns n, or -1 if the name has no such suffix.
int64_t NumericSuffix(std::string_view name) {
  size_t dot = name.rfind('.');
  int64_t n;
  if (dot == std::string_view::npos || !SimpleAtoi(name.substr(dot + 1), &n)) return -1;
  return n;
}

}  // namespace

HloComputation* HloModule::AddComputation(std::string_view name) {
  std::string unique(name);
  if (computation_names_.contains(unique)) {
    // The first free "name.<n>", n >= 1. Every n below the hint is taken, so fusion's k-th
    // "fused_computation" does not probe the k-1 names before it.
    int64_t& hint = next_computation_suffix_[unique];
    int64_t n = std::max<int64_t>(hint, 1);
    while (computation_names_.contains(unique = StrCat(name, ".", n))) ++n;
    hint = n + 1;
  }
  auto computation = std::unique_ptr<HloComputation>(new HloComputation(this, unique));
  computation_names_.emplace(std::move(unique), computation.get());
  computations_.push_back(std::move(computation));
  InvalidateComputationOrder();
  return computations_.back().get();
}

absl::StatusOr<HloComputation*> HloModule::AddComputationWithExactName(std::string_view name) {
  if (computation_names_.contains(AsAbsl(name))) {
    return absl::AlreadyExistsError(StrCat("computation name \"", name, "\" is taken"));
  }
  return AddComputation(name);
}

void HloModule::ForgetComputationName(const std::string& name) {
  computation_names_.erase(name);
  // "base.<n>" is free again: AddComputation(base) must find it first, as it would have.
  const int64_t n = NumericSuffix(name);
  if (n < 1) return;
  const std::string_view base = std::string_view(name).substr(0, name.rfind('.'));
  if (StrCat(base, ".", n) != name) return;  // "f.01" is not a generated name
  auto it = next_computation_suffix_.find(AsAbsl(base));
  if (it != next_computation_suffix_.end()) it->second = std::min(it->second, n);
}

absl::Status HloModule::RemoveComputation(HloComputation* c) {
  return RemoveComputations({c});
}

absl::Status HloModule::RemoveComputations(absl::Span<HloComputation* const> dead) {
  const absl::flat_hash_set<const HloComputation*> doomed(dead.begin(), dead.end());
  for (HloComputation* c : dead) {
    if (c == entry_) {
      return absl::FailedPreconditionError(
          StrCat("cannot remove the entry computation ", c->name()));
    }
  }
  // One pass over the module, not one per removed computation.
  for (const auto& other : computations_) {
    if (doomed.contains(other.get())) continue;
    for (HloInstruction* instr : other->instructions()) {
      for (const HloComputation* callee : instr->called_computations()) {
        if (callee != nullptr && doomed.contains(callee)) {
          return absl::FailedPreconditionError(StrCat("cannot remove computation ",
                                                      callee->name(), ": called by ",
                                                      instr->name(), " in ", other->name()));
        }
      }
    }
  }
  size_t found = 0;
  for (const auto& c : computations_) found += doomed.contains(c.get());
  if (found != doomed.size()) {
    for (HloComputation* c : dead) {
      if (std::none_of(computations_.begin(), computations_.end(),
                       [&](const auto& p) { return p.get() == c; })) {
        return absl::InvalidArgumentError(StrCat(c->name(), " is not in module ", name_));
      }
    }
  }
  for (HloComputation* c : dead) ForgetComputationName(c->name());
  std::erase_if(computations_, [&](const auto& p) { return doomed.contains(p.get()); });
  InvalidateComputationOrder();
  return absl::OkStatus();
}

std::vector<HloComputation*> HloModule::computations() const {
  std::vector<HloComputation*> out;
  out.reserve(computations_.size());
  for (const auto& c : computations_) out.push_back(c.get());
  return out;
}

HloComputation* HloModule::GetComputationWithName(std::string_view name) const {
  auto it = computation_names_.find(AsAbsl(name));
  return it == computation_names_.end() ? nullptr : it->second;
}

std::vector<HloComputation*> HloModule::MakeComputationPostOrder() const {
  std::lock_guard<std::mutex> lock(computation_order_mutex_);
  if (!computation_order_valid_) {
    computation_order_ = ComputeComputationPostOrder();
    computation_order_valid_ = true;
  }
  return computation_order_;
}

std::vector<HloComputation*> HloModule::ComputeComputationPostOrder() const {
  // One pass over every instruction finds what each computation calls. A computation's
  // callees are visited in the post order of the instructions calling them, but that order
  // only matters when it calls two or more distinct computations, so only those get an
  // instruction post order: a big entry that calls nothing (or one reducer) is not walked
  // operand by operand every time a pass lists the computations.
  struct Callees {
    HloComputation* first = nullptr;  // the first non-null callee met
    bool several = false;             // 2+ distinct callees: visit them in post order
  };
  absl::flat_hash_map<const HloComputation*, Callees> callees_of;
  absl::flat_hash_set<const HloComputation*> called, visited;
  for (const auto& c : computations_) {
    c->orders_callees_ = false;
    Callees* callees = nullptr;
    const auto prefetch = [](const HloInstruction* ahead) { __builtin_prefetch(&ahead->called_computations()); };
    ForEachInStorageOrder(*c, prefetch, [&](const HloInstruction* instr) {
      for (HloComputation* callee : instr->called_computations()) {
        called.insert(callee);
        if (callee == nullptr) continue;
        if (callees == nullptr) {
          callees = &callees_of[c.get()];
          callees->first = callee;
        }
        callees->several |= callee != callees->first;
      }
      return true;
    });
  }
  std::vector<HloComputation*> order;
  auto visit_from = [&](HloComputation* start) {
    if (!visited.insert(start).second) return;
    // (computation, callees in discovery order, next callee index)
    struct Frame {
      HloComputation* c;
      std::vector<HloComputation*> callees;
      size_t next = 0;
    };
    std::vector<Frame> stack;
    auto push = [&](HloComputation* c) {
      Frame f{c, {}};
      auto it = callees_of.find(c);
      if (it != callees_of.end() && !it->second.several) {
        f.callees = {it->second.first};  // one distinct callee: nothing to order
      } else if (it != callees_of.end()) {
        // Its callees' order follows its instruction order: edits of that order must drop
        // the kept answer.
        c->orders_callees_ = true;
        for (HloInstruction* instr : c->MakeInstructionPostOrder()) {
          for (HloComputation* callee : instr->called_computations()) {
            if (callee != nullptr) f.callees.push_back(callee);
          }
        }
      }
      stack.push_back(std::move(f));
    };
    push(start);
    while (!stack.empty()) {
      Frame& top = stack.back();
      if (top.next < top.callees.size()) {
        HloComputation* callee = top.callees[top.next++];
        if (visited.insert(callee).second) push(callee);
        continue;
      }
      order.push_back(top.c);
      stack.pop_back();
    }
  };
  for (const auto& c : computations_) {
    if (c.get() != entry_ && !called.contains(c.get())) visit_from(c.get());
  }
  if (entry_ != nullptr) visit_from(entry_);
  for (const auto& c : computations_) visit_from(c.get());  // only-called-by-cycles leftovers
  return order;
}

std::string HloModule::UniqueInstructionName(std::string_view prefix, bool exact_if_free) {
  if (exact_if_free && instruction_names_.TakeExact(prefix)) return std::string(prefix);
  return instruction_names_.TakeGenerated(prefix, next_unique_id_);
}

absl::Status HloModule::ReserveInstructionName(std::string_view name) {
  if (!instruction_names_.TakeExact(name)) {
    return absl::AlreadyExistsError(StrCat("instruction name \"", name, "\" is taken"));
  }
  // Generated names use the id counter; keep it past any numeric suffix seen.
  next_unique_id_ = std::max(next_unique_id_, NumericSuffix(name) + 1);
  return absl::OkStatus();
}

}  // namespace jx::hlo

#include "jx/compiler/hlo/hlo_module.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "jx/compiler/hlo/hlo_parser.h"
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
  for (int64_t n = 1; computation_names_.contains(unique); ++n) {
    unique = StrCat(name, ".", n);
  }
  computation_names_.insert(unique);
  computations_.push_back(
      std::unique_ptr<HloComputation>(new HloComputation(this, std::move(unique))));
  return computations_.back().get();
}

absl::StatusOr<HloComputation*> HloModule::AddComputationWithExactName(std::string_view name) {
  if (computation_names_.contains(AsAbsl(name))) {
    return absl::AlreadyExistsError(StrCat("computation name \"", name, "\" is taken"));
  }
  return AddComputation(name);
}

absl::Status HloModule::RemoveComputation(HloComputation* c) {
  if (c == entry_) {
    return absl::FailedPreconditionError(
        StrCat("cannot remove the entry computation ", c->name()));
  }
  for (const auto& other : computations_) {
    if (other.get() == c) continue;
    for (HloInstruction* instr : other->instructions()) {
      const auto& called = instr->called_computations();
      if (std::find(called.begin(), called.end(), c) != called.end()) {
        return absl::FailedPreconditionError(StrCat("cannot remove computation ",
                                                          c->name(), ": called by ",
                                                          instr->name(), " in ", other->name()));
      }
    }
  }
  auto it = std::find_if(computations_.begin(), computations_.end(),
                         [&](const auto& p) { return p.get() == c; });
  if (it == computations_.end()) {
    return absl::InvalidArgumentError(StrCat(c->name(), " is not in module ", name_));
  }
  computation_names_.erase(c->name());
  computations_.erase(it);
  return absl::OkStatus();
}

std::vector<HloComputation*> HloModule::computations() const {
  std::vector<HloComputation*> out;
  out.reserve(computations_.size());
  for (const auto& c : computations_) out.push_back(c.get());
  return out;
}

HloComputation* HloModule::GetComputationWithName(std::string_view name) const {
  for (const auto& c : computations_) {
    if (c->name() == name) return c.get();
  }
  return nullptr;
}

std::vector<HloComputation*> HloModule::MakeComputationPostOrder() const {
  absl::flat_hash_set<const HloComputation*> called, visited;
  for (const auto& c : computations_) {
    for (HloInstruction* instr : c->instructions()) {
      for (HloComputation* callee : instr->called_computations()) called.insert(callee);
    }
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
      for (HloInstruction* instr : c->MakeInstructionPostOrder()) {
        for (HloComputation* callee : instr->called_computations()) {
          if (callee != nullptr) f.callees.push_back(callee);
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
  std::string name(prefix);
  if (!exact_if_free || instruction_names_.contains(AsAbsl(name))) {
    do {
      name = StrCat(prefix, ".", next_unique_id_);
    } while (instruction_names_.contains(AsAbsl(name)));
  }
  instruction_names_.insert(name);
  return name;
}

absl::Status HloModule::ReserveInstructionName(std::string_view name) {
  if (!instruction_names_.insert(std::string(name)).second) {
    return absl::AlreadyExistsError(StrCat("instruction name \"", name, "\" is taken"));
  }
  // Generated names use the id counter; keep it past any numeric suffix seen.
  next_unique_id_ = std::max(next_unique_id_, NumericSuffix(name) + 1);
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<HloModule>> HloModule::Clone() const {
  return ParseHloModule(ToString());
}

}  // namespace jx::hlo

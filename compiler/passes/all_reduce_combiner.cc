#include "jx/compiler/passes/all_reduce_combiner.h"

#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "jx/compiler/hlo/hlo_builder.h"
#include "jx/compiler/hlo/hlo_module.h"
#include "jx/compiler/hlo/status_macros.h"
#include "jx/compiler/passes/all_reduce_utils.h"

namespace jx::hlo {
namespace {

// An all-reduce of one array operand with a recognized reducer: a candidate to combine.
bool IsCandidate(const HloInstruction& instr) {
  return instr.opcode() == HloOpcode::kAllReduce && instr.operand_count() == 1 && instr.shape().IsArray() &&
         AllReduceReductionOp(instr).has_value();
}

// Which candidates each instruction depends on (transitively through its operands), as one
// bit per candidate: a candidate may not join a group holding one it depends on.
class CandidateDependencies {
 public:
  CandidateDependencies(const std::vector<HloInstruction*>& order, const std::vector<HloInstruction*>& candidates)
      : words_((candidates.size() + 63) / 64) {
    for (size_t k = 0; k < candidates.size(); ++k) bit_of_[candidates[k]] = k;
    for (HloInstruction* instr : order) {
      std::vector<uint64_t> bits(words_, 0);
      for (const HloInstruction* operand : instr->operands()) {
        auto it = bits_.find(operand);
        if (it == bits_.end()) continue;
        for (size_t w = 0; w < words_; ++w) bits[w] |= it->second[w];
        if (auto b = bit_of_.find(operand); b != bit_of_.end()) bits[b->second / 64] |= uint64_t{1} << (b->second % 64);
      }
      bits_.emplace(instr, std::move(bits));
    }
  }
  // Whether `instr` depends on candidate `of`.
  bool DependsOn(const HloInstruction* instr, const HloInstruction* of) const {
    const size_t k = bit_of_.at(of);
    return (bits_.at(instr)[k / 64] >> (k % 64)) & 1;
  }

 private:
  size_t words_;
  absl::flat_hash_map<const HloInstruction*, size_t> bit_of_;
  absl::flat_hash_map<const HloInstruction*, std::vector<uint64_t>> bits_;
};

// Whether a and b may be one all-reduce: the same reduction over the same element type and
// the same partitions.
bool Combinable(const HloInstruction& a, const HloInstruction& b) {
  return AllReduceReductionOp(a) == AllReduceReductionOp(b) &&
         a.shape().element_type() == b.shape().element_type() && SameAllReduceGroups(a, b);
}

// Replaces the group's all-reduces with one of all their operands.
absl::Status Combine(HloComputation* computation, const std::vector<HloInstruction*>& group) {
  std::vector<HloInstruction*> operands;
  std::vector<Shape> shapes;
  for (HloInstruction* ar : group) {
    operands.push_back(ar->mutable_operand(0));
    shapes.push_back(ar->shape());
  }
  const HloInstruction& first = *group.front();
  std::unique_ptr<HloInstruction> combined =
      HloInstruction::Create(HloOpcode::kAllReduce, Shape::Tuple(std::move(shapes)), operands);
  if (first.has_channel_id()) combined->set_channel_id(first.channel_id());
  combined->set_replica_groups(first.replica_groups());
  if (first.use_global_device_ids()) combined->set_use_global_device_ids(true);
  combined->set_to_apply(first.to_apply());
  combined->set_metadata(first.metadata());
  HloBuilder b(computation);
  HLO_ASSIGN_OR_RETURN(HloInstruction * all, b.AddInstruction(std::move(combined)));
  for (size_t i = 0; i < group.size(); ++i) {
    HLO_ASSIGN_OR_RETURN(HloInstruction * element, b.GetTupleElement(all, static_cast<int64_t>(i)));
    HLO_RETURN_IF_ERROR(computation->ReplaceInstruction(group[i], element));
  }
  return absl::OkStatus();
}

}  // namespace

// One group at a time: the first candidate (in program order) that can gather others takes
// every later combinable candidate that depends on none of the group (so the group's members
// are pairwise independent and one all-reduce of them makes no cycle); the group is combined
// and the dependencies recomputed (the combined all-reduce joins its members' edges) before
// the next group is formed. A candidate that gathered no one never will (combining only adds
// edges), so it is not tried again.
absl::StatusOr<bool> AllReduceCombiner::RunOnComputation(HloComputation* computation) const {
  bool changed = false;
  absl::flat_hash_set<const HloInstruction*> alone;
  while (true) {
    const std::vector<HloInstruction*> order = computation->MakeInstructionPostOrder();
    std::vector<HloInstruction*> candidates;
    for (HloInstruction* instr : order) {
      if (IsCandidate(*instr) && !alone.contains(instr)) candidates.push_back(instr);
    }
    if (candidates.size() < 2) return changed;
    const CandidateDependencies deps(order, candidates);
    bool combined = false;
    for (size_t s = 0; s < candidates.size() && !combined; ++s) {
      std::vector<HloInstruction*> group = {candidates[s]};
      int64_t bytes = ShapeUtil::ByteSizeOf(candidates[s]->shape());
      for (size_t c = s + 1; c < candidates.size(); ++c) {
        HloInstruction* ar = candidates[c];
        const int64_t more = ShapeUtil::ByteSizeOf(ar->shape());
        if (static_cast<int64_t>(group.size()) >= threshold_count_) break;
        if (!Combinable(*group.front(), *ar) || bytes + more > threshold_bytes_) continue;
        bool independent = true;
        for (const HloInstruction* m : group) independent = independent && !deps.DependsOn(ar, m);
        if (!independent) continue;
        group.push_back(ar);
        bytes += more;
      }
      if (group.size() < 2) {
        alone.insert(candidates[s]);
        continue;
      }
      HLO_RETURN_IF_ERROR(Combine(computation, group));
      combined = changed = true;
    }
    if (!combined) return changed;
  }
}

absl::StatusOr<bool> AllReduceCombiner::Run(HloModule* module) {
  bool changed = false;
  for (HloComputation* computation : module->computations()) {
    if (computation->IsFusionComputation()) continue;
    HLO_ASSIGN_OR_RETURN(bool c, RunOnComputation(computation));
    changed = changed || c;
  }
  return changed;
}

}  // namespace jx::hlo

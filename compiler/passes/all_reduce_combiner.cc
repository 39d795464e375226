#include "jx/compiler/passes/all_reduce_combiner.h"

#include <cstddef>
#include <memory>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
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
  using Bits = std::vector<uint64_t>;

  CandidateDependencies(const std::vector<HloInstruction*>& order, const std::vector<HloInstruction*>& candidates)
      : words_((candidates.size() + 63) / 64) {
    for (size_t k = 0; k < candidates.size(); ++k) bit_of_[candidates[k]] = k;
    bits_.reserve(order.size());
    for (HloInstruction* instr : order) {
      Bits bits(words_, 0);
      for (const HloInstruction* operand : instr->operands()) {
        auto it = index_.find(operand);
        if (it == index_.end()) continue;
        const Bits& of = bits_[it->second];
        for (size_t w = 0; w < words_; ++w) bits[w] |= of[w];
        if (auto b = bit_of_.find(operand); b != bit_of_.end()) Set(bits, b->second);
      }
      index_[instr] = bits_.size();
      bits_.push_back(std::move(bits));
    }
  }
  size_t words() const { return words_; }
  size_t BitOf(const HloInstruction* candidate) const { return bit_of_.at(candidate); }
  // The candidates `instr` depends on.
  const Bits& Of(const HloInstruction* instr) const { return bits_[index_.at(instr)]; }
  bool DependsOn(const HloInstruction* instr, const HloInstruction* of) const { return Test(Of(instr), BitOf(of)); }

  static void Set(Bits& bits, size_t k) { bits[k / 64] |= uint64_t{1} << (k % 64); }
  static bool Test(const Bits& bits, size_t k) { return (bits[k / 64] >> (k % 64)) & 1; }
  static bool Intersect(const Bits& a, const Bits& b) {
    for (size_t w = 0; w < a.size(); ++w) {
      if (a[w] & b[w]) return true;
    }
    return false;
  }

 private:
  size_t words_;
  absl::flat_hash_map<const HloInstruction*, size_t> bit_of_, index_;
  std::vector<Bits> bits_;
};

// What two all-reduces must share to be one: the reduction, the element type and the
// partitions (groups, by hash here; SameAllReduceGroups confirms).
using CombineKey = std::tuple<int, int, size_t, bool, bool>;
CombineKey KeyOf(const HloInstruction& ar) {
  return {static_cast<int>(*AllReduceReductionOp(ar)), static_cast<int>(ar.shape().element_type()),
          absl::HashOf(ar.replica_groups()), ar.use_global_device_ids(), ar.has_channel_id()};
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

// Groups are formed on one snapshot of the dependencies: each candidate (in program order)
// joins the first group of its kind it depends on no member of, within the thresholds, so a
// group's members are pairwise independent. Two groups could still wait for each other once
// combined (a member of each reading the other's result), so the groups form a graph (an
// edge where a member of one depends on a member of the other) and the latest group on a
// cycle waits for the next round. Every acyclic group is combined at once; another round
// (dependencies recomputed) runs only when a group was held back.
absl::StatusOr<bool> AllReduceCombiner::RunOnComputation(HloComputation* computation) const {
  using Bits = CandidateDependencies::Bits;
  bool changed = false;
  while (true) {
    const std::vector<HloInstruction*> order = computation->MakeInstructionPostOrder();
    std::vector<HloInstruction*> candidates;
    for (HloInstruction* instr : order) {
      if (IsCandidate(*instr)) candidates.push_back(instr);
    }
    if (candidates.size() < 2) return changed;
    const CandidateDependencies deps(order, candidates);
    struct Group {
      std::vector<HloInstruction*> members;
      int64_t bytes = 0;
      Bits mine, needs;  // its members; the candidates its members depend on
    };
    std::vector<Group> groups;
    absl::flat_hash_map<CombineKey, std::vector<size_t>> groups_of_kind;
    for (HloInstruction* ar : candidates) {
      const int64_t bytes = ShapeUtil::ByteSizeOf(ar->shape());
      const Bits& needs = deps.Of(ar);
      std::vector<size_t>& same_kind = groups_of_kind[KeyOf(*ar)];
      Group* joined = nullptr;
      for (size_t i : same_kind) {
        Group& g = groups[i];
        if (g.bytes + bytes <= threshold_bytes_ && static_cast<int64_t>(g.members.size()) < threshold_count_ &&
            !CandidateDependencies::Intersect(needs, g.mine) && SameAllReduceGroups(*g.members.front(), *ar)) {
          joined = &g;
          break;
        }
      }
      if (joined == nullptr) {
        same_kind.push_back(groups.size());
        joined = &groups.emplace_back();
        joined->mine.assign(deps.words(), 0);
        joined->needs.assign(deps.words(), 0);
      }
      joined->members.push_back(ar);
      joined->bytes += bytes;
      CandidateDependencies::Set(joined->mine, deps.BitOf(ar));
      for (size_t w = 0; w < deps.words(); ++w) joined->needs[w] |= needs[w];
    }
    std::vector<size_t> kept;  // groups of two or more
    for (size_t i = 0; i < groups.size(); ++i) {
      if (groups[i].members.size() >= 2) kept.push_back(i);
    }
    // Drop the latest group on a cycle until the group graph has none (Kahn's order).
    bool dropped = false;
    while (true) {
      std::vector<int> waiting(kept.size(), 0);
      for (size_t a = 0; a < kept.size(); ++a) {
        for (size_t b = 0; b < kept.size(); ++b) {
          if (a != b && CandidateDependencies::Intersect(groups[kept[b]].needs, groups[kept[a]].mine)) ++waiting[b];
        }
      }
      std::vector<size_t> ready;
      std::vector<bool> done(kept.size(), false);
      for (size_t b = 0; b < kept.size(); ++b) {
        if (waiting[b] == 0) ready.push_back(b);
      }
      size_t finished = 0;
      while (!ready.empty()) {
        const size_t a = ready.back();
        ready.pop_back();
        done[a] = true;
        ++finished;
        for (size_t b = 0; b < kept.size(); ++b) {
          if (!done[b] && a != b && CandidateDependencies::Intersect(groups[kept[b]].needs, groups[kept[a]].mine) &&
              --waiting[b] == 0) {
            ready.push_back(b);
          }
        }
      }
      if (finished == kept.size()) break;
      size_t latest = 0;
      for (size_t b = 0; b < kept.size(); ++b) {
        if (!done[b]) latest = b;
      }
      kept.erase(kept.begin() + static_cast<std::ptrdiff_t>(latest));
      dropped = true;
    }
    if (kept.empty()) return changed;
    for (size_t i : kept) HLO_RETURN_IF_ERROR(Combine(computation, groups[i].members));
    changed = true;
    // Combining only adds dependencies: with no group held back, nothing more can combine.
    if (!dropped) return changed;
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

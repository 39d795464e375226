#include "jx/compiler/passes/reduce_scatter_reassociate.h"

#include <memory>
#include <optional>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "jx/compiler/hlo/hlo_computation.h"
#include "jx/compiler/hlo/status_macros.h"
#include "jx/compiler/passes/all_reduce_utils.h"

namespace jx::hlo {
namespace {

// Whether `combine`'s operands are two reduce-scatters it may replace by one: each reduces
// with combine's op, feeds only `combine`, and they match in groups, dimension and types.
bool IsReassociable(const HloInstruction* combine) {
  if (!combine->IsElementwise() || combine->operand_count() != 2) return false;
  const HloInstruction* a = combine->operand(0);
  const HloInstruction* b = combine->operand(1);
  if (a == b || a->opcode() != HloOpcode::kReduceScatter || b->opcode() != HloOpcode::kReduceScatter) return false;
  if (CollectiveReductionOp(*a) != combine->opcode() || CollectiveReductionOp(*b) != combine->opcode()) return false;
  if (a->user_count() != 1 || b->user_count() != 1 || a->IsRoot() || b->IsRoot()) return false;
  if (!SameAllReduceGroups(*a, *b) || a->dimensions() != b->dimensions()) return false;
  return ShapeUtil::Compatible(a->shape(), b->shape()) && ShapeUtil::Compatible(a->shape(), combine->shape()) &&
         ShapeUtil::Compatible(a->operand(0)->shape(), b->operand(0)->shape());
}

}  // namespace

absl::StatusOr<bool> ReduceScatterReassociate::Run(HloModule* module) {
  records_.clear();
  std::unique_ptr<ReduceScatterPricing> pricing;  // made at the first candidate
  std::optional<int64_t> peak;  // the estimated peak before this run (options.peak_bytes)
  int64_t grown = 0;            // bytes the full-size sums added so far
  // The reduce-scatters this run made of full-size sums.
  absl::flat_hash_set<const HloInstruction*> full_size_sums;
  bool changed = false;
  for (HloComputation* computation : module->MakeComputationPostOrder()) {
    if (computation->IsFusionComputation()) continue;
    // Operands before users: in a chain the inner combine becomes a reduce-scatter first, so
    // the outer one then sees two reduce-scatters.
    for (HloInstruction* combine : computation->MakeInstructionPostOrder()) {
      if (!IsReassociable(combine)) continue;
      const HloInstruction& a = *combine->operand(0);
      const HloInstruction& b = *combine->operand(1);
      const int64_t block = ShapeUtil::ByteSizeOf(a.shape());
      ReduceScatterHoist h{.reduce_scatter = absl::StrCat(a.name(), " + ", b.name()),
                           .trips = 2,
                           .grown_adds = 1,
                           .group_size = a.operand(0)->shape().dimensions(a.dimensions(0)) /
                                         a.shape().dimensions(a.dimensions(0)),
                           .accumulator_bytes = block,
                           .hoisted_bytes = ShapeUtil::ByteSizeOf(a.operand(0)->shape()),
                           .reduced_bytes = block};
      bool pays = true;
      if (options_.pricing) {
        if (pricing == nullptr) {
          HLO_ASSIGN_OR_RETURN(pricing, options_.pricing(*module));
        }
        // b's run is the one combining saves (a's reduce-scatter stays, of the sum).
        HLO_ASSIGN_OR_RETURN(h.saved_seconds, pricing->Savings(b, h));
        pays = h.saved_seconds > 0;
      }
      if (!pays) {
        h.outcome = ReduceScatterHoist::Outcome::kDoesNotPay;
      } else {
        if (!peak) {
          HLO_ASSIGN_OR_RETURN(peak, options_.peak_bytes ? options_.peak_bytes(*module) : EstimatedPeakBytes(*module));
        }
        h.peak_bytes = *peak + grown;
        h.memory_limit_bytes = options_.memory_limit_bytes;
        // A chain's later links add to a sum that is full-size already: no more memory.
        if (full_size_sums.contains(&a) || full_size_sums.contains(&b)) h.accumulator_bytes = h.hoisted_bytes;
        if (h.peak_bytes + h.extra_bytes() > options_.memory_limit_bytes) {
          h.outcome = ReduceScatterHoist::Outcome::kOverMemoryLimit;
        } else {
          grown += h.extra_bytes();
        }
      }
      records_.push_back(h);
      if (h.outcome != ReduceScatterHoist::Outcome::kHoisted) continue;
      if (pricing != nullptr) HLO_RETURN_IF_ERROR(pricing->Take(b, h));
      full_size_sums.erase(&b);  // removed with `combine`
      HLO_ASSIGN_OR_RETURN(HloInstruction * kept, ReassociateCollectivePair(computation, combine));
      full_size_sums.insert(kept);
      changed = true;
    }
  }
  return changed;
}

}  // namespace jx::hlo

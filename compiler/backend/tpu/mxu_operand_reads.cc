#include "jx/compiler/backend/tpu/mxu_operand_reads.h"

#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "jx/compiler/backend/tpu/mxu_feed.h"
#include "jx/compiler/hlo/hlo_instruction.h"
#include "jx/compiler/hlo/shape.h"
#include "jx/compiler/hlo/status_macros.h"
#include "jx/compiler/hlo/str_util.h"

namespace jx::tpu {

using hlo::HloInstruction;
using hlo::HloOpcode;

absl::StatusOr<int64_t> ReadMxuOperandsAsStored(hlo::HloComputation* computation) {
  std::vector<HloInstruction*> order = computation->MakeSequentialOrder();
  absl::flat_hash_set<const HloInstruction*> removed;
  // Last to first: a feed's readers take its source (mxu_feed.h), then the feed and the
  // converts under it that nothing else reads go.
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    HloInstruction* feed = *it;
    if (removed.contains(feed) || !IsMxuFeed(*feed)) continue;
    HloInstruction* source = const_cast<HloInstruction*>(&MxuFeedSource(*feed));
    // The readers take the stored operand: the feed first takes its shape, as the rewired
    // edges must join values of one shape (the fusions' parameters keep theirs: nothing runs this).
    *feed->mutable_shape() = source->shape();
    HLO_RETURN_IF_ERROR(feed->ReplaceAllUsesWith(source));
    for (HloInstruction* dead = feed; dead != source && dead->users().empty();) {
      HloInstruction* below = dead->opcode() == HloOpcode::kConvert ? dead->mutable_operand(0) : source;
      HLO_RETURN_IF_ERROR(computation->RemoveInstruction(dead));
      removed.insert(dead);
      dead = below;
    }
  }
  if (removed.empty()) return 0;
  std::vector<HloInstruction*> kept;
  kept.reserve(order.size() - removed.size());
  for (HloInstruction* instr : order) {
    if (!removed.contains(instr)) kept.push_back(instr);
  }
  computation->set_schedule(std::move(kept));
  return static_cast<int64_t>(removed.size());
}

absl::StatusOr<int64_t> ShareAsyncCollectiveResults(hlo::HloComputation* computation) {
  std::vector<HloInstruction*> order = computation->MakeSequentialOrder();
  int64_t replaced = 0;
  for (HloInstruction*& slot : order) {
    HloInstruction* done = slot;
    if (!hlo::IsAsyncCollectiveDone(done->opcode())) continue;
    // The start is its result (an all-reduce-start, of one operand or several), or holds it
    // as leaf 1 (operands, result).
    HloInstruction* start = done->mutable_operand(0);
    HloInstruction* result = start;
    if (!hlo::ShapeUtil::Compatible(start->shape(), done->shape())) {
      if (!start->shape().IsTuple() || start->shape().tuple_shapes_size() != 2 ||
          !hlo::ShapeUtil::Compatible(start->shape().tuple_shapes(1), done->shape())) {
        return absl::InternalError(hlo::StrCat(done->name(), " (", done->shape().ToString(), ") is not its start ",
                                          start->name(), "'s result (", start->shape().ToString(), ")"));
      }
      auto gte = HloInstruction::Create(HloOpcode::kGetTupleElement, start->shape().tuple_shapes(1), {start});
      gte->set_tuple_index(1);
      result = computation->AddInstruction(std::move(gte), done->name() + ".result");
    }
    HLO_RETURN_IF_ERROR(done->ReplaceAllUsesWith(result));
    HLO_RETURN_IF_ERROR(computation->RemoveInstruction(done));
    slot = result == start ? nullptr : result;
    ++replaced;
  }
  if (replaced == 0) return 0;
  std::vector<HloInstruction*> kept;
  kept.reserve(order.size());
  for (HloInstruction* instr : order) {
    if (instr != nullptr) kept.push_back(instr);
  }
  computation->set_schedule(std::move(kept));
  return replaced;
}

}  // namespace jx::tpu

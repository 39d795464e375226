#include "jx/compiler/backend/tpu/mxu_operand_reads.h"

#include <memory>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "jx/compiler/backend/tpu/mxu_feed.h"
#include "jx/compiler/hlo/hlo_instruction.h"
#include "jx/compiler/hlo/hlo_module.h"
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

absl::StatusOr<hlo::MemoryPeakOfOrder> ChipMemoryPeak(const hlo::HloComputation& computation) {
  bool as_written = true;  // nothing the chip holds otherwise: no copy to make
  for (const HloInstruction* instr : computation.instructions()) {
    as_written &= !IsMxuFeed(*instr) && !hlo::IsAsyncCollectiveDone(instr->opcode());
  }
  if (as_written) {
    return [&computation](absl::Span<HloInstruction* const> order) { return hlo::FindMemoryPeak(computation, order); };
  }
  // The copy the orders are measured on (a computation is copied with its module, as its
  // instructions may call others), rewritten as the planner rewrites the program it measures.
  HLO_ASSIGN_OR_RETURN(std::unique_ptr<hlo::HloModule> module, computation.parent()->Clone());
  hlo::HloComputation* chip = module->GetComputationWithName(computation.name());
  if (chip == nullptr) {
    return absl::InternalError(hlo::StrCat("the copy of ", computation.parent()->name(), " lost computation ",
                                           computation.name()));
  }
  HLO_RETURN_IF_ERROR(ReadMxuOperandsAsStored(chip).status());
  HLO_RETURN_IF_ERROR(ShareAsyncCollectiveResults(chip).status());
  // Each instruction's counterpart in the copy: its namesake, a done's result read (the start
  // itself for an all-reduce: it already has its place), none for a removed feed.
  absl::flat_hash_map<std::string_view, hlo::HloInstruction*> by_name;
  for (hlo::HloInstruction* instr : chip->instructions()) by_name[instr->name()] = instr;
  auto counterpart = std::make_shared<absl::flat_hash_map<const HloInstruction*, HloInstruction*>>();
  for (const HloInstruction* instr : computation.instructions()) {
    auto it = by_name.find(hlo::IsAsyncCollectiveDone(instr->opcode()) ? instr->name() + ".result" : instr->name());
    if (it != by_name.end()) (*counterpart)[instr] = it->second;
  }
  std::shared_ptr<hlo::HloModule> copy = std::move(module);
  return [copy, chip, counterpart](absl::Span<HloInstruction* const> order) {
    std::vector<HloInstruction*> chip_order;
    std::vector<int64_t> position;  // each chip_order entry's position in `order`
    chip_order.reserve(order.size());
    position.reserve(order.size());
    for (size_t i = 0; i < order.size(); ++i) {
      auto it = counterpart->find(order[i]);
      if (it == counterpart->end()) continue;
      chip_order.push_back(it->second);
      position.push_back(static_cast<int64_t>(i));
    }
    hlo::MemoryPeak peak = hlo::FindMemoryPeak(*chip, chip_order);
    if (!position.empty()) peak.position = position[peak.position];
    return peak;
  };
}

}  // namespace jx::tpu

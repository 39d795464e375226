// HloScheduling ("hlo-scheduling"): picks, for every computation that is not a fusion
// body, the sequential order its instructions run in, aiming at the lowest peak of live
// memory, and stores it with HloComputation::set_schedule (read back through
// HloComputation::MakeSequentialOrder, which falls back to the post order once a later
// pass has changed the computation).
//
// Two candidates, as XLA keeps the best of several schedulers:
//   - a greedy list scheduler (in the spirit of XLA's ListScheduler): among the
//     instructions whose operands have all run, run the one that frees the most bytes
//     (operand buffers it is the last reader of) minus the bytes it allocates, ties going
//     to the earlier instruction in post order;
//   - the plain post order (MakeInstructionPostOrder).
// The one with the lower PeakMemoryBytes wins, the post order on a tie. Custom-calls with
// side effects keep their relative post order. Run returns whether the order a computation
// runs in (MakeSequentialOrder) changed; a second Run returns false.
//
// Donation: given jit's donation flags for the entry computation's argument leaves, each
// donated argument paired with an output (hlo::PairDonatedArguments, JAX's pairing) has its
// other readers scheduled before that output's producer, as XLA orders the readers of an
// aliased parameter before the instruction that overwrites it, so buffer assignment can write
// the output into the argument's memory (an optimizer step's loss reading `w` runs before the
// fusion writing the new `w`). A pairing whose producer feeds one of those readers gets no
// edges (that output needs other memory).
//
// Memory model (PeakMemoryBytes): every array leaf an instruction produces is a buffer of
// ByteSizeOf bytes, live from the instruction to its last reader; tuple and
// get-tuple-element alias their operands' buffers (their readers extend those buffers'
// lives), parameters are live throughout and the root's buffers until the end. Memory
// used inside called computations (while bodies, fusions) is not counted.
//
//   HloScheduling scheduling;
//   HLO_ASSIGN_OR_RETURN(bool changed, scheduling.Run(module));
//   std::vector<HloInstruction*> order = module->entry_computation()->MakeSequentialOrder();
//   int64_t peak = PeakMemoryBytes(*module->entry_computation(), order);
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/types/span.h"
#include "jx/compiler/hlo/hlo_computation.h"
#include "jx/compiler/hlo/hlo_pass.h"

namespace jx::hlo {

class HloScheduling : public HloPass {
 public:
  HloScheduling() = default;
  // One flag per argument leaf of the entry computation (empty: nothing is donated).
  explicit HloScheduling(std::vector<bool> donated_entry_arguments)
      : donated_(std::move(donated_entry_arguments)) {}
  std::string_view name() const override { return "hlo-scheduling"; }
  absl::StatusOr<bool> Run(HloModule* module) override;

 private:
  std::vector<bool> donated_;
};

// An order a schedule keeps beyond the operand edges: `before` runs before `after`.
struct OrderingEdge {
  const HloInstruction* before;
  const HloInstruction* after;
};

// The edges that let donated argument leaves hold their paired outputs (see above).
std::vector<OrderingEdge> DonationOrderingEdges(const HloComputation& computation, const std::vector<bool>& donated);

// The most bytes live at once when `computation` runs in `order`, which must hold every
// instruction of the computation once, each after its operands.
int64_t PeakMemoryBytes(const HloComputation& computation,
                        absl::Span<HloInstruction* const> order);

// The same peak and where it is: the first position in `order` whose instruction runs with
// `bytes` live.
struct MemoryPeak {
  int64_t bytes = 0;
  int64_t position = 0;
};
MemoryPeak FindMemoryPeak(const HloComputation& computation, absl::Span<HloInstruction* const> order);

// The same peak over part of a computation, as a kernel running `order` (operands first) holds
// it: each array leaf of an instruction a buffer of leaf_bytes(instruction, leaf) bytes, live
// from its instruction to its last reader in `order`; an operand from outside `order` a buffer
// of operand_bytes(operand) bytes (none when 0) from its first reader to its last (a block
// fetched around its readers); the buffers of the instructions `live_out` names live to the end.
MemoryPeak FindMemoryPeak(absl::Span<HloInstruction* const> order,
                          absl::FunctionRef<bool(const HloInstruction&)> live_out,
                          absl::FunctionRef<int64_t(const HloInstruction&, const Shape&)> leaf_bytes,
                          absl::FunctionRef<int64_t(const HloInstruction&)> operand_bytes);

// The greedy list scheduler's order for `computation` (every instruction, operands first,
// and each edge's `before` first).
std::vector<HloInstruction*> ListScheduleOrder(const HloComputation& computation,
                                               absl::Span<const OrderingEdge> edges = {});

// The same scheduler over part of a computation (`order`, operands first), its memory counted
// as FindMemoryPeak's overload for a part counts it (an outside operand's buffer counts as freed
// by its last reader; its fetch weighs against no reader).
std::vector<HloInstruction*> ListScheduleOrder(absl::Span<HloInstruction* const> order,
                                               absl::FunctionRef<bool(const HloInstruction&)> live_out,
                                               absl::FunctionRef<int64_t(const HloInstruction&, const Shape&)> leaf_bytes,
                                               absl::FunctionRef<int64_t(const HloInstruction&)> operand_bytes);

// The order HloScheduling stores: the list schedule if its peak is lower than the post
// order's (the post order with each edge's `before` moved early enough), else the latter.
std::vector<HloInstruction*> ScheduleComputation(const HloComputation& computation,
                                                 absl::Span<const OrderingEdge> edges = {});

// An order of `computation` that follows `names` (the schedule of another copy of it, by
// instruction name): named instructions keep that order, ones it does not name (added since,
// such as a layout pass's copies) run right before their first user.
std::vector<HloInstruction*> OrderFollowingNames(const HloComputation& computation,
                                                 absl::Span<const std::string> names);

}  // namespace jx::hlo

// Shared pieces of the all-reduce passes (AllReduceReassociate, ReduceScatterReassociate,
// WhileLoopAllReduceCodeMotion): what an all-reduce (or reduce-scatter) reduces with, whether
// two all-reduces exchange over the same partitions, making an all-reduce or reduce-scatter
// like another over a new operand, and combining two into one.
//
//   if (AllReduceReductionOp(*ar) == HloOpcode::kAdd && SameAllReduceGroups(*ar, *other)) ...
//   HLO_ASSIGN_OR_RETURN(HloInstruction * moved, AddAllReduceLike(c, *ar, sum, reducer));
#pragma once

#include <optional>

#include "absl/status/statusor.h"
#include "jx/compiler/hlo/hlo_computation.h"
#include "jx/compiler/hlo/hlo_module.h"

namespace jx::hlo {

// The binary op an all-reduce of one operand combines with, when its to_apply is one
// commutative binary op of its two parameters (add, multiply, maximum, minimum, and, or,
// xor); nullopt otherwise (and for an all-reduce of several operands).
std::optional<HloOpcode> AllReduceReductionOp(const HloInstruction& all_reduce);
// The same for an all-reduce or a reduce-scatter.
std::optional<HloOpcode> CollectiveReductionOp(const HloInstruction& collective);

// Whether a and b exchange over the same partitions the same way: equal replica groups, the
// same use_global_device_ids, and both or neither cross-partition (channel_id).
bool SameAllReduceGroups(const HloInstruction& a, const HloInstruction& b);

// A scalar `combiner` computation over `type` (x combiner y): an existing one of the module
// whose root is exactly that, else a new one.
HloComputation* ScalarCombinerComputation(HloModule* module, HloOpcode combiner, PrimitiveType type);

// Adds to `computation` an all-reduce of `operand` with prototype's groups, channel and
// metadata, reducing with `reducer`.
absl::StatusOr<HloInstruction*> AddAllReduceLike(HloComputation* computation, const HloInstruction& prototype,
                                                 HloInstruction* operand, HloComputation* reducer);

// Adds to `computation` a reduce-scatter of `operand` along `dimension` with prototype's
// groups, channel and metadata (its group size: prototype's operand over its result along its
// own dimension), reducing with `reducer`.
absl::StatusOr<HloInstruction*> AddReduceScatterLike(HloComputation* computation, const HloInstruction& prototype,
                                                     HloInstruction* operand, HloComputation* reducer,
                                                     int64_t dimension);

// op(c0, c1) -> c0' with c0' = c0 over op(c0's operand, c1's operand): `combine` is an
// element-wise op of two collectives of one operand each (both reduce with combine's op; the
// caller checks they may be combined). c0 then stands for `combine`; combine and c1 are
// removed. Returns c0.
absl::StatusOr<HloInstruction*> ReassociateCollectivePair(HloComputation* computation, HloInstruction* combine);

}  // namespace jx::hlo

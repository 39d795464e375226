#include "jx/compiler/passes/while_loop_all_reduce_code_motion.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "jx/compiler/hlo/hlo_builder.h"
#include "jx/compiler/hlo/hlo_module.h"
#include "jx/compiler/hlo/pattern_matcher.h"
#include "jx/compiler/hlo/status_macros.h"
#include "jx/compiler/passes/all_reduce_utils.h"
#include "jx/compiler/passes/while_loop_utils.h"

namespace jx::hlo {
namespace {

namespace m = ::jx::hlo::match;

// How many linear ops (convert, scaling, ...) may sit between an all-reduce and its accumulation.
constexpr int kMaxLinearOps = 8;

// One accumulator a loop carries whose all-reduce may move after the loop:
// body: state'[index] = state[index] + linear(all-reduce(g)), or through a slice:
// dynamic-update-slice(state[index], dynamic-slice(state[index], idx) + ..., idx).
struct Accumulation {
  int64_t index = 0;
  HloInstruction* all_reduce = nullptr;
  HloInstruction* reader = nullptr;  // the all-reduce's one user (the add, or a linear op)
  int64_t reader_operand = 0;        // where reader reads it
};

// Whether v is the same value on every partition and every trip: a constant, possibly
// broadcast or reshaped.
bool IsConstantValue(const HloInstruction* v) {
  while (v->opcode() == HloOpcode::kBroadcast || v->opcode() == HloOpcode::kReshape) v = v->operand(0);
  return v->opcode() == HloOpcode::kConstant;
}

// The operand through which v is linear (sum over partitions commutes with v): conversions to
// a floating type, negation, data movement, scaling by a constant. Null if v is not such an op.
HloInstruction* LinearOperand(HloInstruction* v) {
  const bool floating = v->shape().IsArray() && IsFloatingPointType(v->shape().element_type());
  switch (v->opcode()) {
    case HloOpcode::kConvert:  // to an integer type it would round each partial sum
      return floating ? v->mutable_operand(0) : nullptr;
    case HloOpcode::kNegate: case HloOpcode::kCopy: case HloOpcode::kReshape: case HloOpcode::kBitcast:
    case HloOpcode::kTranspose:
      return v->mutable_operand(0);
    case HloOpcode::kMultiply:
      if (IsConstantValue(v->operand(1))) return v->mutable_operand(0);
      return IsConstantValue(v->operand(0)) ? v->mutable_operand(1) : nullptr;
    case HloOpcode::kDivide:  // pmean's psum(x) / n; integer division is not linear
      return floating && IsConstantValue(v->operand(1)) ? v->mutable_operand(0) : nullptr;
    default:
      return nullptr;
  }
}

// For acc' = dynamic-update-slice(acc, dynamic-slice(acc, idx) + reduced, idx): the add, and
// the slice of the accumulator it reads; nullopt when `next` is not that.
std::optional<std::pair<HloInstruction*, const HloInstruction*>> MatchSliceAccumulation(HloInstruction* next,
                                                                                       const HloInstruction* acc) {
  HloInstruction* update = next->mutable_operand(1);
  if (next->operand(0) != acc || update->opcode() != HloOpcode::kAdd || update->user_count() != 1) {
    return std::nullopt;
  }
  const HloInstruction* slice = nullptr;
  for (const HloInstruction* operand : update->operands()) {
    if (operand->opcode() == HloOpcode::kDynamicSlice && operand->operand(0) == acc) slice = operand;
  }
  // The slice read is the one written back: the same start indices.
  if (slice == nullptr || slice->user_count() != 1 || slice->operand_count() + 1 != next->operand_count()) {
    return std::nullopt;
  }
  for (int64_t i = 1; i < slice->operand_count(); ++i) {
    if (slice->operand(i) != next->operand(i + 1)) return std::nullopt;
  }
  return std::pair{update, slice};
}

std::optional<Accumulation> MatchAccumulation(const HloInstruction& loop, int64_t index,
                                              const std::vector<HloInstruction*>& body_reads, bool cond_reads) {
  // The accumulator is read once in the body, by the accumulation, and never by the condition.
  if (cond_reads || body_reads.size() != 1) return std::nullopt;
  const HloInstruction* root = loop.while_body()->root_instruction();
  const HloInstruction* acc = body_reads[0];
  HloInstruction* next = root->mutable_operand(index);
  if (next->user_count() != 1 || std::count(root->operands().begin(), root->operands().end(), next) != 1) {
    return std::nullopt;
  }
  // acc' = acc + reduced, or a slice of acc updated so.
  HloInstruction* add = next;
  const HloInstruction* summand = acc;  // the add's operand holding the accumulator
  if (next->opcode() == HloOpcode::kDynamicUpdateSlice) {
    const auto slice_accumulation = MatchSliceAccumulation(next, acc);
    if (!slice_accumulation || acc->user_count() != 2) return std::nullopt;
    std::tie(add, summand) = *slice_accumulation;
  } else if (acc->user_count() != 1 || acc->users()[0] != next) {
    return std::nullopt;
  }
  if (add->opcode() != HloOpcode::kAdd || !add->shape().IsArray()) return std::nullopt;
  const int64_t r = add->operand(0) == summand ? 1 : 0;
  if (add->operand(1 - r) != summand || add->operand(r) == summand) return std::nullopt;
  // Down from the add to the all-reduce through ops linear in it, each read only there.
  HloInstruction* reader = add;
  int64_t reader_operand = r;
  for (int depth = 0; reader->operand(reader_operand)->opcode() != HloOpcode::kAllReduce; ++depth) {
    HloInstruction* v = reader->mutable_operand(reader_operand);
    HloInstruction* below = LinearOperand(v);
    if (depth == kMaxLinearOps || v->user_count() != 1 || below == nullptr) return std::nullopt;
    reader = v;
    reader_operand = std::find(v->operands().begin(), v->operands().end(), below) - v->operands().begin();
  }
  HloInstruction* reduced = reader->mutable_operand(reader_operand);
  if (reduced->user_count() != 1 || AllReduceReductionOp(*reduced) != HloOpcode::kAdd) return std::nullopt;
  return Accumulation{.index = index, .all_reduce = reduced, .reader = reader, .reader_operand = reader_operand};
}

absl::StatusOr<bool> MoveAllReducesOutOf(HloInstruction* loop) {
  HloComputation* parent = loop->parent();
  HloComputation* body = loop->while_body();
  if (!loop->shape().IsTuple() || loop->IsRoot() || body->root_instruction()->opcode() != HloOpcode::kTuple) {
    return false;
  }
  for (const HloInstruction* user : loop->users()) {
    if (user->opcode() != HloOpcode::kGetTupleElement) return false;
  }
  const int64_t size = loop->shape().tuple_shapes_size();
  const auto body_reads = TupleReads(*body, size);
  const auto cond_reads = TupleReads(*loop->while_condition(), size);
  if (!body_reads || !cond_reads) return false;
  std::vector<Accumulation> moves;
  for (int64_t i = 0; i < size; ++i) {
    const auto k = static_cast<size_t>(i);
    if (std::optional<Accumulation> a = MatchAccumulation(*loop, i, (*body_reads)[k], !(*cond_reads)[k].empty())) {
      moves.push_back(*a);
    }
  }
  if (moves.empty()) return false;

  HloBuilder pb(parent);
  HloInstruction* init = loop->mutable_operand(0);
  std::vector<HloInstruction*> elements;
  for (int64_t i = 0; i < size; ++i) {
    if (init->opcode() == HloOpcode::kTuple) {
      elements.push_back(init->mutable_operand(i));
    } else {
      HLO_ASSIGN_OR_RETURN(HloInstruction * e, pb.GetTupleElement(init, i));
      elements.push_back(e);
    }
  }
  // After the loop: the accumulator's reads become init + all-reduce(accumulator).
  for (const Accumulation& a : moves) {
    std::vector<HloInstruction*> reads;
    for (HloInstruction* user : loop->users()) {
      if (user->tuple_index() == a.index) reads.push_back(user);
    }
    if (reads.empty()) continue;  // the sum is never read: nothing to all-reduce
    const Shape& acc_shape = loop->shape().tuple_shapes(a.index);
    // A sum of the accumulator's type (a convert may sit between it and the all-reduce).
    HloComputation* reducer = a.all_reduce->shape().element_type() == acc_shape.element_type()
                                  ? a.all_reduce->to_apply()
                                  : ScalarCombinerComputation(parent->parent(), HloOpcode::kAdd,
                                                              acc_shape.element_type());
    HLO_ASSIGN_OR_RETURN(HloInstruction * sum, pb.GetTupleElement(loop, a.index));
    HLO_ASSIGN_OR_RETURN(HloInstruction * reduced, AddAllReduceLike(parent, *a.all_reduce, sum, reducer));
    HloInstruction* initial = elements[static_cast<size_t>(a.index)];
    HloInstruction* result = reduced;
    if (!Match(initial, m::ConstantSplat(0))) {
      HLO_ASSIGN_OR_RETURN(result, pb.Add(initial, reduced));
    }
    for (HloInstruction* read : reads) {
      HLO_RETURN_IF_ERROR(read->ReplaceAllUsesWith(result));
      HLO_RETURN_IF_ERROR(parent->RemoveInstruction(read));
    }
  }
  // Into the loop: the accumulators start at zero.
  for (const Accumulation& a : moves) {
    HLO_ASSIGN_OR_RETURN(elements[static_cast<size_t>(a.index)],
                         Zeros(pb, loop->shape().tuple_shapes(a.index)));
  }
  HLO_ASSIGN_OR_RETURN(HloInstruction * new_init, pb.Tuple(elements));
  HLO_RETURN_IF_ERROR(loop->ReplaceOperandWith(0, new_init));
  if (init->user_count() == 0 && !init->IsRoot() && init->opcode() != HloOpcode::kParameter) {
    HLO_RETURN_IF_ERROR(parent->RemoveInstructionAndUnusedOperands(init));
  }
  // In the loop: the accumulators add the unreduced values.
  for (const Accumulation& a : moves) {
    HLO_RETURN_IF_ERROR(a.reader->ReplaceOperandWith(a.reader_operand, a.all_reduce->mutable_operand(0)));
    HLO_RETURN_IF_ERROR(body->RemoveInstruction(a.all_reduce));
  }
  return true;
}

}  // namespace

absl::StatusOr<bool> WhileLoopAllReduceCodeMotion::Run(HloModule* module) {
  const auto callers = CallerCounts(*module);
  bool changed = false;
  // Callees first: an all-reduce moved out of an inner loop may then leave the outer one.
  for (HloComputation* computation : module->MakeComputationPostOrder()) {
    if (computation->IsFusionComputation()) continue;
    const std::vector<HloInstruction*> loops = LoopsWithOwnComputations(*computation, callers);
    for (HloInstruction* loop : loops) {
      HLO_ASSIGN_OR_RETURN(bool moved, MoveAllReducesOutOf(loop));
      changed |= moved;
    }
  }
  return changed;
}

}  // namespace jx::hlo

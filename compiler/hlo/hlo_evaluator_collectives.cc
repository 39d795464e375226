// The reference evaluator's collectives: it runs one partition on its own (partition 0), so
// a collective whose groups have one member each is a copy (a collective-permute that sends
// partition 0 to itself), one whose groups have more members needs a multi-device run
// (the CPU backend's collective kernels with a CollectiveContext). A collective of several
// operands does this for each. A start evaluates its collective; its done forwards the result.
#include "jx/compiler/hlo/hlo_evaluator_internal.h"
#include "jx/compiler/hlo/shape_inference.h"
#include "jx/compiler/hlo/status_macros.h"

namespace jx::hlo::eval_internal {
namespace {

absl::Status CheckSinglePartition(const HloInstruction& instr) {
  for (const std::vector<int64_t>& group : instr.replica_groups()) {
    if (group.size() > 1 || (group.size() == 1 && group[0] != 0)) {
      return absl::FailedPreconditionError(StrCat(
          "replica_groups=", ReplicaGroupsToString(instr.replica_groups()),
          " name other partitions; the evaluator runs partition 0 alone (run it on several "
          "devices)"));
    }
  }
  return absl::OkStatus();
}

// The value of a synchronous collective, or of the collective a start begins (whose result
// has the shape `result`).
absl::StatusOr<Literal> EvalSyncCollective(const HloInstruction& instr, const Shape& result, const Literal& operand) {
  switch (SyncCollectiveOpcode(instr.opcode())) {
    case HloOpcode::kCollectivePermute: {
      for (const auto& [source, target] : instr.source_target_pairs()) {
        if (source == 0 && target == 0) return operand;
        if (source == 0 || target == 0) {
          return absl::FailedPreconditionError(StrCat(
              "source_target_pairs=", SourceTargetPairsToString(instr.source_target_pairs()),
              " name other partitions; the evaluator runs partition 0 alone"));
        }
      }
      return Literal(result);  // nothing received: zeros
    }
    case HloOpcode::kAllReduce: case HloOpcode::kAllGather: case HloOpcode::kReduceScatter:
    case HloOpcode::kAllToAll:
      HLO_RETURN_IF_ERROR(CheckSinglePartition(instr));
      return operand;  // one participant: its own value
    default:
      return absl::InternalError(StrCat(HloOpcodeString(instr.opcode()), " is not a collective opcode"));
  }
}

}  // namespace

absl::StatusOr<Literal> EvalCollective(const HloInstruction& instr, Operands ops) {
  const HloOpcode op = instr.opcode();
  if (op == HloOpcode::kPartitionId) return Literal::CreateR0<uint32_t>(0);
  if (IsAsyncCollectiveDone(op)) {
    // Its start holds the result.
    if (instr.operand(0)->opcode() == HloOpcode::kAllReduceStart) return *ops[0];
    return ops[0]->tuple_elements().at(1);
  }
  // One result per operand (a tuple of them for several, as XLA's variadic collectives, and
  // for the tuple all-to-all of any number).
  Shape result = instr.shape();
  if (IsAsyncCollectiveStart(op)) {
    HLO_ASSIGN_OR_RETURN(result, ShapeInference::InferAsyncDoneShape(op, instr.shape()));
  }
  const size_t n = ops.size();
  const bool tuple_result = result.IsTuple();
  std::vector<Literal> values, operands;
  for (size_t i = 0; i < n; ++i) {
    const Shape& result_i = tuple_result ? result.tuple_shapes(static_cast<int64_t>(i)) : result;
    HLO_ASSIGN_OR_RETURN(Literal value, EvalSyncCollective(instr, result_i, *ops[i]));
    values.push_back(std::move(value));
    operands.push_back(*ops[i]);
  }
  Literal value = tuple_result ? Literal::CreateTuple(std::move(values)) : std::move(values[0]);
  if (!IsAsyncCollectiveStart(op) || op == HloOpcode::kAllReduceStart) return value;
  // ((operands...), results) for several; one: (operand, R), or ((operand), R) for the
  // async-wrapped reduce-scatter and all-to-all.
  const bool wrapped = n > 1 || op == HloOpcode::kReduceScatterStart || op == HloOpcode::kAllToAllStart;
  Literal sent = wrapped ? Literal::CreateTuple(std::move(operands)) : std::move(operands[0]);
  return Literal::CreateTuple({std::move(sent), std::move(value)});
}

}  // namespace jx::hlo::eval_internal

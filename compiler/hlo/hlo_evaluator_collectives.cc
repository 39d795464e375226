// The reference evaluator's collectives: it runs one partition on its own (partition 0), so
// a collective whose groups have one member each is a copy (a collective-permute that sends
// partition 0 to itself), one whose groups have more members needs a multi-device run
// (the CPU backend's collective kernels with a CollectiveContext). A start evaluates its
// collective; its done forwards the result.
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
  if (!IsAsyncCollectiveStart(op)) return EvalSyncCollective(instr, instr.shape(), *ops[0]);
  HLO_ASSIGN_OR_RETURN(Shape result, ShapeInference::InferAsyncDoneShape(op, instr.shape()));
  HLO_ASSIGN_OR_RETURN(Literal value, EvalSyncCollective(instr, result, *ops[0]));
  switch (op) {
    case HloOpcode::kAllReduceStart:
      return value;
    case HloOpcode::kAllGatherStart: case HloOpcode::kCollectivePermuteStart:
      return Literal::CreateTuple({*ops[0], std::move(value)});
    default:  // reduce-scatter-start, all-to-all-start: ((operand), result)
      return Literal::CreateTuple({Literal::CreateTuple({*ops[0]}), std::move(value)});
  }
}

}  // namespace jx::hlo::eval_internal

// The reference evaluator's collectives: it runs one partition on its own (partition 0), so
// a collective whose groups have one member each is a copy (a collective-permute that sends
// partition 0 to itself), one whose groups have more members needs a multi-device run
// (the CPU backend's collective kernels with a CollectiveContext).
#include "jx/compiler/hlo/hlo_evaluator_internal.h"
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

}  // namespace

absl::StatusOr<Literal> EvalCollective(const HloInstruction& instr, Operands ops) {
  switch (instr.opcode()) {
    case HloOpcode::kPartitionId:
      return Literal::CreateR0<uint32_t>(0);
    case HloOpcode::kCollectivePermute: {
      for (const auto& [source, target] : instr.source_target_pairs()) {
        if (source == 0 && target == 0) return *ops[0];
        if (source == 0 || target == 0) {
          return absl::FailedPreconditionError(StrCat(
              "source_target_pairs=", SourceTargetPairsToString(instr.source_target_pairs()),
              " name other partitions; the evaluator runs partition 0 alone"));
        }
      }
      return Literal(instr.shape());  // nothing received: zeros
    }
    case HloOpcode::kAllReduce: case HloOpcode::kAllGather: case HloOpcode::kReduceScatter:
    case HloOpcode::kAllToAll:
      HLO_RETURN_IF_ERROR(CheckSinglePartition(instr));
      return *ops[0];  // one participant: its own value
    default:
      return absl::InternalError("not a collective opcode");
  }
}

}  // namespace jx::hlo::eval_internal

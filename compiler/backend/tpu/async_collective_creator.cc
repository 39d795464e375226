#include "jx/compiler/backend/tpu/async_collective_creator.h"

#include <memory>
#include <vector>

#include "jx/compiler/hlo/hlo_computation.h"
#include "jx/compiler/hlo/hlo_module.h"
#include "jx/compiler/hlo/shape_inference.h"
#include "jx/compiler/hlo/status_macros.h"
#include "jx/compiler/hlo/str_util.h"

namespace jx::tpu {
namespace {

using hlo::HloAttr;
using hlo::HloInstruction;
using hlo::HloOpcode;

// The collective's attributes, on its start.
void CopyCollectiveAttributes(const HloInstruction& from, HloInstruction* to) {
  if (from.has_channel_id()) to->set_channel_id(from.channel_id());
  if (from.HasAttr(HloAttr::kReplicaGroups)) to->set_replica_groups(from.replica_groups());
  if (from.HasAttr(HloAttr::kSourceTargetPairs)) to->set_source_target_pairs(from.source_target_pairs());
  if (from.HasAttr(HloAttr::kDimensions)) to->set_dimensions(from.dimensions());
  if (from.use_global_device_ids()) to->set_use_global_device_ids(true);
  if (from.to_apply() != nullptr) to->set_to_apply(from.to_apply());
  to->set_metadata(from.metadata());
}

absl::Status MakeAsync(hlo::HloComputation* computation, HloInstruction* collective) {
  const HloOpcode start_op = *hlo::AsyncStartOpcode(collective->opcode());
  const HloOpcode done_op = *hlo::AsyncDoneOpcode(collective->opcode());
  // One operand or several (one result each, a tuple of them).
  std::vector<HloInstruction*> operands;
  std::vector<hlo::Shape> operand_shapes, results;
  for (int64_t i = 0; i < collective->operand_count(); ++i) {
    operands.push_back(collective->mutable_operand(i));
    operand_shapes.push_back(operands.back()->shape());
    results.push_back(collective->shape().IsTuple() ? collective->shape().tuple_shapes(i) : collective->shape());
  }
  // The tuple all-to-all (no dimensions=) keeps tuples of any size: ((operands), (results)).
  const bool tuple_all_to_all = collective->opcode() == HloOpcode::kAllToAll && collective->dimensions().empty();
  hlo::Shape start_shape;
  if (tuple_all_to_all) {
    start_shape = hlo::Shape::Tuple({hlo::Shape::Tuple(operand_shapes), collective->shape()});
  } else {
    HLO_ASSIGN_OR_RETURN(start_shape, hlo::ShapeInference::InferAsyncStartShape(start_op, operand_shapes, results));
  }
  std::unique_ptr<HloInstruction> start = HloInstruction::Create(start_op, start_shape, operands);
  CopyCollectiveAttributes(*collective, start.get());
  HloInstruction* start_instr = computation->AddInstruction(std::move(start));
  std::unique_ptr<HloInstruction> done = HloInstruction::Create(done_op, collective->shape(), {start_instr});
  done->set_metadata(collective->metadata());
  HloInstruction* done_instr = computation->AddInstruction(std::move(done));
  return computation->ReplaceInstruction(collective, done_instr);
}

}  // namespace

absl::StatusOr<bool> AsyncCollectiveCreator::Run(hlo::HloModule* module) {
  bool changed = false;
  for (hlo::HloComputation* computation : module->computations()) {
    if (computation->IsFusionComputation()) continue;
    std::vector<HloInstruction*> collectives;
    for (HloInstruction* instr : computation->MakeInstructionPostOrder()) {
      if (hlo::AsyncStartOpcode(instr->opcode()).has_value()) collectives.push_back(instr);
    }
    for (HloInstruction* collective : collectives) {
      HLO_RETURN_IF_ERROR(MakeAsync(computation, collective));
      changed = true;
    }
  }
  return changed;
}

}  // namespace jx::tpu

#include "jx/compiler/passes/all_reduce_utils.h"

#include <memory>
#include <string>

#include "jx/compiler/hlo/hlo_builder.h"
#include "jx/compiler/hlo/status_macros.h"

namespace jx::hlo {
namespace {

bool IsCommutativeCombiner(HloOpcode op) {
  switch (op) {
    case HloOpcode::kAdd: case HloOpcode::kMultiply: case HloOpcode::kMaximum:
    case HloOpcode::kMinimum: case HloOpcode::kAnd: case HloOpcode::kOr: case HloOpcode::kXor:
      return true;
    default:
      return false;
  }
}

// The op of a computation whose root is one binary op of its two distinct scalar parameters.
std::optional<HloOpcode> ScalarCombinerOf(const HloComputation& c) {
  const HloInstruction* root = c.root_instruction();
  if (root == nullptr || c.num_parameters() != 2 || root->operand_count() != 2) return std::nullopt;
  const HloInstruction* a = root->operand(0);
  const HloInstruction* b = root->operand(1);
  if (a->opcode() != HloOpcode::kParameter || b->opcode() != HloOpcode::kParameter || a == b) {
    return std::nullopt;
  }
  if (!IsCommutativeCombiner(root->opcode())) return std::nullopt;
  return root->opcode();
}

}  // namespace

std::optional<HloOpcode> AllReduceReductionOp(const HloInstruction& all_reduce) {
  if (all_reduce.opcode() != HloOpcode::kAllReduce || all_reduce.to_apply() == nullptr ||
      all_reduce.operand_count() != 1) {
    return std::nullopt;
  }
  return ScalarCombinerOf(*all_reduce.to_apply());
}

bool SameAllReduceGroups(const HloInstruction& a, const HloInstruction& b) {
  return a.replica_groups() == b.replica_groups() && a.use_global_device_ids() == b.use_global_device_ids() &&
         a.has_channel_id() == b.has_channel_id();
}

HloComputation* ScalarCombinerComputation(HloModule* module, HloOpcode combiner, PrimitiveType type) {
  for (HloComputation* c : module->computations()) {
    if (c->IsFusionComputation() || ScalarCombinerOf(*c) != combiner) continue;
    if (ShapeUtil::IsScalarWithType(c->root_instruction()->shape(), type) &&
        ShapeUtil::IsScalarWithType(c->parameter_instruction(0)->shape(), type) &&
        ShapeUtil::IsScalarWithType(c->parameter_instruction(1)->shape(), type)) {
      return c;
    }
  }
  HloBuilder b(module, std::string(HloOpcodeString(combiner)));
  HloInstruction* x = b.Parameter(0, ShapeUtil::MakeScalarShape(type), "x").value();
  HloInstruction* y = b.Parameter(1, ShapeUtil::MakeScalarShape(type), "y").value();
  return b.Build(b.Binary(combiner, x, y).value()).value();
}

absl::StatusOr<HloInstruction*> AddAllReduceLike(HloComputation* computation, const HloInstruction& prototype,
                                                 HloInstruction* operand, HloComputation* reducer) {
  std::unique_ptr<HloInstruction> ar = HloInstruction::Create(HloOpcode::kAllReduce, operand->shape(), {operand});
  if (prototype.has_channel_id()) ar->set_channel_id(prototype.channel_id());
  ar->set_replica_groups(prototype.replica_groups());
  if (prototype.use_global_device_ids()) ar->set_use_global_device_ids(true);
  ar->set_to_apply(reducer);
  ar->set_metadata(prototype.metadata());
  return HloBuilder(computation).AddInstruction(std::move(ar));
}

}  // namespace jx::hlo

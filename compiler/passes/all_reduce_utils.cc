#include "jx/compiler/passes/all_reduce_utils.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

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
  if (all_reduce.opcode() != HloOpcode::kAllReduce) return std::nullopt;
  return CollectiveReductionOp(all_reduce);
}

std::optional<HloOpcode> CollectiveReductionOp(const HloInstruction& collective) {
  if ((collective.opcode() != HloOpcode::kAllReduce && collective.opcode() != HloOpcode::kReduceScatter) ||
      collective.to_apply() == nullptr || collective.operand_count() != 1) {
    return std::nullopt;
  }
  return ScalarCombinerOf(*collective.to_apply());
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

namespace {

std::unique_ptr<HloInstruction> CollectiveLike(HloOpcode opcode, const Shape& shape, const HloInstruction& prototype,
                                               HloInstruction* operand, HloComputation* reducer) {
  std::unique_ptr<HloInstruction> c = HloInstruction::Create(opcode, shape, {operand});
  if (prototype.has_channel_id()) c->set_channel_id(prototype.channel_id());
  c->set_replica_groups(prototype.replica_groups());
  if (prototype.use_global_device_ids()) c->set_use_global_device_ids(true);
  c->set_to_apply(reducer);
  c->set_metadata(prototype.metadata());
  return c;
}

}  // namespace

absl::StatusOr<HloInstruction*> AddAllReduceLike(HloComputation* computation, const HloInstruction& prototype,
                                                 HloInstruction* operand, HloComputation* reducer) {
  return HloBuilder(computation)
      .AddInstruction(CollectiveLike(HloOpcode::kAllReduce, operand->shape(), prototype, operand, reducer));
}

absl::StatusOr<HloInstruction*> ReassociateCollectivePair(HloComputation* computation, HloInstruction* combine) {
  HloInstruction* kept = combine->mutable_operand(0);
  HloInstruction* dropped = combine->mutable_operand(1);
  HLO_ASSIGN_OR_RETURN(HloInstruction * combined,
                       HloBuilder(computation)
                           .Binary(combine->opcode(), kept->mutable_operand(0), dropped->mutable_operand(0)));
  combined->set_metadata(combine->metadata());
  // The kept collective now reduces the combined operands and stands for `combine`.
  HLO_RETURN_IF_ERROR(kept->ReplaceOperandWith(0, combined));
  HLO_RETURN_IF_ERROR(combine->ReplaceAllUsesWith(kept));
  HLO_RETURN_IF_ERROR(computation->RemoveInstructionAndUnusedOperands(combine));
  return kept;
}

absl::StatusOr<HloInstruction*> AddReduceScatterLike(HloComputation* computation, const HloInstruction& prototype,
                                                     HloInstruction* operand, HloComputation* reducer,
                                                     int64_t dimension) {
  const int64_t own = prototype.dimensions(0);
  const int64_t group = prototype.operand(0)->shape().dimensions(own) / prototype.shape().dimensions(own);
  std::vector<int64_t> dims = SpanToVector(operand->shape().dimensions());
  if (dimension < 0 || dimension >= static_cast<int64_t>(dims.size()) || dims[static_cast<size_t>(dimension)] % group) {
    return absl::InvalidArgumentError(absl::StrCat("reduce-scatter like ", prototype.name(), ": dimension ", dimension,
                                                   " of ", operand->shape().ToString(), " does not split ", group,
                                                   " ways"));
  }
  dims[static_cast<size_t>(dimension)] /= group;
  std::unique_ptr<HloInstruction> rs = CollectiveLike(
      HloOpcode::kReduceScatter, Shape(operand->shape().element_type(), std::move(dims)), prototype, operand, reducer);
  rs->set_dimensions({dimension});
  return HloBuilder(computation).AddInstruction(std::move(rs));
}

}  // namespace jx::hlo

#include "jx/compiler/backend/cpu/masked_gather_fusion.h"

#include <optional>
#include <utility>
#include <vector>

#include "jx/compiler/backend/cpu/cpu_kernels.h"
#include "jx/compiler/backend/cpu/schedule_keeper.h"
#include "jx/compiler/hlo/hlo_computation.h"
#include "jx/compiler/hlo/status_macros.h"
#include "jx/compiler/hlo/str_util.h"

namespace jx::cpu {
namespace {

using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::HloOpcode;

bool IsScalarConstant(const HloInstruction& c) {
  return c.opcode() == HloOpcode::kConstant && c.shape().IsArray() && c.shape().rank() == 0;
}

// select(broadcast(mask: pred), on_true, fill) at the root of fused computation f.
std::optional<MaskedGather> MatchSelectRoot(const HloComputation& f) {
  const HloInstruction* root = f.root_instruction();
  if (root->opcode() != HloOpcode::kSelect || !root->shape().IsArray()) return std::nullopt;
  const HloInstruction* broadcast = root->operand(0);
  const HloInstruction* fill = root->operand(2);
  if (broadcast->opcode() != HloOpcode::kBroadcast ||
      broadcast->operand(0)->shape().element_type() != hlo::PRED) {
    return std::nullopt;
  }
  if (!IsScalarConstant(*fill) &&
      !(fill->opcode() == HloOpcode::kBroadcast && IsScalarConstant(*fill->operand(0)))) {
    return std::nullopt;
  }
  // The gathered value is read by the select only, so it need not exist apart from it.
  if (root->operand(1)->user_count() != 1 || root->operand(0) == root->operand(1)) return std::nullopt;
  return MaskedGather{root->operand(1), broadcast->operand(0), fill};
}

// The gather that loop fusion `select` reads through its root's on_true parameter, when the
// select is its only reader and the native gather kernel takes it.
HloInstruction* GatherToFuse(const HloInstruction& select) {
  if (select.opcode() != HloOpcode::kFusion || select.fusion_kind() != hlo::FusionKind::kLoop) {
    return nullptr;
  }
  const std::optional<MaskedGather> m = MatchSelectRoot(*select.fused_instructions_computation());
  if (!m || m->gather->opcode() != HloOpcode::kParameter) return nullptr;
  HloInstruction* gather = select.mutable_operand(m->gather->parameter_number());
  if (gather->opcode() != HloOpcode::kGather || gather->user_count() != 1) return nullptr;
  int64_t reads = 0;
  for (const HloInstruction* operand : select.operands()) reads += operand == gather;
  if (reads != 1 || !internal::MakeGatherKernel(*gather).ok()) return nullptr;
  return gather;
}

// Moves `gather` into the fused computation of `select` (which reads it once, as its root's
// on_true) and replaces select by a kCustom fusion of that computation.
absl::Status Fuse(HloComputation* computation, HloInstruction* select, HloInstruction* gather) {
  ScheduleKeeper keeper(computation);  // the fusion runs where the select ran
  HloComputation* fused = select->fused_instructions_computation();
  const int64_t n = fused->num_parameters();
  std::vector<HloInstruction*> operands;
  HloInstruction* gathered = nullptr;  // the parameter that read the gather
  for (int64_t i = 0; i < select->operand_count(); ++i) {
    if (select->mutable_operand(i) == gather) {
      gathered = fused->parameter_instruction(i);
    } else {
      operands.push_back(select->mutable_operand(i));
    }
  }
  std::vector<HloInstruction*> gather_inputs;
  for (int64_t k = 0; k < 2; ++k) {
    auto parameter = HloInstruction::Create(HloOpcode::kParameter, gather->operand(k)->shape(), {});
    parameter->set_parameter_number(n + k);
    gather_inputs.push_back(fused->AddInstruction(std::move(parameter), hlo::StrCat("param_", n + k)));
    operands.push_back(gather->mutable_operand(k));
  }
  auto fused_gather = HloInstruction::Create(HloOpcode::kGather, gather->shape(), gather_inputs);
  fused_gather->set_gather_dimension_numbers(gather->gather_dimension_numbers());
  fused_gather->set_gather_slice_sizes(gather->gather_slice_sizes());
  fused_gather->set_metadata(gather->metadata());
  HloInstruction* inner = fused->AddInstruction(std::move(fused_gather), gather->name());
  HLO_RETURN_IF_ERROR(gathered->ReplaceAllUsesWith(inner));
  // Later parameters (the two just added among them) shift down to keep numbering dense.
  HLO_RETURN_IF_ERROR(fused->RemoveInstruction(gathered));

  auto fusion_instr = HloInstruction::Create(HloOpcode::kFusion, select->shape(), operands);
  fusion_instr->set_fusion_kind(hlo::FusionKind::kCustom);
  fusion_instr->set_metadata(select->metadata());
  HloInstruction* fusion = computation->AddInstruction(std::move(fusion_instr), "fusion");
  fusion->set_fused_computation(fused);
  return keeper.Replace(select, fusion);
}

}  // namespace

absl::StatusOr<bool> MaskedGatherFusion::Run(hlo::HloModule* module) {
  bool changed = false;
  for (HloComputation* computation : module->MakeComputationPostOrder()) {
    if (computation->IsFusionComputation()) continue;
    std::vector<std::pair<HloInstruction*, HloInstruction*>> found;
    for (HloInstruction* instr : computation->MakeInstructionPostOrder()) {
      if (HloInstruction* gather = GatherToFuse(*instr)) found.push_back({instr, gather});
    }
    for (const auto& [select, gather] : found) HLO_RETURN_IF_ERROR(Fuse(computation, select, gather));
    changed |= !found.empty();
  }
  return changed;
}

std::optional<MaskedGather> AsMaskedGather(const HloInstruction& fusion) {
  if (fusion.opcode() != HloOpcode::kFusion) return std::nullopt;
  std::optional<MaskedGather> m = MatchSelectRoot(*fusion.fused_instructions_computation());
  if (!m || m->gather->opcode() != HloOpcode::kGather ||
      m->gather->operand(0)->opcode() != HloOpcode::kParameter ||
      m->gather->operand(1)->opcode() != HloOpcode::kParameter) {
    return std::nullopt;
  }
  return m;
}

}  // namespace jx::cpu

#include "jx/compiler/backend/cpu/widened_window_fusion.h"

#include <optional>
#include <vector>

#include "jx/compiler/backend/cpu/scalar_semantics.h"
#include "jx/compiler/backend/cpu/schedule_keeper.h"
#include "jx/compiler/hlo/hlo_computation.h"
#include "jx/compiler/hlo/status_macros.h"

namespace jx::cpu {
namespace {

using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::HloOpcode;
using hlo::PrimitiveType;

bool IsNarrowFloat(PrimitiveType t) { return t == hlo::F16 || t == hlo::BF16 || t == hlo::F32; }

// Whether c is a scalar f64 constant holding the identity of op (0 for add, 1 for multiply):
// then starting from it in f64 is starting from the identity in T, as the library does.
bool IsIdentityInit(const HloInstruction& c, HloOpcode op) {
  return c.opcode() == HloOpcode::kConstant && c.shape().IsArray() && c.shape().rank() == 0 &&
         c.shape().element_type() == hlo::F64 &&
         c.literal().GetAsDouble(0) == (op == HloOpcode::kAdd ? 0.0 : 1.0);
}

// The reduce-window of `out` when out = convert(reduce-window(convert(x: T), identity))
// with T a float narrower than f64 and an add or multiply reducer, else null.
const HloInstruction* MatchChain(const HloInstruction& out) {
  if (out.opcode() != HloOpcode::kConvert || !out.shape().IsArray()) return nullptr;
  const PrimitiveType t = out.shape().element_type();
  const HloInstruction& window = *out.operand(0);
  if (!IsNarrowFloat(t) || window.opcode() != HloOpcode::kReduceWindow ||
      window.operand_count() != 2 || !window.shape().IsArray() ||
      window.shape().element_type() != hlo::F64) {
    return nullptr;
  }
  const HloInstruction& widen = *window.operand(0);
  if (widen.opcode() != HloOpcode::kConvert || widen.operand(0)->shape().element_type() != t) {
    return nullptr;
  }
  const std::optional<HloOpcode> op = internal::SimpleBinaryReducer(*window.to_apply());
  if (!op || (*op != HloOpcode::kAdd && *op != HloOpcode::kMultiply) ||
      !IsIdentityInit(*window.operand(1), *op)) {
    return nullptr;
  }
  return &window;
}

// Replaces the chain ending in `out` by a kCustom fusion of x.
absl::Status FuseChain(HloComputation* computation, HloInstruction* out) {
  HloInstruction* window = out->mutable_operand(0);
  HloInstruction* widen = window->mutable_operand(0);
  HloInstruction* x = widen->mutable_operand(0);
  ScheduleKeeper keeper(computation);  // the fusion runs where the last convert ran

  HloComputation* fused = computation->parent()->AddComputation("widened_window_computation");
  auto parameter = HloInstruction::Create(HloOpcode::kParameter, x->shape(), {});
  parameter->set_parameter_number(0);
  HloInstruction* param = fused->AddInstruction(std::move(parameter), "param_0");
  HloInstruction* fused_widen =
      fused->AddInstruction(HloInstruction::Create(HloOpcode::kConvert, widen->shape(), {param}));
  auto init = HloInstruction::Create(HloOpcode::kConstant, window->operand(1)->shape(), {});
  init->set_literal(window->operand(1)->literal());
  HloInstruction* fused_init = fused->AddInstruction(std::move(init));
  auto fused_window_instr = HloInstruction::Create(HloOpcode::kReduceWindow, window->shape(),
                                                   {fused_widen, fused_init});
  fused_window_instr->set_window(window->window());
  fused_window_instr->set_to_apply(window->to_apply());
  fused_window_instr->set_metadata(window->metadata());
  HloInstruction* fused_window = fused->AddInstruction(std::move(fused_window_instr), window->name());
  HloInstruction* root =
      fused->AddInstruction(HloInstruction::Create(HloOpcode::kConvert, out->shape(), {fused_window}));
  fused->set_root_instruction(root);

  auto fusion_instr = HloInstruction::Create(HloOpcode::kFusion, out->shape(), {x});
  fusion_instr->set_fusion_kind(hlo::FusionKind::kCustom);
  fusion_instr->set_metadata(out->metadata());
  HloInstruction* fusion = computation->AddInstruction(std::move(fusion_instr), "fusion");
  fusion->set_fused_computation(fused);

  return keeper.Replace(out, fusion);
}

}  // namespace

absl::StatusOr<bool> WidenedWindowFusion::Run(hlo::HloModule* module) {
  bool changed = false;
  for (HloComputation* computation : module->MakeComputationPostOrder()) {
    if (computation->IsFusionComputation()) continue;
    std::vector<HloInstruction*> chains;
    for (HloInstruction* instr : computation->MakeInstructionPostOrder()) {
      // The f64 window must have no other reader, or it is needed in memory anyway.
      if (const HloInstruction* window = MatchChain(*instr); window != nullptr && window->user_count() == 1) {
        chains.push_back(instr);
      }
    }
    for (HloInstruction* out : chains) HLO_RETURN_IF_ERROR(FuseChain(computation, out));
    changed |= !chains.empty();
  }
  return changed;
}

const HloInstruction* WidenedReduceWindow(const HloInstruction& fusion) {
  if (fusion.opcode() != HloOpcode::kFusion || fusion.fusion_kind() != hlo::FusionKind::kCustom ||
      fusion.operand_count() != 1) {
    return nullptr;
  }
  const HloInstruction* root = fusion.fused_instructions_computation()->root_instruction();
  const HloInstruction* window = MatchChain(*root);
  return window != nullptr && window->operand(0)->operand(0)->opcode() == HloOpcode::kParameter
             ? window
             : nullptr;
}

}  // namespace jx::cpu

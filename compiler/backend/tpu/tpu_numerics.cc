#include "jx/compiler/backend/tpu/tpu_numerics.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "jx/compiler/hlo/hlo_builder.h"
#include "jx/compiler/hlo/hlo_computation.h"
#include "jx/compiler/hlo/hlo_module.h"
#include "jx/compiler/hlo/status_macros.h"

namespace jx::tpu {
namespace {

using hlo::BF16;
using hlo::F32;
using hlo::HloBuilder;
using hlo::HloInstruction;
using hlo::HloOpcode;

bool IsContraction(const HloInstruction& instr) {
  return instr.opcode() == HloOpcode::kDot || instr.opcode() == HloOpcode::kConvolution;
}

// A value the MXU takes as it is: f32 widened from bf16.
bool IsBf16Exact(const HloInstruction& value) {
  return value.opcode() == HloOpcode::kConvert && value.shape().element_type() == F32 &&
         value.operand(0)->shape().element_type() == BF16;
}

// Already one bf16 MXU pass: an f32 contraction of two bf16-exact operands.
bool IsMxuPass(const HloInstruction& instr) {
  return instr.shape().element_type() == F32 && IsBf16Exact(*instr.operand(0)) &&
         IsBf16Exact(*instr.operand(1));
}

// `value` (f32) as the sum of `parts` bf16 values, each widened back to f32, largest first:
// hi = bf16(x), then the bf16 of what is left, and so on. The subtractions are exact.
absl::StatusOr<std::vector<HloInstruction*>> SplitIntoBf16(HloBuilder& b, HloInstruction* value,
                                                           int parts) {
  std::vector<HloInstruction*> pieces;
  if (IsBf16Exact(*value)) return std::vector<HloInstruction*>{value};
  HloInstruction* rest = value;
  for (int i = 0; i < parts; ++i) {
    HLO_ASSIGN_OR_RETURN(HloInstruction* narrow, b.Convert(rest, BF16));
    HLO_ASSIGN_OR_RETURN(HloInstruction* piece, b.Convert(narrow, F32));
    pieces.push_back(piece);
    if (i + 1 < parts) {
      HLO_ASSIGN_OR_RETURN(rest, b.Subtract(rest, piece));
    }
  }
  return pieces;
}

// One MXU pass: `original`'s contraction over new f32 operands.
absl::StatusOr<HloInstruction*> Pass(HloBuilder& b, const HloInstruction& original,
                                     HloInstruction* lhs, HloInstruction* rhs) {
  HloInstruction* pass = nullptr;
  if (original.opcode() == HloOpcode::kDot) {
    HLO_ASSIGN_OR_RETURN(pass, b.Dot(lhs, rhs, original.dot_dimension_numbers()));
  } else {
    HLO_ASSIGN_OR_RETURN(pass, b.Convolution(lhs, rhs, original.window(),
                                             original.convolution_dimension_numbers(),
                                             original.feature_group_count(),
                                             original.batch_group_count()));
  }
  pass->set_metadata(original.metadata());
  return pass;
}

// The (lhs part, rhs part) products of each precision, smallest terms first so the f32
// sum loses the least.
const std::vector<std::pair<int, int>>& Terms(hlo::Precision precision) {
  static const auto* kDefault = new std::vector<std::pair<int, int>>{{0, 0}};
  static const auto* kHigh = new std::vector<std::pair<int, int>>{{0, 1}, {1, 0}, {0, 0}};
  static const auto* kHighest = new std::vector<std::pair<int, int>>{
      {0, 2}, {2, 0}, {1, 1}, {0, 1}, {1, 0}, {0, 0}};
  switch (precision) {
    case hlo::Precision::kDefault: return *kDefault;
    case hlo::Precision::kHigh: return *kHigh;
    case hlo::Precision::kHighest: return *kHighest;
  }
  return *kDefault;
}

// Rewrites one floating-point contraction into its MXU passes; returns its replacement.
absl::StatusOr<HloInstruction*> ExpandIntoPasses(HloInstruction* instr, hlo::Precision precision) {
  HloBuilder b(instr->parent());
  b.set_metadata(instr->metadata());
  const int parts = precision == hlo::Precision::kDefault ? 1 : precision == hlo::Precision::kHigh ? 2 : 3;
  std::vector<HloInstruction*> lhs_parts, rhs_parts;
  for (int side = 0; side < 2; ++side) {
    HloInstruction* operand = instr->mutable_operand(side);
    if (operand->shape().element_type() != F32) {
      HLO_ASSIGN_OR_RETURN(operand, b.Convert(operand, F32));  // bf16, f16: exact widening
    }
    HLO_ASSIGN_OR_RETURN(std::vector<HloInstruction*> pieces, SplitIntoBf16(b, operand, parts));
    (side == 0 ? lhs_parts : rhs_parts) = std::move(pieces);
  }
  HloInstruction* sum = nullptr;
  for (auto [l, r] : Terms(precision)) {
    if (l >= static_cast<int>(lhs_parts.size()) || r >= static_cast<int>(rhs_parts.size())) {
      continue;  // a bf16 operand has no lower parts
    }
    HLO_ASSIGN_OR_RETURN(HloInstruction* term, Pass(b, *instr, lhs_parts[l], rhs_parts[r]));
    if (sum == nullptr) {
      sum = term;
    } else {
      HLO_ASSIGN_OR_RETURN(sum, b.Add(sum, term));
    }
  }
  if (instr->shape().element_type() != F32) {
    HLO_ASSIGN_OR_RETURN(sum, b.Convert(sum, instr->shape().element_type()));
  }
  return sum;
}

}  // namespace

hlo::Precision EffectivePrecision(const HloInstruction& contraction, hlo::Precision fallback) {
  const auto& stated = contraction.precision_config().operand_precision;
  return std::max({stated[0], stated[1], fallback});
}

int64_t BF16PassCount(hlo::Precision precision) {
  return static_cast<int64_t>(Terms(precision).size());
}

absl::StatusOr<bool> TpuNumerics::Run(hlo::HloModule* module) {
  emulated_f64_ops_ = 0;
  bool changed = false;
  for (hlo::HloComputation* computation : module->computations()) {
    std::vector<HloInstruction*> contractions;
    for (HloInstruction* instr : computation->instructions()) {
      if (IsContraction(*instr)) contractions.push_back(instr);
    }
    for (HloInstruction* instr : contractions) {
      const hlo::PrimitiveType type = instr->operand(0)->shape().element_type();
      if (type == hlo::F64) {
        ++emulated_f64_ops_;
        continue;
      }
      if (!hlo::IsFloatingPointType(type) || IsMxuPass(*instr)) continue;
      HLO_ASSIGN_OR_RETURN(HloInstruction* replacement,
                           ExpandIntoPasses(instr, EffectivePrecision(*instr, fallback_)));
      HLO_RETURN_IF_ERROR(computation->ReplaceInstruction(instr, replacement));
      changed = true;
    }
  }
  return changed;
}

}  // namespace jx::tpu

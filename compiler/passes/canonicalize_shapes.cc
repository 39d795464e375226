#include "jx/compiler/passes/canonicalize_shapes.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "jx/compiler/hlo/hlo_builder.h"
#include "jx/compiler/hlo/hlo_module.h"
#include "jx/compiler/hlo/instruction_prefetch.h"
#include "jx/compiler/hlo/status_macros.h"

namespace jx::hlo {
namespace {

std::vector<int64_t> InversePermutation(absl::Span<const int64_t> perm) {
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[perm[i]] = static_cast<int64_t>(i);
  return inverse;
}

// For broadcast(reshape(x)) where the reshape only inserts or removes size-1 dims: the
// broadcast dimensions that map x straight to the broadcast's result, if there are some.
std::optional<std::vector<int64_t>> BroadcastDimsThroughDegenerateReshape(
    const HloInstruction* bcast) {
  const HloInstruction* reshape = bcast->operand(0);
  absl::Span<const int64_t> x_dims = reshape->operand(0)->shape().dimensions();
  absl::Span<const int64_t> r_dims = reshape->shape().dimensions();
  absl::Span<const int64_t> out_dims = bcast->shape().dimensions();
  absl::Span<const int64_t> b = bcast->dimensions();
  // Non-1 dims pair up in order; anything else is a real reshape.
  std::vector<int64_t> x_big, r_big, x_ones, pool;
  for (size_t i = 0; i < x_dims.size(); ++i) (x_dims[i] == 1 ? x_ones : x_big).push_back(i);
  for (size_t j = 0; j < r_dims.size(); ++j) {
    if (r_dims[j] == 1) {
      pool.push_back(b[j]);  // a size-1 result dim the reshape already uses
    } else {
      r_big.push_back(j);
    }
  }
  if (x_big.size() != r_big.size()) return std::nullopt;
  std::vector<int64_t> dims(x_dims.size(), -1);
  for (size_t k = 0; k < x_big.size(); ++k) {
    if (x_dims[x_big[k]] != r_dims[r_big[k]]) return std::nullopt;
    dims[x_big[k]] = b[r_big[k]];
  }
  // x's size-1 dims land on size-1 result dims: first the reshape's own, then spare ones.
  absl::flat_hash_set<int64_t> used(b.begin(), b.end());
  for (size_t d = 0; d < out_dims.size(); ++d) {
    if (out_dims[d] == 1 && !used.contains(static_cast<int64_t>(d))) pool.push_back(d);
  }
  if (x_ones.size() > pool.size()) return std::nullopt;
  for (size_t k = 0; k < x_ones.size(); ++k) dims[x_ones[k]] = pool[k];
  return dims;
}

// Whether Canonicalizer::Rewrite may rewrite instr, from its and its operands' opcodes.
bool MayRewrite(const HloInstruction& instr) {
  switch (instr.opcode()) {
    case HloOpcode::kBroadcast:
      return instr.operand(0)->opcode() == HloOpcode::kBroadcast || instr.operand(0)->opcode() == HloOpcode::kReshape;
    case HloOpcode::kTranspose:
      return instr.operand(0)->opcode() == HloOpcode::kBroadcast;
    default:
      break;
  }
  if (!instr.IsElementwise()) return false;
  const auto& operands = instr.operands();
  return std::any_of(operands.begin(), operands.end(),
                     [](const HloInstruction* operand) { return operand->opcode() == HloOpcode::kTranspose; });
}

// Keep in step with MayRewrite.
class Canonicalizer {
 public:
  explicit Canonicalizer(HloComputation* computation) : b_(computation) {}

  // The replacement for instr, or nullptr.
  absl::StatusOr<HloInstruction*> Rewrite(HloInstruction* instr) {
    if (instr->opcode() == HloOpcode::kBroadcast) return RewriteBroadcast(instr);
    if (instr->opcode() == HloOpcode::kTranspose &&
        instr->operand(0)->opcode() == HloOpcode::kBroadcast) {
      const HloInstruction* bcast = instr->operand(0);
      const std::vector<int64_t> inverse = InversePermutation(instr->dimensions());
      std::vector<int64_t> dims;
      for (int64_t d : bcast->dimensions()) dims.push_back(inverse[d]);
      return b_.Broadcast(bcast->mutable_operand(0), instr->shape().dimensions(), dims);
    }
    if (instr->IsElementwise()) return SinkTransposes(instr);
    return nullptr;
  }

 private:
  absl::StatusOr<HloInstruction*> RewriteBroadcast(HloInstruction* bcast) {
    HloInstruction* operand = bcast->mutable_operand(0);
    if (operand->opcode() == HloOpcode::kBroadcast) {
      std::vector<int64_t> dims;
      for (int64_t d : operand->dimensions()) dims.push_back(bcast->dimensions(d));
      return b_.Broadcast(operand->mutable_operand(0), bcast->shape().dimensions(), dims);
    }
    if (operand->opcode() == HloOpcode::kReshape) {
      std::optional<std::vector<int64_t>> dims = BroadcastDimsThroughDegenerateReshape(bcast);
      if (dims.has_value()) {
        return b_.Broadcast(operand->mutable_operand(0), bcast->shape().dimensions(), *dims);
      }
    }
    return nullptr;
  }

  // elementwise(transpose(a, p), ...) -> transpose(elementwise(a, ...), p).
  absl::StatusOr<HloInstruction*> SinkTransposes(HloInstruction* instr) {
    // Check everything before adding anything, so a rejected rewrite leaves no debris.
    std::optional<absl::Span<const int64_t>> perm;
    for (const HloInstruction* operand : instr->operands()) {
      if (operand->opcode() == HloOpcode::kTranspose) {
        if (perm.has_value() && operand->dimensions() != *perm) return nullptr;
        if (operand->user_count() != 1) return nullptr;
        perm = operand->dimensions();
      } else if (operand->shape().rank() != 0 &&
                 !(operand->opcode() == HloOpcode::kBroadcast &&
                   operand->operand(0)->shape().rank() == 0)) {
        return nullptr;
      }
    }
    if (!perm.has_value()) return nullptr;
    // The shape before the transpose: result dim perm[i] of it is result dim i after.
    std::vector<int64_t> pre_dims(perm->size());
    for (size_t i = 0; i < perm->size(); ++i) {
      pre_dims[(*perm)[i]] = instr->shape().dimensions(static_cast<int64_t>(i));
    }
    std::vector<HloInstruction*> operands;
    for (HloInstruction* operand : instr->operands()) {
      if (operand->opcode() == HloOpcode::kTranspose) {
        operands.push_back(operand->mutable_operand(0));
      } else if (operand->shape().rank() == 0) {
        operands.push_back(operand);  // clamp's scalar bounds
      } else {  // a broadcast scalar
        HLO_ASSIGN_OR_RETURN(HloInstruction * splat,
                             b_.Broadcast(operand->mutable_operand(0), pre_dims, {}));
        operands.push_back(splat);
      }
    }
    // The same op on the untransposed operands; convert keeps its target type from the
    // shape, compare and reduce-precision their attributes.
    auto op = HloInstruction::Create(instr->opcode(),
                                     Shape(instr->shape().element_type(), {}), operands);
    if (instr->opcode() == HloOpcode::kCompare) {
      op->set_comparison_direction(instr->comparison_direction());
      op->set_comparison_type(instr->comparison_type());
    } else if (instr->opcode() == HloOpcode::kReducePrecision) {
      op->set_reduce_precision_bits(instr->exponent_bits(), instr->mantissa_bits());
    }
    op->set_metadata(instr->metadata());
    HLO_ASSIGN_OR_RETURN(HloInstruction * inner, b_.AddInstruction(std::move(op)));
    return b_.Transpose(inner, *perm);
  }

  HloBuilder b_;
};

}  // namespace

absl::StatusOr<bool> CanonicalizeShapes::RunOnComputation(HloComputation* computation) {
  if (!AnyInstruction(*computation, MayRewrite)) return false;  // most computations
  Canonicalizer canonicalizer(computation);
  bool changed = false;
  // Post order; a replacement only removes instructions earlier in the order.
  for (HloInstruction* instr : computation->MakeInstructionPostOrder()) {
    if (instr->user_count() == 0 && !instr->IsRoot()) continue;  // dead: DCE's business
    HLO_ASSIGN_OR_RETURN(HloInstruction * replacement, canonicalizer.Rewrite(instr));
    if (replacement == nullptr || replacement == instr) continue;
    HLO_RETURN_IF_ERROR(computation->ReplaceInstruction(instr, replacement));
    changed = true;
  }
  return changed;
}

absl::StatusOr<bool> CanonicalizeShapes::Run(HloModule* module) {
  bool changed = false;
  reached_fixed_point_ = false;
  constexpr int kMaxSweeps = 32;
  for (int sweep = 0; sweep < kMaxSweeps; ++sweep) {
    bool sweep_changed = false;
    for (HloComputation* computation : module->MakeComputationPostOrder()) {
      HLO_ASSIGN_OR_RETURN(bool c_changed, RunOnComputation(computation));
      sweep_changed |= c_changed;
    }
    changed |= sweep_changed;
    if (!sweep_changed) {
      reached_fixed_point_ = true;  // the last sweep found nothing to do
      break;
    }
  }
  return changed;
}

}  // namespace jx::hlo

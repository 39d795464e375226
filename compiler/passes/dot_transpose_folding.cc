#include "jx/compiler/passes/dot_transpose_folding.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "jx/compiler/hlo/hlo_module.h"
#include "jx/compiler/hlo/status_macros.h"

namespace jx::hlo {
namespace {

// The permutation that turns dot's [batch, lhs free, rhs free] result into [batch, rhs
// free, lhs free]: the result of the same dot with its operands swapped.
std::vector<int64_t> SwappedDotPermutation(const HloInstruction& dot) {
  const DotDimensionNumbers& dn = dot.dot_dimension_numbers();
  const int64_t nb = static_cast<int64_t>(dn.lhs_batch_dims.size());
  const int64_t nl = dot.operand(0)->shape().rank() - nb -
                     static_cast<int64_t>(dn.lhs_contracting_dims.size());
  const int64_t nr = dot.shape().rank() - nb - nl;
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < nb; ++i) perm.push_back(i);
  for (int64_t i = 0; i < nr; ++i) perm.push_back(nb + nl + i);
  for (int64_t i = 0; i < nl; ++i) perm.push_back(nb + i);
  return perm;
}

bool IsIdentity(absl::Span<const int64_t> perm) {
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

// A scalar, or a broadcast of one: the same value at every index in any order.
bool IsScalarLike(const HloInstruction* op) {
  return op->shape().rank() == 0 ||
         (op->opcode() == HloOpcode::kBroadcast && op->operand(0)->shape().rank() == 0);
}

// dot(b, a): dot(a, b)'s result in the swapped order `shape`.
HloInstruction* AddSwappedDot(HloComputation& computation, const HloInstruction& dot,
                              const Shape& shape) {
  DotDimensionNumbers dn = dot.dot_dimension_numbers();
  std::swap(dn.lhs_batch_dims, dn.rhs_batch_dims);
  std::swap(dn.lhs_contracting_dims, dn.rhs_contracting_dims);
  auto swapped = HloInstruction::Create(HloOpcode::kDot, shape,
                                        {dot.mutable_operand(1), dot.mutable_operand(0)});
  swapped->set_dot_dimension_numbers(std::move(dn));
  PrecisionConfig precision = dot.precision_config();
  std::swap(precision.operand_precision[0], precision.operand_precision[1]);
  swapped->set_precision_config(precision);
  swapped->set_metadata(dot.metadata());
  return computation.AddInstruction(std::move(swapped));
}

// The dot reading its transposed operands' sources directly, or nullptr when no operand
// transpose folds: a transpose folds when it keeps the operand's free dims in order.
HloInstruction* FoldOperandTransposes(HloComputation& computation, const HloInstruction& dot) {
  DotDimensionNumbers dn = dot.dot_dimension_numbers();
  HloInstruction* ops[2] = {dot.mutable_operand(0), dot.mutable_operand(1)};
  bool any = false;
  for (int i = 0; i < 2; ++i) {
    std::vector<int64_t>& batch = i == 0 ? dn.lhs_batch_dims : dn.rhs_batch_dims;
    std::vector<int64_t>& contracting = i == 0 ? dn.lhs_contracting_dims : dn.rhs_contracting_dims;
    // Through every foldable transpose in a row, so a second run finds none.
    while (ops[i]->opcode() == HloOpcode::kTranspose) {
      absl::Span<const int64_t> perm = ops[i]->dimensions();
      std::vector<bool> used(perm.size(), false);
      for (int64_t d : batch) used[d] = true;
      for (int64_t d : contracting) used[d] = true;
      int64_t last = -1;
      bool ordered = true;
      for (size_t d = 0; d < perm.size(); ++d) {
        if (used[d]) continue;
        ordered &= perm[d] > last;
        last = perm[d];
      }
      if (!ordered) break;
      for (int64_t& d : batch) d = perm[d];
      for (int64_t& d : contracting) d = perm[d];
      ops[i] = ops[i]->mutable_operand(0);
      any = true;
    }
  }
  if (!any) return nullptr;
  auto folded = HloInstruction::Create(HloOpcode::kDot, dot.shape(), {ops[0], ops[1]});
  folded->set_dot_dimension_numbers(std::move(dn));
  folded->set_precision_config(dot.precision_config());
  folded->set_metadata(dot.metadata());
  return computation.AddInstruction(std::move(folded));
}

// Inside a loop fusion's body, from the parameter holding the dot's result: the
// elementwise ops (of the dot's dims) it flows into, whose other operands are scalar-like
// or in the chain too, up to transposes by `perm`, and nothing else. Fills chain
// (parameter first) and transposes; false if the fusion reads the dot any other way.
bool FindTransposedChain(const HloComputation& body, HloInstruction* param,
                         const std::vector<int64_t>& perm, std::vector<HloInstruction*>* chain,
                         std::vector<HloInstruction*>* transposes) {
  absl::Span<const int64_t> dims = param->shape().dimensions();
  absl::flat_hash_set<const HloInstruction*> in_chain{param};
  chain->push_back(param);
  for (size_t i = 0; i < chain->size(); ++i) {
    for (HloInstruction* u : (*chain)[i]->users()) {
      if (in_chain.contains(u)) continue;
      if (u->opcode() == HloOpcode::kTranspose) {
        if (u->dimensions() != perm) return false;
        if (std::find(transposes->begin(), transposes->end(), u) == transposes->end()) {
          transposes->push_back(u);
        }
        continue;
      }
      if (!u->IsElementwise() || u->shape().dimensions() != dims) return false;
      in_chain.insert(u);
      chain->push_back(u);
    }
  }
  // Every chain op's operands are in the chain or scalar-like, and none is the result.
  for (const HloInstruction* u : *chain) {
    if (u == body.root_instruction()) return false;
    for (const HloInstruction* op : u->operands()) {
      if (!IsScalarLike(op) && !in_chain.contains(op)) return false;
    }
  }
  return !transposes->empty();
}

// Gives the chain and the scalar broadcasts it reads the dims `dims` (a broadcast read
// from outside the chain too is cloned first).
absl::Status TransposeChain(HloComputation& body, const std::vector<HloInstruction*>& chain,
                            const std::vector<int64_t>& dims) {
  absl::flat_hash_set<const HloInstruction*> in_chain(chain.begin(), chain.end());
  for (HloInstruction* u : chain) {
    for (int64_t k = 0; k < u->operand_count(); ++k) {
      HloInstruction* op = u->mutable_operand(k);
      if (op->opcode() != HloOpcode::kBroadcast || in_chain.contains(op)) continue;
      const bool shared = std::any_of(op->users().begin(), op->users().end(),
                                      [&](const HloInstruction* r) { return !in_chain.contains(r); });
      if (shared) {
        auto clone = HloInstruction::Create(HloOpcode::kBroadcast, op->shape(), {op->mutable_operand(0)});
        clone->set_dimensions({});
        HloInstruction* added = body.AddInstruction(std::move(clone));
        HLO_RETURN_IF_ERROR(u->ReplaceOperandWith(k, added));
        op = added;
      }
      in_chain.insert(op);
      *op->mutable_shape() = Shape(op->shape().element_type(), dims);
    }
    *u->mutable_shape() = Shape(u->shape().element_type(), dims);
  }
  return absl::OkStatus();
}

// Rewrites a loop fusion that reads `dot` only through swapping transposes to read the
// swapped dot instead. Returns whether it did.
absl::StatusOr<bool> FoldFusedResultTransposes(HloComputation& computation, HloInstruction* dot,
                                               HloInstruction* fusion) {
  if (fusion->opcode() != HloOpcode::kFusion || fusion->fusion_kind() != FusionKind::kLoop) {
    return false;
  }
  int64_t slot = -1, uses = 0;
  for (int64_t i = 0; i < fusion->operand_count(); ++i) {
    if (fusion->operand(i) == dot) slot = i, ++uses;
  }
  if (uses != 1) return false;
  HloComputation* body = fusion->fused_instructions_computation();
  HloInstruction* param = body->parameter_instruction(slot);
  const std::vector<int64_t> perm = SwappedDotPermutation(*dot);
  std::vector<HloInstruction*> chain, transposes;
  if (!FindTransposedChain(*body, param, perm, &chain, &transposes)) return false;
  const std::vector<int64_t> dims = SpanToVector(transposes[0]->shape().dimensions());
  HloInstruction* swapped =
      AddSwappedDot(computation, *dot, Shape(dot->shape().element_type(), dims));
  // Operand replacement requires equal shapes, so the old dot takes the new shape first
  // (it is removed right after).
  *dot->mutable_shape() = swapped->shape();
  HLO_RETURN_IF_ERROR(fusion->ReplaceOperandWith(slot, swapped));
  HLO_RETURN_IF_ERROR(TransposeChain(*body, chain, dims));
  // Each transpose now reads its operand in the order it produces: it is that operand.
  for (HloInstruction* t : transposes) {
    HLO_RETURN_IF_ERROR(t->ReplaceAllUsesWith(t->mutable_operand(0)));
    HLO_RETURN_IF_ERROR(body->RemoveInstruction(t));
  }
  HLO_RETURN_IF_ERROR(computation.RemoveInstruction(dot));
  return true;
}

// Replaces `old_instr` by `new_instr` and removes it, then the transposes in `maybe_dead`
// left without users and the transposes they alone read. Nothing else is removed (the
// caller's list of dots stays valid).
absl::Status Replace(HloComputation& computation, HloInstruction* old_instr,
                     HloInstruction* new_instr, std::vector<HloInstruction*> maybe_dead) {
  HLO_RETURN_IF_ERROR(old_instr->ReplaceAllUsesWith(new_instr));
  HLO_RETURN_IF_ERROR(computation.RemoveInstruction(old_instr));
  absl::flat_hash_set<const HloInstruction*> removed;  // pointers not to touch again
  while (!maybe_dead.empty()) {
    HloInstruction* t = maybe_dead.back();
    maybe_dead.pop_back();
    if (removed.contains(t) || t->opcode() != HloOpcode::kTranspose || t->user_count() != 0 ||
        t == computation.root_instruction()) {
      continue;
    }
    HloInstruction* source = t->mutable_operand(0);
    HLO_RETURN_IF_ERROR(computation.RemoveInstruction(t));
    removed.insert(t);
    maybe_dead.push_back(source);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<bool> DotTransposeFolding::RunOnComputation(HloComputation* computation) {
  std::vector<HloInstruction*> dots;
  for (HloInstruction* instr : computation->MakeInstructionPostOrder()) {
    if (instr->opcode() == HloOpcode::kDot && !instr->HasAttr(HloAttr::kAlgorithm)) {
      dots.push_back(instr);
    }
  }
  bool changed = false;
  for (HloInstruction* dot : dots) {
    if (HloInstruction* folded = FoldOperandTransposes(*computation, *dot)) {
      HLO_RETURN_IF_ERROR(Replace(*computation, dot, folded,
                                  {dot->mutable_operand(0), dot->mutable_operand(1)}));
      dot = folded;
      changed = true;
    }
    if (dot->user_count() != 1 || dot == computation->root_instruction()) continue;
    HloInstruction* user = dot->users()[0];
    if (user->opcode() == HloOpcode::kTranspose &&
        user->dimensions() == SwappedDotPermutation(*dot) && !IsIdentity(user->dimensions())) {
      HloInstruction* swapped = AddSwappedDot(*computation, *dot, user->shape());
      HLO_RETURN_IF_ERROR(Replace(*computation, user, swapped, {}));
      HLO_RETURN_IF_ERROR(computation->RemoveInstruction(dot));
      changed = true;
      continue;
    }
    HLO_ASSIGN_OR_RETURN(const bool fused, FoldFusedResultTransposes(*computation, dot, user));
    changed |= fused;
  }
  return changed;
}

absl::StatusOr<bool> DotTransposeFolding::Run(HloModule* module) {
  bool changed = false;
  for (HloComputation* computation : module->computations()) {
    if (computation->IsFusionComputation()) continue;
    HLO_ASSIGN_OR_RETURN(const bool c_changed, RunOnComputation(computation));
    changed |= c_changed;
  }
  return changed;
}

}  // namespace jx::hlo

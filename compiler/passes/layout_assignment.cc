#include "jx/compiler/passes/layout_assignment.h"

#include <numeric>
#include <utility>
#include <vector>

#include "jx/compiler/hlo/hlo_builder.h"
#include "jx/compiler/hlo/hlo_module.h"
#include "jx/compiler/hlo/instruction_prefetch.h"
#include "jx/compiler/hlo/status_macros.h"

namespace jx::hlo {
namespace {

bool HasDefaultLayout(const Shape& shape) {
  return shape.layout() == ShapeUtil::DefaultLayout(shape.rank());
}

// WithDefaultLayouts(shape) == shape, without building the shape: every instruction is
// asked, and nearly all already have their default layouts.
bool HasDefaultLayouts(const Shape& shape) {
  if (shape.IsTuple()) {
    if (!shape.dimensions().empty() || !(shape.layout() == Layout{})) return false;
    for (const Shape& e : shape.tuple_shapes()) {
      if (!HasDefaultLayouts(e)) return false;
    }
    return true;
  }
  if (!shape.IsArray()) return true;
  const Layout& layout = shape.layout();
  const int64_t rank = shape.rank();
  if (static_cast<int64_t>(layout.minor_to_major.size()) != rank || !layout.tiles.empty() ||
      layout.memory_space != kDefaultMemorySpace) {
    return false;
  }
  for (int64_t i = 0; i < rank; ++i) {
    if (layout.minor_to_major[i] != rank - 1 - i) return false;
  }
  return true;
}

// A custom-call that declares a valid, non-default array layout: the callee's contract.
bool HasPinnedLayout(const HloInstruction& instr) {
  const Shape& shape = instr.shape();
  return instr.opcode() == HloOpcode::kCustomCall && shape.IsArray() &&
         !HasDefaultLayout(shape) && ShapeUtil::ValidateShape(shape).ok();
}

// Dimension numbers from most major to most minor; row-major when the layout is missing.
std::vector<int64_t> MajorToMinor(const Shape& shape) {
  const MinorToMajor& m2m = shape.layout().minor_to_major;
  if (!ShapeUtil::ValidateShape(shape).ok()) {  // read as row-major: major to minor 0..r-1
    std::vector<int64_t> row_major(shape.rank());
    std::iota(row_major.begin(), row_major.end(), 0);
    return row_major;
  }
  return std::vector<int64_t>(m2m.rbegin(), m2m.rend());
}

struct BitcastLayouts {
  HloInstruction* bitcast;
  Shape operand_shape;  // as declared before this pass, layout included
  Shape result_shape;
};

// Rewrites a bitcast from `in` (physical layout included) to `out` into row-major ops that
// move the same bytes. Returns the replacement, or nullptr if the bitcast already is one.
absl::StatusOr<HloInstruction*> RowMajorBitcast(HloInstruction* bitcast, const Shape& in,
                                                const Shape& out) {
  const std::vector<int64_t> perm_in = MajorToMinor(in);
  const std::vector<int64_t> perm_out = MajorToMinor(out);
  std::vector<int64_t> physical_out(perm_out.size()), to_logical(perm_out.size());
  for (size_t k = 0; k < perm_out.size(); ++k) {
    physical_out[k] = out.dimensions(perm_out[k]);
    to_logical[perm_out[k]] = static_cast<int64_t>(k);
  }
  const bool in_noop = IsRowMajorNoOpTranspose(in.dimensions(), perm_in);
  const bool out_noop = IsRowMajorNoOpTranspose(physical_out, to_logical);
  if (in_noop && out_noop) return nullptr;

  HloBuilder b(bitcast->parent());
  b.set_shared_metadata(bitcast->shared_metadata());
  HloInstruction* cur = bitcast->mutable_operand(0);
  if (!in_noop) {
    HLO_ASSIGN_OR_RETURN(cur, b.Transpose(cur, perm_in));
  }
  const absl::Span<const int64_t> mid_dims = out_noop ? out.dimensions() : absl::Span<const int64_t>(physical_out);
  if (cur->shape().element_type() != out.element_type()) {
    HLO_ASSIGN_OR_RETURN(cur, b.Bitcast(cur, Shape(out.element_type(), mid_dims)));
  } else if (cur->shape().dimensions() != mid_dims) {
    HLO_ASSIGN_OR_RETURN(cur, b.Reshape(cur, mid_dims));
  }
  if (!out_noop) {
    HLO_ASSIGN_OR_RETURN(cur, b.Transpose(cur, to_logical));
  }
  return cur;
}

// Gives a pinned custom-call's readers (but copies) and its computation's result a
// row-major copy of it. Returns whether a copy was inserted.
absl::StatusOr<bool> InsertConvertingCopy(HloInstruction* instr) {
  HloComputation* computation = instr->parent();
  std::vector<HloInstruction*> readers;
  for (HloInstruction* user : instr->users()) {
    if (user->opcode() != HloOpcode::kCopy) readers.push_back(user);
  }
  if (readers.empty() && !instr->IsRoot()) return false;
  HloInstruction* copy = computation->AddInstruction(HloInstruction::Create(
      HloOpcode::kCopy, WithDefaultLayouts(instr->shape()), {instr}));
  copy->set_shared_metadata(instr->shared_metadata());
  for (HloInstruction* reader : readers) {
    HLO_RETURN_IF_ERROR(instr->ReplaceUseWith(reader, copy));
  }
  if (instr->IsRoot()) computation->set_root_instruction(copy);
  return true;
}

}  // namespace

Shape WithDefaultLayouts(const Shape& shape) {
  if (shape.IsTuple()) {
    std::vector<Shape> elements;
    elements.reserve(shape.tuple_shapes_size());
    for (const Shape& e : shape.tuple_shapes()) elements.push_back(WithDefaultLayouts(e));
    return Shape::Tuple(std::move(elements));
  }
  if (!shape.IsArray()) return shape;
  return Shape(shape.element_type(), shape.dimensions());
}

bool IsRowMajorNoOpTranspose(absl::Span<const int64_t> dims,
                             absl::Span<const int64_t> permutation) {
  int64_t last = -1;
  for (int64_t d : permutation) {
    if (dims[d] == 1) continue;
    if (d < last) return false;
    last = d;
  }
  return true;
}

absl::StatusOr<bool> LayoutAssignment::RunOnComputation(HloComputation* computation) {
  bool changed = false;
  // One walk finds all the work. Bitcasts mean what their declared layouts say, so layouts
  // change only after it has recorded them.
  std::vector<BitcastLayouts> bitcasts;
  std::vector<HloInstruction*> pinned, transposes, to_lay_out;
  const auto prefetch = [](const HloInstruction* ahead) {
    PrefetchInstructionHead(ahead);                       // opcode
    PrefetchBytes(&ahead->shape(), sizeof(ahead->shape()));  // element type, dims, layout
  };
  ForEachInStorageOrder(*computation, prefetch, [&](HloInstruction* instr) {
    switch (instr->opcode()) {
      case HloOpcode::kBitcast:
        bitcasts.push_back({instr, instr->operand(0)->shape(), instr->shape()});
        break;
      case HloOpcode::kTranspose:
        transposes.push_back(instr);
        break;
      default:
        break;
    }
    if (HasPinnedLayout(*instr)) {
      pinned.push_back(instr);
    } else if (!HasDefaultLayouts(instr->shape())) {
      to_lay_out.push_back(instr);
    }
    return true;
  });
  for (HloInstruction* instr : to_lay_out) {
    *instr->mutable_shape() = WithDefaultLayouts(instr->shape());
    changed = true;
  }

  for (const BitcastLayouts& bc : bitcasts) {
    HLO_ASSIGN_OR_RETURN(HloInstruction* replacement,
                         RowMajorBitcast(bc.bitcast, bc.operand_shape, bc.result_shape));
    if (replacement == nullptr) continue;
    HLO_RETURN_IF_ERROR(computation->ReplaceInstruction(bc.bitcast, replacement));
    changed = true;
  }

  for (HloInstruction* instr : pinned) {
    HLO_ASSIGN_OR_RETURN(bool inserted, InsertConvertingCopy(instr));
    changed |= inserted;
  }

  // Only the transposes recorded above: ones the bitcast rewrite adds are never no-ops,
  // and a bitcast the rewrite removed was never a transpose.
  for (HloInstruction* t : transposes) {
    const HloInstruction* operand = t->operand(0);
    if (!HasDefaultLayout(operand->shape()) ||
        !IsRowMajorNoOpTranspose(operand->shape().dimensions(), t->dimensions())) {
      continue;
    }
    HloInstruction* bitcast = computation->AddInstruction(
        HloInstruction::Create(HloOpcode::kBitcast, t->shape(), {t->mutable_operand(0)}));
    bitcast->set_shared_metadata(t->shared_metadata());
    HLO_RETURN_IF_ERROR(computation->ReplaceInstruction(t, bitcast));
    changed = true;
  }
  return changed;
}

absl::StatusOr<bool> LayoutAssignment::Run(HloModule* module) {
  bool changed = false;
  for (HloComputation* computation : module->computations()) {
    HLO_ASSIGN_OR_RETURN(bool c_changed, RunOnComputation(computation));
    changed |= c_changed;
  }
  return changed;
}

}  // namespace jx::hlo

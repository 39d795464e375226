#include "jx/compiler/backend/tpu/tpu_layout_assignment.h"

#include <optional>
#include <utility>
#include <vector>

#include "jx/compiler/backend/tpu/tpu_layout.h"
#include "jx/compiler/hlo/hlo_computation.h"
#include "jx/compiler/hlo/hlo_module.h"

namespace jx::tpu {
namespace {

using hlo::HloInstruction;
using hlo::Shape;

// `shape` with TPU tiles, keeping the memory space of each array (or forcing `space`).
Shape Tiled(const Shape& shape, std::optional<int64_t> space) {
  if (shape.IsTuple()) {
    std::vector<Shape> elements;
    for (const Shape& e : shape.tuple_shapes()) elements.push_back(Tiled(e, space));
    return Shape::Tuple(std::move(elements));
  }
  if (!shape.IsArray()) return shape;
  return WithTpuLayout(shape, space.value_or(shape.layout().memory_space));
}

// Whether the entry's root returns this value (itself or as an element of a root tuple).
bool IsEntryOutput(const HloInstruction* instr) {
  if (instr->IsRoot()) return true;
  for (const HloInstruction* user : instr->users()) {
    if (user->IsRoot() && user->opcode() == hlo::HloOpcode::kTuple) return true;
  }
  return false;
}

}  // namespace

absl::StatusOr<bool> TpuLayoutAssignment::Run(hlo::HloModule* module) {
  bool changed = false;
  const hlo::HloComputation* entry = module->entry_computation();
  for (hlo::HloComputation* computation : module->computations()) {
    for (HloInstruction* instr : computation->instructions()) {
      std::optional<int64_t> space;
      if (computation == entry &&
          (instr->opcode() == hlo::HloOpcode::kParameter || IsEntryOutput(instr))) {
        space = kHbmMemorySpace;
      }
      Shape tiled = Tiled(instr->shape(), space);
      if (tiled == instr->shape()) continue;
      *instr->mutable_shape() = std::move(tiled);
      changed = true;
    }
  }
  return changed;
}

}  // namespace jx::tpu

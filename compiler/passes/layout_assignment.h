// LayoutAssignment ("layout-assignment"): gives every array shape in the module (results,
// parameters, tuple elements, fused computations included) an explicit layout, for the
// CPU backend, whose kernels and literal converters read and write every buffer as dense
// row-major. So the target is the default layout {rank-1, ..., 0} everywhere:
//   - an instruction or parameter whose layout is missing or not the default gets it (the
//     entry parameters and result included). Values are logical, so this changes no
//     value: only the physical order the backend would store them in.
//   - a bitcast is the one op whose meaning depends on layouts (it reinterprets its
//     operand's physical buffer). One that reads or writes a non-default layout becomes
//     the row-major ops that move the same bytes: transpose(operand) into its physical
//     order, reshape (or a row-major bitcast, if the element type changes), and a
//     transpose back to logical order; steps that are physical no-ops are left out.
//   - a custom-call that declares a non-default array layout keeps it (the callee writes
//     that layout); every user but a copy then reads it through one inserted `copy` that
//     converts it to row-major, and so does the computation's result. A transpose gets the
//     copy too: the backend's transpose indexes its operand as row-major.
//   - a transpose that is a physical no-op in row-major (it only moves size-1 dims, e.g.
//     f32[1,8] -> f32[8,1]) becomes a bitcast. Transposes that would be no-ops only under
//     a non-default operand layout are left alone: choosing non-default layouts to absorb
//     them would need copies elsewhere, which this backend gains nothing from.
// Tuple-shaped custom-calls are laid out like everything else (no per-element constraint).
// Run returns whether a layout changed or an instruction was inserted or replaced; a second
// Run returns false.
//
//   LayoutAssignment layouts;
//   HLO_ASSIGN_OR_RETURN(bool changed, layouts.Run(module));
#pragma once

#include <cstdint>
#include <string_view>

#include "absl/types/span.h"
#include "jx/compiler/hlo/hlo_computation.h"
#include "jx/compiler/hlo/hlo_pass.h"

namespace jx::hlo {

class LayoutAssignment : public HloPass {
 public:
  std::string_view name() const override { return "layout-assignment"; }
  absl::StatusOr<bool> Run(HloModule* module) override;

  static absl::StatusOr<bool> RunOnComputation(HloComputation* computation);
};

// `shape` with the default layout on every array (recursively through tuples).
Shape WithDefaultLayouts(const Shape& shape);
// Whether transposing an array of `dims` by `permutation` moves no bytes in row-major order
// (the dims of size > 1 keep their relative order).
bool IsRowMajorNoOpTranspose(absl::Span<const int64_t> dims,
                             absl::Span<const int64_t> permutation);

}  // namespace jx::hlo

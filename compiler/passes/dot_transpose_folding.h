// DotTransposeFolding ("dot-transpose-folding"): folds transposes around dots into the dots,
// so a GEMM reads and writes the final order instead of a temporary that a separate
// transpose then moves element by element (how batched dots, vmapped dots and their
// transposes under grad lower). In the spirit of XLA's TransposeFolding, over every
// computation that is not a fusion body:
//   - operand transposes: dot(transpose(a), b) reads a with the transposed dimension
//     numbers, when the transpose keeps a's free dims in order (they order the result);
//   - result transposes: transpose(dot(a, b)) that swaps the lhs and rhs free dims is
//     dot(b, a), when the transpose is the dot's only user;
//   - fused result transposes: a loop fusion, the dot's only user, that reads the dot only
//     through such swapping transposes, possibly after elementwise ops whose other operands
//     are scalars or scalar broadcasts (transposes commute with them): the fusion reads
//     dot(b, a) and runs that chain in the transposed order, its transposes gone.
// Dots carrying an algorithm attribute are left alone. Values are unchanged bit for bit:
// a swapped dot multiplies the same pairs and sums them in the same order. Run must come
// after fusion (the third form looks inside fusions) and before layout assignment and
// scheduling (it adds and removes instructions). A second Run returns false.
//
//   DotTransposeFolding folding;
//   HLO_ASSIGN_OR_RETURN(bool changed, folding.Run(module));
#pragma once

#include <string_view>

#include "jx/compiler/hlo/hlo_computation.h"
#include "jx/compiler/hlo/hlo_pass.h"

namespace jx::hlo {

class DotTransposeFolding : public HloPass {
 public:
  std::string_view name() const override { return "dot-transpose-folding"; }
  absl::StatusOr<bool> Run(HloModule* module) override;

  static absl::StatusOr<bool> RunOnComputation(HloComputation* computation);
};

}  // namespace jx::hlo

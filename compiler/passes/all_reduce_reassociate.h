// AllReduceReassociate (XLA's pass of the same name): combining the results of two
// all-reduces with the op they both reduce with is the all-reduce of the combined operands,
//
//   add(all-reduce(a), all-reduce(b))  ->  all-reduce(add(a, b))
//
// when both all-reduces reduce with add (likewise multiply, maximum, minimum, and, or, xor
// with the matching op), exchange over the same partitions (replica groups, channel), have the
// same type, and feed nothing else. One collective instead of two; chains fold one link at a
// time (add(add(ar(a), ar(b)), ar(c)) ends as one all-reduce). This is what gradients summed
// over an unrolled loop of microbatches need: one all-reduce per accumulator per step.
//
// Floating-point sums are reassociated (the partitions' values are added in a different order),
// as XLA does on every target.
//
//   AllReduceReassociate pass;
//   HLO_ASSIGN_OR_RETURN(bool changed, pass.Run(module));
#pragma once

#include <string_view>

#include "jx/compiler/hlo/hlo_computation.h"
#include "jx/compiler/hlo/hlo_pass.h"

namespace jx::hlo {

class AllReduceReassociate : public HloPass {
 public:
  std::string_view name() const override { return "all-reduce-reassociate"; }
  absl::StatusOr<bool> Run(HloModule* module) override;

  static absl::StatusOr<bool> RunOnComputation(HloComputation* computation);
};

}  // namespace jx::hlo

// WhileLoopAllReduceCodeMotion (XLA's pass of the same name): a loop that all-reduces a value
// every trip only to add it to an accumulator it carries keeps the value unreduced inside the
// loop and all-reduces the accumulator once after it (the "unreduced gradient accumulation" of
// microbatched training: one all-reduce per accumulator per step instead of one per trip).
//
//   acc = init                                  acc = zeros
//   while (...) {                               while (...) {
//     g = ...                                     g = ...
//     acc = acc + all-reduce(g)          ->       acc = acc + g
//   }                                           }
//   use(acc)                                    use(init + all-reduce(acc))
//
// Also through ops linear in the reduced value (acc = acc + f(all-reduce(g)) with f a convert to
// a floating type, a negation, a reshape or transpose, or a scaling by a constant, as pmean's
// psum(g) / n: f(g) is summed and the accumulator's type all-reduced) and into a slice of the
// accumulator (acc = dynamic-update-slice(acc, dynamic-slice(acc, idx) + ..., idx): the whole
// buffer is all-reduced after; slices never written stay zero). Sound because the sum over the
// group is linear: the sum of the trips' all-reduces is the all-reduce of their sum, f commutes
// with it, and init is added once, outside it.
//
// It applies only where that holds: the all-reduce reduces with add and feeds only the
// accumulation; nothing in the loop (body or condition) reads the accumulator but that add
// (and its slice), so no use of a partially summed value moves; the accumulator is carried at
// one tuple index; the loop's results are read through get-tuple-element. Floating-point sums
// are reassociated (each partition sums its own trips first).
//
//   WhileLoopAllReduceCodeMotion pass;
//   HLO_ASSIGN_OR_RETURN(bool changed, pass.Run(module));
#pragma once

#include <string_view>

#include "jx/compiler/hlo/hlo_computation.h"
#include "jx/compiler/hlo/hlo_pass.h"

namespace jx::hlo {

class WhileLoopAllReduceCodeMotion : public HloPass {
 public:
  std::string_view name() const override { return "while-loop-all-reduce-code-motion"; }
  absl::StatusOr<bool> Run(HloModule* module) override;
};

}  // namespace jx::hlo

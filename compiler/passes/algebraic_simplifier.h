// AlgebraicSimplifier: local rewrites that are exact (the result is bit-for-bit what the
// original computes, up to the sign of a zero from x + 0, which XLA also folds):
//   x + 0, 0 + x, x - 0, x * 1, 1 * x, x / 1        -> x
//   x * 0, 0 * x                                    -> 0   (integers and pred only: for
//                                                          floats 0 * inf and 0 * nan are nan)
//   -(-x), max(x, x), min(x, x)                     -> x
//   and(x, true), or(x, false)                      -> x   (pred)
//   transpose(transpose(x))                         -> one transpose (identity: x)
//   reshape(reshape(x)), reshape to x's own shape   -> one reshape / x
//   broadcast to the operand's own shape            -> x
//   broadcast of a scalar constant, <= 8 elements   -> a constant
//   slice of the whole array, concatenate of one operand, convert to the same type,
//   pad with an all-zero config                     -> the operand
//   reduce over no dimensions (or only size-1 ones) with the reducer's identity as init
//                                                   -> the operand (reshaped)
//   select(constant pred, a, b)                     -> a or b
//   compare(x, x) on integers                       -> a constant true/false
//   dot with one size-1 contracting dim, no batch dims (an outer product)
//                                                   -> multiply of broadcasts
// Not folded because they are not exact: exp(log(x)), log(exp(x)), x * 0 for floats,
// x / x. The splat constants may appear as constant arrays or broadcasts of scalars.
// Runs on every computation until nothing changes, so a second Run returns false.
//
//   AlgebraicSimplifier algsimp;
//   HLO_ASSIGN_OR_RETURN(bool changed, algsimp.Run(module));
#pragma once

#include <string_view>

#include "jx/compiler/hlo/hlo_computation.h"
#include "jx/compiler/hlo/hlo_pass.h"

namespace jx::hlo {

class AlgebraicSimplifier : public HloPass {
 public:
  // Broadcasts of a scalar constant up to this many elements become constants.
  static constexpr int64_t kMaxFoldedBroadcastElements = 8;

  std::string_view name() const override { return "algsimp"; }
  absl::StatusOr<bool> Run(HloModule* module) override;
  // Unless the sweeps stopped at their bound with rewrites still applying.
  bool LastRunReachedFixedPoint() const override { return reached_fixed_point_; }

  // One sweep over a computation; true if anything was rewritten.
  static absl::StatusOr<bool> RunOnComputation(HloComputation* computation);

 private:
  bool reached_fixed_point_ = false;
};

}  // namespace jx::hlo

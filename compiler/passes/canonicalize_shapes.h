// CanonicalizeShapes ("canonicalize-shapes"): puts broadcast/reshape/transpose chains into
// one canonical form so later passes (fusion above all) see plain loops:
//   broadcast(reshape(x)), the reshape only inserting/removing size-1 dims
//                                   -> broadcast(x)   (when every size-1 dim of x can land
//                                                      on a size-1 result dim)
//   broadcast(broadcast(x))         -> broadcast(x)
//   transpose(broadcast(x))         -> broadcast(x) with permuted dimensions
//   elementwise(transpose(a, p), transpose(b, p), broadcast(scalar), ...)
//                                   -> transpose(elementwise(a, b, broadcast(scalar)), p)
//                                      (each transpose used only there, so the number of
//                                      transposes never grows; transposes sink to outputs)
// A reshape stays a reshape even when it is a bitcast in the default layout: choosing
// physical layouts is layout assignment's job, not this pass's.
// Runs to a fixed point on every computation; a second Run returns false.
//
//   CanonicalizeShapes canonicalize;
//   HLO_ASSIGN_OR_RETURN(bool changed, canonicalize.Run(module));
#pragma once

#include <string_view>

#include "jx/compiler/hlo/hlo_computation.h"
#include "jx/compiler/hlo/hlo_pass.h"

namespace jx::hlo {

class CanonicalizeShapes : public HloPass {
 public:
  std::string_view name() const override { return "canonicalize-shapes"; }
  absl::StatusOr<bool> Run(HloModule* module) override;
  // Unless the sweeps stopped at their bound with rewrites still applying.
  bool LastRunReachedFixedPoint() const override { return reached_fixed_point_; }

  // One sweep over a computation; true if anything was rewritten.
  static absl::StatusOr<bool> RunOnComputation(HloComputation* computation);

 private:
  bool reached_fixed_point_ = false;
};

}  // namespace jx::hlo

// WidenedWindowFusion, a CPU backend pass. The lowering writes a float sum or product over
// windows of a 16-bit or f32 array (cumsum, cumprod, reduce_window_sum) as
//   convert(x: T -> f64) -> reduce-window(f64, identity init) -> convert(f64 -> T)
// so that it accumulates in f64 (lax/reduction_lowering.cc). Run as three kernels, that is
// three passes over memory, two of them over an f64 copy. This pass wraps each such chain in
// one kCustom fusion, which kernel selection runs as the kernel library's T-typed scan or
// window (lax/kernels/cumulative.h, window.h): one pass that reads and writes T around an
// f64 accumulator, the very code eager runs, so jit and eager agree bit for bit.
//
//   HLO_ASSIGN_OR_RETURN(bool changed, WidenedWindowFusion().Run(module.get()));
//   const HloInstruction* window = WidenedReduceWindow(*fusion);  // inner reduce-window
#pragma once

#include <string_view>

#include "absl/status/statusor.h"
#include "jx/compiler/hlo/hlo_instruction.h"
#include "jx/compiler/hlo/hlo_module.h"
#include "jx/compiler/hlo/hlo_pass.h"

namespace jx::cpu {

class WidenedWindowFusion : public hlo::HloPass {
 public:
  std::string_view name() const override { return "cpu-widened-window-fusion"; }
  // Fuses every matching chain in every non-fused computation; keeps each computation's
  // schedule (the fusion takes the place of the chain's last convert).
  absl::StatusOr<bool> Run(hlo::HloModule* module) override;
};

// The reduce-window inside a fusion this pass built (its fused computation is
// param_0 -> convert -> reduce-window(constant identity) -> convert), else null.
const hlo::HloInstruction* WidenedReduceWindow(const hlo::HloInstruction& fusion);

}  // namespace jx::cpu

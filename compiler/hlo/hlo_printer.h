// Text form of HLO, as XLA writes it:
//
//   HloModule jit_f, entry_computation_layout={(f32[8]{0})->f32[8]{0}}
//
//   %fused_computation (param_0: f32[8]) -> f32[8] {
//     %param_0 = f32[8]{0} parameter(0)
//     ROOT %sine.1 = f32[8]{0} sine(f32[8]{0} %param_0)
//   }
//
//   ENTRY %main (Arg_0: f32[8]) -> f32[8] {
//     %Arg_0 = f32[8]{0} parameter(0)
//     ROOT %fusion = f32[8]{0} fusion(f32[8]{0} %Arg_0), kind=kLoop, calls=%fused_computation
//   }
//
// Computations print callees first, instructions in post order; attributes in HloAttr order.
// HloPrintOptions::ShortParsable() drops operand shapes; ParseHloModule reads both forms.
// The member functions HloModule/HloComputation/HloInstruction::ToString are defined in
// hlo_printer.cc.
#pragma once

#include <string>

#include "jx/compiler/hlo/hlo_module.h"

namespace jx::hlo {

inline std::string PrintHloModule(const HloModule& module, const HloPrintOptions& options = {}) {
  return module.ToString(options);
}

}  // namespace jx::hlo

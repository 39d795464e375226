// The target-independent part of the user-facing cost analysis (JAX's
// compiled.cost_analysis()) from the compiler's ModuleCost: flops, transcendentals and bytes
// (per argument and output). Every backend starts its CostAnalysis here; a target with a
// cost model (the TPU) then fills the time fields.
//
//   CostAnalysis cost = ToCostAnalysis(module_cost);
#pragma once

#include "jx/compiler/analysis/hlo_cost_analysis.h"
#include "jx/core/executable.h"

namespace jx {

inline CostAnalysis ToCostAnalysis(const hlo::ModuleCost& c) {
  CostAnalysis out;
  out.flops = c.flops;
  out.transcendentals = c.transcendentals;
  out.bytes_accessed = c.bytes_accessed;
  out.bytes_accessed_operand = c.bytes_accessed_per_parameter;
  out.bytes_accessed_output = c.bytes_accessed_output;
  return out;
}

}  // namespace jx

#include "jx/compiler/analysis/computation_runs.h"

#include <optional>
#include <vector>

#include "jx/compiler/analysis/hlo_cost_analysis.h"

namespace jx::hlo {

ComputationRuns CountComputationRuns(const HloModule& module) {
  ComputationRuns out;
  if (module.entry_computation() == nullptr) return out;
  out.runs[module.entry_computation()] = 1;
  // Callers before callees: a computation's count is final before its callees read it.
  std::vector<HloComputation*> order = module.MakeComputationPostOrder();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const int64_t runs = out.RunsOf(*it);
    if (runs == 0) continue;
    const bool exact = out.IsExact(*it);
    for (const HloInstruction* instr : (*it)->instructions()) {
      switch (instr->opcode()) {
        case HloOpcode::kWhile: {
          const std::optional<int64_t> trips = ConstantWhileTripCount(*instr);
          const int64_t n = trips.value_or(1);
          out.runs[instr->while_body()] += runs * n;
          out.runs[instr->while_condition()] += runs * (n + 1);
          if (!trips || !exact) {
            out.inexact.insert(instr->while_body());
            out.inexact.insert(instr->while_condition());
          }
          break;
        }
        case HloOpcode::kCall: case HloOpcode::kConditional:
          for (const HloComputation* callee : instr->called_computations()) {
            out.runs[callee] += runs;
            if (!exact) out.inexact.insert(callee);
          }
          break;
        default:
          break;
      }
    }
  }
  return out;
}

}  // namespace jx::hlo

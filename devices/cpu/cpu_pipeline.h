// The HLO pass pipeline jit runs for the CPU target. Order matters: constants a loop carries
// unchanged are sunk into its body first, then simplification and canonicalization (so CSE and
// folding see canonical forms), constant folding and a second simplification round over what
// folding exposed, DCE; loops' outer-product accumulations become one dot after the loop
// (WhileLoopOuterProductToDot) and loop state nothing reads leaves the loop
// (WhileLoopSimplifier); reduces no native kernel handles are expanded; fusion last among the
// rewrites (it only fuses what survives), dot-transpose folding (it looks into the loop fusions
// that read dots), then layout assignment and scheduling, which the CPU backend's buffer
// assignment follows. donated (one flag per entry argument leaf, jit's donate_argnums) lets the
// scheduler order the readers of a donated argument before the output that takes its memory.
//
//   hlo::HloPassPipeline pipeline("cpu");
//   AddCpuPasses(pipeline, donated);
//   HLO_ASSIGN_OR_RETURN(bool changed, pipeline.Run(module.get()));
#pragma once

#include <vector>

#include "jx/compiler/hlo/hlo_pass.h"

namespace jx {

void AddCpuPasses(hlo::HloPassPipeline& pipeline, const std::vector<bool>& donated = {});

}  // namespace jx

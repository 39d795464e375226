#include "jx/devices/cpu/cpu_pipeline.h"

#include "jx/compiler/backend/cpu/generic_reduce_expander.h"
#include "jx/compiler/passes/cse.h"
#include "jx/compiler/passes/dce.h"
#include "jx/compiler/passes/dot_transpose_folding.h"
#include "jx/compiler/passes/hlo_scheduling.h"
#include "jx/compiler/passes/instruction_fusion.h"
#include "jx/compiler/passes/layout_assignment.h"
#include "jx/compiler/passes/simplification_passes.h"
#include "jx/compiler/passes/while_loop_constant_sinking.h"
#include "jx/compiler/passes/while_loop_outer_product_to_dot.h"
#include "jx/compiler/passes/while_loop_simplifier.h"
#include "jx/compiler/passes/while_loop_unread_init_elimination.h"

namespace jx {

void AddCpuPasses(hlo::HloPassPipeline& pipeline, const std::vector<bool>& donated) {
  // Constants a loop carries unchanged are sunk into it before simplification folds them into
  // their readers (a slice of the ones-cotangent stack of a scan transpose becomes a splat).
  pipeline.AddPass<hlo::WhileLoopConstantSinking>();
  hlo::AddSimplificationPasses(pipeline);
  // After simplification (outer products are canonical multiplies of broadcasts by then);
  // CSE merges the trip index it reads with the loop's own.
  pipeline.AddPass<hlo::WhileLoopOuterProductToDot>();
  // State elements left unread (the sunk constants, the stacks the dot above now reads after
  // the loop) leave the loop.
  pipeline.AddPass<hlo::WhileLoopSimplifier>();
  pipeline.AddPass<hlo::HloCSE>();
  pipeline.AddPass<cpu::GenericReduceExpander>();
  pipeline.AddPass<hlo::InstructionFusion>();
  // After CSE (which would merge the buffers of equal shape) and fusion: stacks a loop fills
  // row by row start as buffers with no zero fill.
  pipeline.AddPass<hlo::WhileLoopUnreadInitElimination>();
  pipeline.AddPass<hlo::HloDCE>();
  pipeline.AddPass<hlo::DotTransposeFolding>();
  pipeline.AddPass<hlo::LayoutAssignment>();
  pipeline.AddPass<hlo::HloScheduling>(donated);
}

}  // namespace jx

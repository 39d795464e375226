#include "jx/devices/cpu/cpu_pipeline.h"

#include "jx/compiler/passes/algebraic_simplifier.h"
#include "jx/compiler/passes/canonicalize_shapes.h"
#include "jx/compiler/passes/constant_folding.h"
#include "jx/compiler/passes/cse.h"
#include "jx/compiler/passes/dce.h"
#include "jx/compiler/passes/dot_transpose_folding.h"
#include "jx/compiler/passes/hlo_scheduling.h"
#include "jx/compiler/passes/instruction_fusion.h"
#include "jx/compiler/passes/layout_assignment.h"

namespace jx {

void AddCpuPasses(hlo::HloPassPipeline& pipeline) {
  pipeline.AddPass<hlo::AlgebraicSimplifier>();
  pipeline.AddPass<hlo::CanonicalizeShapes>();
  pipeline.AddPass<hlo::HloCSE>();
  pipeline.AddPass<hlo::HloConstantFolding>();
  pipeline.AddPass<hlo::AlgebraicSimplifier>();
  pipeline.AddPass<hlo::HloDCE>();
  pipeline.AddPass<hlo::InstructionFusion>();
  pipeline.AddPass<hlo::HloDCE>();
  pipeline.AddPass<hlo::DotTransposeFolding>();
  pipeline.AddPass<hlo::LayoutAssignment>();
  pipeline.AddPass<hlo::HloScheduling>();
}

}  // namespace jx

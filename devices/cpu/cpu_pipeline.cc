#include "jx/devices/cpu/cpu_pipeline.h"

#include "jx/compiler/backend/cpu/generic_reduce_expander.h"
#include "jx/compiler/passes/dce.h"
#include "jx/compiler/passes/dot_transpose_folding.h"
#include "jx/compiler/passes/hlo_scheduling.h"
#include "jx/compiler/passes/instruction_fusion.h"
#include "jx/compiler/passes/layout_assignment.h"
#include "jx/compiler/passes/simplification_passes.h"

namespace jx {

void AddCpuPasses(hlo::HloPassPipeline& pipeline) {
  hlo::AddSimplificationPasses(pipeline);
  pipeline.AddPass<cpu::GenericReduceExpander>();
  pipeline.AddPass<hlo::InstructionFusion>();
  pipeline.AddPass<hlo::HloDCE>();
  pipeline.AddPass<hlo::DotTransposeFolding>();
  pipeline.AddPass<hlo::LayoutAssignment>();
  pipeline.AddPass<hlo::HloScheduling>();
}

}  // namespace jx

#include "jx/compiler/passes/simplification_passes.h"

#include "jx/compiler/passes/algebraic_simplifier.h"
#include "jx/compiler/passes/canonicalize_shapes.h"
#include "jx/compiler/passes/constant_folding.h"
#include "jx/compiler/passes/cse.h"
#include "jx/compiler/passes/dce.h"

namespace jx::hlo {

void AddSimplificationPasses(HloPassPipeline& pipeline) {
  pipeline.AddPass<AlgebraicSimplifier>();
  pipeline.AddPass<CanonicalizeShapes>();
  pipeline.AddPass<HloCSE>();
  pipeline.AddPass<HloConstantFolding>();
  pipeline.AddPass<AlgebraicSimplifier>();
  pipeline.AddPass<HloDCE>();
}

}  // namespace jx::hlo

// The target-independent cleanup every pass pipeline starts with (XLA's simplification
// loop, run once): algebraic simplification, shape canonicalization, CSE, constant folding,
// simplification again on what folding exposed, and DCE. The CPU and TPU pipelines add
// their own passes after it.
//
//   hlo::HloPassPipeline pipeline("tpu");
//   hlo::AddSimplificationPasses(pipeline);
//   pipeline.AddPass<tpu::TpuNumerics>(...);
#pragma once

#include "jx/compiler/hlo/hlo_pass.h"

namespace jx::hlo {

void AddSimplificationPasses(HloPassPipeline& pipeline);

}  // namespace jx::hlo

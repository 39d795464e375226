// The HLO pass pipeline of a TPU target: the passes every target shares, then the TPU's:
//   algsimp, canonicalize-shapes, cse, constant-folding, algsimp, dce   (shared cleanup)
//   while-loop-all-reduce-code-motion, all-reduce-reassociate   a sum of all-reduced values
//                       (gradients accumulated over microbatches) all-reduces once; a loop's
//                       sum of reduce-scattered ones (FSDP's) reduce-scatters once after it
//                       when the options name a chip and a collective timer, the exposed
//                       time the runs saved cost the step outweighs the bigger adds, and the
//                       full-size accumulators fit
//                       schedule_memory_limit_bytes beside the chip's peak (ChipPeakBytes,
//                       measured as the caller's CompiledMeasures say: a dry run's plan),
//                       the largest saving first (CollectiveCodeMotionOptions)
//   reduce-scatter-reassociate  an unrolled sum of reduce-scatters reduce-scatters once, with
//                       the same options (only where the loop's may move)
//   tpu-numerics        each dot/conv becomes its bf16 MXU passes (f32 accumulation), so
//                       the CPU backend computes what the TPU does; before fusion, so the
//                       bf16 roundings fuse into the loops that feed the dots
//   cse, fusion, dce, dot-transpose-folding                          (shared)
//   attention-fusion    a blocked attention's QK^T, softmax and P.V kernels become one
//                       kernel over batch x heads whose score blocks stay in VMEM
//   layout-assignment   row-major minor_to_major (the CPU's)
//   tpu-layout-assignment  (8,128) tiles, HBM for parameters and outputs
//   mxu-tiling          mxu_tiling={...} on every dot and convolution
//   hlo-scheduling      the order of least live memory
//   latency-hiding-scheduler  (programs with collectives, when the options name a chip)
//                       async-collective-creator (after dot-transpose-folding) made every
//                       collective a start/done pair; this order runs each start early and
//                       each done late, so compute hides the collective (the cost model and
//                       the collective timer give the times), within
//                       schedule_memory_limit_bytes of the chip's memory (ChipMemoryPeak: the
//                       planner's view, not the host emulation's); the order the VMEM pass walks
//   vmem-tiling         vmem_tiling={...} on kernels bigger than VMEM; VMEM residency (S(1))
// (tpu-numerics to vmem-tiling: CompileKernelsAndSchedule, which the code motion runs on copies)
// The module that comes out is what the cost model reads. To run it on the host, compile
// it with the CPU backend after the CPU's layout assignment (which drops the tiles and
// memory spaces the CPU has no use for):
//
//   hlo::HloPassPipeline pipeline("tpu");
//   tpu::AddTpuPasses(pipeline, tpu::TpuTargetOptions(spec));
//   HLO_ASSIGN_OR_RETURN(bool changed, pipeline.Run(module.get()));
//   // costs: read module; numbers: hlo::LayoutAssignment().Run(copy), then CompileForCpu
#pragma once

#include <cstdint>
#include <functional>

#include "absl/status/statusor.h"
#include "jx/compiler/backend/tpu/tpu_numerics.h"
#include "jx/compiler/backend/tpu/tpu_target_options.h"
#include "jx/compiler/hlo/hlo_pass.h"
#include "jx/compiler/passes/while_loop_all_reduce_code_motion.h"

namespace jx::tpu {

// What a caller that plans the program (a dry run) measures better than the pipeline, on a
// copy compiled for the chip (the module after CompileKernelsAndSchedule):
//   peak_bytes: its memory (unset: the scheduler's view, ChipMemoryPeak, with the dry run's
//     nesting rule, a loop body's arena added to the entry's peak: hlo::EstimatedPeakBytes);
//   step_seconds: its step time (unset: the hoists are not checked against the step).
// A dry run passes its own (devices/tpu/dry_run_measures.h: ChipMemory and the planned
// step), so the code motion's gates hold what the plan reports.
struct CompiledMeasures {
  std::function<absl::StatusOr<int64_t>(const hlo::HloModule& compiled)> peak_bytes{};
  std::function<absl::StatusOr<double>(const hlo::HloModule& compiled)> step_seconds{};
};

void AddTpuPasses(hlo::HloPassPipeline& pipeline, const TpuTargetOptions& options,
                  const CompiledMeasures& measures = {});

// How the pipeline moves collectives out of loops: all-reduces always; reduce-scatters when
// `options` name a chip and a collective timer, priced by what the step loses as the chip's
// schedule runs it (ReduceScatterHoistPricer: the exposed time of the runs saved against the
// bigger adds and the run after the loop), within schedule_memory_limit_bytes beside the
// program's peak as ChipPeakBytes estimates it (with measures.peak_bytes); with
// measures.step_seconds, the hoists taken are checked against the step of a compiled copy.
hlo::WhileLoopAllReduceCodeMotionOptions CollectiveCodeMotionOptions(const TpuTargetOptions& options,
                                                                     const CompiledMeasures& measures = {});

// The pipeline's passes after the code motion (TPU numerics, fusion, the attention kernel,
// asynchronous collectives, layouts, MXU tiles, the memory scheduler's and the latency-hiding
// scheduler's orders, VMEM tiles), on `module`: the copies the code motion measures and
// prices. Not verified: a copy is measured, never run.
absl::Status CompileKernelsAndSchedule(hlo::HloModule* module, const TpuTargetOptions& options);

// The most bytes `module` (as it stands early in the pipeline, before TpuNumerics) will hold
// live at once on the chip: a copy is given CompileKernelsAndSchedule, then measured by
// measures.peak_bytes (unset: ChipMemoryPeak with hlo::EstimatedPeakBytes' nesting rule). An unfused
// program would count every intermediate of an element-wise chain (MaxText 32B's microbatch
// loop: 23 GB where the plan holds 3.2 GiB).
absl::StatusOr<int64_t> ChipPeakBytes(const hlo::HloModule& module, const TpuTargetOptions& options,
                                      const CompiledMeasures& measures = {});

}  // namespace jx::tpu

// The HLO pass pipeline of a TPU target: the passes every target shares, then the TPU's:
//   algsimp, canonicalize-shapes, cse, constant-folding, algsimp, dce   (shared cleanup)
//   while-loop-all-reduce-code-motion, all-reduce-reassociate   a sum of all-reduced values
//                       (gradients accumulated over microbatches) all-reduces once; a loop's
//                       sum of reduce-scattered ones (FSDP's) reduce-scatters once after it
//                       when the options name a chip and a collective timer, the runs saved
//                       outweigh the bigger adds, and the full-size accumulators fit
//                       schedule_memory_limit_bytes beside the chip's peak (ChipPeakBytes),
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
// The module that comes out is what the cost model reads. To run it on the host, compile
// it with the CPU backend after the CPU's layout assignment (which drops the tiles and
// memory spaces the CPU has no use for):
//
//   hlo::HloPassPipeline pipeline("tpu");
//   tpu::AddTpuPasses(pipeline, tpu::TpuTargetOptions(spec));
//   HLO_ASSIGN_OR_RETURN(bool changed, pipeline.Run(module.get()));
//   // costs: read module; numbers: hlo::LayoutAssignment().Run(copy), then CompileForCpu
#pragma once

#include "jx/compiler/backend/tpu/tpu_numerics.h"
#include "jx/compiler/backend/tpu/tpu_target_options.h"
#include "jx/compiler/hlo/hlo_pass.h"
#include "jx/compiler/passes/while_loop_all_reduce_code_motion.h"

namespace jx::tpu {

void AddTpuPasses(hlo::HloPassPipeline& pipeline, const TpuTargetOptions& options);

// How the pipeline moves collectives out of loops: all-reduces always; reduce-scatters when
// `options` name a chip and a collective timer, priced as the trips' runs of the reduce-scatter
// (the timer's seconds) saved against the one after the loop (as many runs as the accumulator
// holds blocks: one for a plain sum, the rows of a stack written row by row) and each trip's
// add reading and writing 3 x (full - block) more bytes at the chip's HBM bandwidth, within
// schedule_memory_limit_bytes beside the program's peak as ChipPeakBytes estimates it.
hlo::WhileLoopAllReduceCodeMotionOptions CollectiveCodeMotionOptions(const TpuTargetOptions& options);

// The most bytes `module` (as it stands early in the pipeline, before TpuNumerics) will hold
// live at once on the chip: a copy is given the pipeline's kernel passes (TPU numerics, fusion,
// the attention kernel) and the memory scheduler's order, then measured as the scheduler
// measures orders (ChipMemoryPeak: MXU operands read as stored) with the dry run's nesting
// rule (a loop body's arena added to the entry's peak: hlo::EstimatedPeakBytes). An unfused
// program would count every intermediate of an element-wise chain (MaxText 32B's microbatch
// loop: 23 GB where the plan holds 3.2 GiB).
absl::StatusOr<int64_t> ChipPeakBytes(const hlo::HloModule& module, const TpuTargetOptions& options);

}  // namespace jx::tpu

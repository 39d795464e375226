// The TPU client's compiler driver: a traced jaxpr is lowered with the "tpu" platform's rules
// (module "jit_<name>"), optimized by the TPU pass pipeline for the chip's generation
// (compiler/backend/tpu/tpu_pipeline.h: TPU numerics, fusion, tiled layouts, MXU and VMEM
// tiling), costed by the TPU cost model, checked against the chip's HBM (a peak above its
// capacity is a ResourceExhaustedError at compile time) and compiled for the host by the
// CPU backend, which computes the TPU's numbers (they are written into the program).
// Nothing is allocated: a program far larger than the host's memory compiles (a dry run).
// Programs are shared through the devices' program cache, per chip.
//
//   std::shared_ptr<const Lowering> lowering = LowerForTpu(jaxpr, {.name = "f"}, chip);
//   auto exe = lowering->Compile();          // TpuProgram (tpu_program.h)
//   exe->cost_analysis().predicted_seconds;  // on this chip's generation
//
// A program with f64 values prints, once per process, that the chip emulates f64.
#pragma once

#include <memory>
#include <vector>

#include "jx/core/executable.h"
#include "jx/core/jaxpr.h"
#include "jx/devices/tpu/tpu_chip.h"

namespace jx::hlo {
class HloModule;
}

namespace jx::tpu {

std::shared_ptr<const Lowering> LowerForTpu(const ClosedJaxpr& jaxpr, const LoweringOptions& options,
                                            const TpuChip& chip);

class TpuClient;
// The per-device jaxpr of an SPMD program (collectives, axis_index as partition-id) lowered
// once for `chips` (partition p on chips[p]); Compile gives a PodProgram (pod_program.h),
// cached by its text and chips.
std::shared_ptr<const Lowering> LowerForPod(const ClosedJaxpr& jaxpr, const LoweringOptions& options,
                                            const TpuClient& client, std::vector<const TpuChip*> chips);

}  // namespace jx::tpu

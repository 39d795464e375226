// One kernel's time on a TPU chip (TPU.md, "Single-chip roofline"): its compute and its memory
// traffic overlap, so it takes the slower of the two, plus the fixed cost of its launch and of
// its pipelined grid steps. One formula for every caller that prices a kernel: the TPU cost
// model's per-instruction rows and the SPMD partitioner's strategies, priced before there is
// HLO (sharding/spmd/spmd_cost.h).
//
//   const KernelTime k = KernelRoofline(spec, {.compute_seconds = mxu, .hbm_bytes = 3 << 20});
//   k.seconds;  // max(mxu, 3 MiB / HBM bandwidth) + launch + one grid step
#pragma once

#include <cstdint>

#include "jx/compiler/backend/tpu/tpu_chip_spec.h"

namespace jx::tpu {

// What a kernel does, for the roofline.
struct KernelWork {
  double compute_seconds = 0;  // the busier of its units (MXU, VPU): VLIW bundles issue both
  double hbm_bytes = 0;        // moved between HBM and VMEM
  double onchip_bytes = 0;     // moved between VMEM and the units (0: what HBM supplies)
  int64_t grid_steps = 1;      // pipelined VMEM grid steps (1 for a kernel that fits VMEM)
};

struct KernelTime {
  double compute_seconds = 0;
  double memory_seconds = 0;    // the slower of HBM and VMEM traffic
  double overhead_seconds = 0;  // launch and grid steps
  double seconds = 0;           // max(compute, memory) + overhead
};

// A megacore chip (v4, v5p, v7) deals a grid's steps over its TensorCores, each pipelining its
// share from its own VMEM: the per-step cost is paid once per core's share.
KernelTime KernelRoofline(const TpuChipSpec& spec, const KernelWork& work);

}  // namespace jx::tpu

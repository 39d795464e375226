#include "jx/compiler/backend/tpu/kernel_roofline.h"

#include <algorithm>

#include "jx/compiler/backend/tpu/tpu_layout.h"

namespace jx::tpu {

KernelTime KernelRoofline(const TpuChipSpec& spec, const KernelWork& work) {
  const double onchip_bytes = std::max(work.onchip_bytes, work.hbm_bytes);
  KernelTime t;
  t.compute_seconds = work.compute_seconds;
  t.memory_seconds = work.hbm_bytes / spec.hbm_bandwidth;
  if (onchip_bytes > 0) t.memory_seconds = std::max(t.memory_seconds, onchip_bytes / spec.vmem_bandwidth);
  const int64_t steps_per_core = CeilDiv(work.grid_steps, std::max<int64_t>(1, spec.tensor_cores));
  t.overhead_seconds = spec.kernel_launch_s + static_cast<double>(steps_per_core) * spec.grid_step_s;
  t.seconds = std::max(t.compute_seconds, t.memory_seconds) + t.overhead_seconds;
  return t;
}

}  // namespace jx::tpu

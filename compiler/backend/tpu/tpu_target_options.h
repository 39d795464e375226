// What the TPU target passes need to know about the chip they compile for: a few numbers
// from its tpu::TpuChipSpec, kept in one small struct so passes and tests can state them
// directly (a v5e-like target: mxu_dim 128, 4 MXUs, 128 MiB of VMEM).
//
//   TpuTargetOptions v5e(spec);                        // from the chip-spec table
//   TpuTargetOptions small{.generation = "test", .vmem_bytes = 1 << 20};
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include "jx/compiler/backend/tpu/collective_timer.h"
#include "jx/compiler/backend/tpu/tpu_chip_spec.h"
#include "jx/compiler/hlo/hlo_attributes.h"

namespace jx::tpu {

struct TpuTargetOptions {
  std::string generation = "v5e";
  int64_t mxu_dim = 128;           // MXUs are mxu_dim x mxu_dim (256 on v6e and v7)
  int64_t num_mxus = 4;            // MXUs the tiles of one dot are spread over
  int64_t vmem_bytes = 128 << 20;  // VMEM per TensorCore
  // The least precision of every dot and convolution (those that state none run at it);
  // the numerics pass reads it.
  hlo::Precision default_precision = hlo::Precision::kDefault;
  // A blocked attention's QK^T, softmax and P.V kernels run as one kernel whose score blocks
  // stay in VMEM (attention_fusion.h), as a Pallas flash-attention kernel does; off: each is
  // its own kernel, its blocks passing through HBM.
  bool attention_fusion = true;
  // Collectives become start/done pairs the latency-hiding scheduler spaces, timing
  // instructions on `chip` (the cost model) and collectives with collective_timer (the pod's
  // torus; null for a program on one chip). Without a chip they stay synchronous.
  bool async_collectives = true;
  std::optional<TpuChipSpec> chip;
  const CollectiveTimer* collective_timer = nullptr;
  // Collectives of one kind in flight at once, and the most bytes a schedule may keep live
  // (overlap extends live ranges).
  int64_t max_in_flight_per_kind = 1;
  int64_t schedule_memory_limit_bytes = std::numeric_limits<int64_t>::max();

  TpuTargetOptions() = default;
  // One core's view of the chip: megacore chips (v4, v5p) run one program over both
  // cores, so the MXUs of every core count.
  explicit TpuTargetOptions(const TpuChipSpec& spec)
      : generation(spec.generation),
        mxu_dim(spec.mxu_dim),
        num_mxus(spec.num_mxus()),
        vmem_bytes(spec.vmem_bytes),
        chip(spec),
        schedule_memory_limit_bytes(spec.hbm_bytes) {}
};

}  // namespace jx::tpu

// The hardware description a TPU target is compiled and costed for: one chip generation's
// constants, for one JAX device (a whole chip, or one TensorCore on v2/v3/v7). The values live in one table in devices/ (devices/tpu/chip_specs.cc), each with
// its public source (../shared/TPU.md); the compiler's passes and cost model read them
// through this struct, so the compiler never depends on the devices layer.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace jx::tpu {

struct TpuChipSpec {
  std::string generation;        // "v2", "v3", "v4", "v5e", "v5p", "v6e", "v7"
  std::string device_kind;       // JAX's device_kind: "TPU v5 lite", "TPU v4", ...
  // JAX devices per chip: 2 on v2/v3/v7, whose TensorCores JAX lists as devices (the constants
  // below are then per TensorCore: one device's), 1 where a device is a whole chip.
  int64_t devices_per_chip = 1;
  // Compute.
  double bf16_flops = 0;         // peak bf16 FLOP/s of one device
  double int8_ops = 0;           // peak int8 OP/s (fp8 on v7)
  int64_t tensor_cores = 1;
  int64_t mxus_per_core = 1;
  int64_t mxu_dim = 128;         // an MXU is mxu_dim x mxu_dim (128, or 256 on v6e/v7)
  double clock_hz = 0;           // derived: bf16_flops / (cores * MXUs * dim^2 * 2)
  int64_t vpu_sublanes = 8;      // the VPU is sublanes x lanes f32 ALUs per core
  int64_t vpu_lanes = 128;
  // Memory.
  int64_t hbm_bytes = 0;         // per device
  double hbm_bandwidth = 0;      // B/s
  int64_t vmem_bytes = 0;        // per core
  double vmem_bandwidth = 0;     // B/s between VMEM and the compute units, per device
  // Interconnect.
  double ici_link_bandwidth = 0; // one-way B/s per link
  int64_t ici_links = 0;
  // One-way B/s of the on-chip path between the TensorCores of one chip (devices_per_chip 2);
  // the path crosses no ICI hop.
  double core_link_bandwidth = 0;
  int64_t torus_rank = 2;        // 2D or 3D torus
  std::vector<int64_t> full_pod; // the largest slice's shape, in chips
  double ici_hop_latency_s = 1e-6;     // per hop a message crosses (TPU.md: about 1 us)
  double ici_collective_fixed_s = 0;   // t0: start-up cost every collective pays once
  double ici_efficiency = 1;           // eta: achieved fraction of ici_link_bandwidth
  // Fixed overheads (keep tiny ops from looking free).
  double kernel_launch_s = 0;    // per executed kernel (fusion, dot, ...)
  double grid_step_s = 0;        // per pipelined VMEM grid step

  int64_t num_mxus() const { return tensor_cores * mxus_per_core; }
  // The VPU's f32 FLOP/s: one op per ALU per cycle on every core.
  double vpu_flops() const { return static_cast<double>(tensor_cores * vpu_sublanes * vpu_lanes) * clock_hz; }
};

}  // namespace jx::tpu

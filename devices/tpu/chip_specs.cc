#include "jx/devices/tpu/chip_specs.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "jx/core/errors.h"

namespace jx::tpu {
namespace {

constexpr int64_t kKiB = 1024;
constexpr int64_t kMiB = 1024 * kKiB;
constexpr int64_t kGiB = 1024 * kMiB;
constexpr int64_t kGB = 1000 * 1000 * 1000;

// Sources (../shared/TPU.md):
//  [book]  J. Austin et al., "How to Scale Your Model" (the JAX team's scaling book), parts
//          "How to Think About TPUs" (chip table, MXU/VPU/VMEM) and "All About Rooflines".
//  [cloud] Cloud TPU system architecture pages (cloud.google.com/tpu/docs/v3 ... /v7),
//          for core and MXU counts, device kinds and pod shapes.
//  [pallas] JAX Pallas TPU pipelining notes: ~0.35 us of fixed cost per pipelined grid step,
//          measured on v5e.
//  [ppermute] the ppermute latency/bandwidth sweep on v5p and v6e quoted in TPU.md
//          ("Collectives", fixed cost): t = t0 + hops * t_hop + bytes / (eta * W).
//  [jouppi] Jouppi et al., "In-Datacenter Performance Analysis of a TPU" (ISCA 2017):
//          weights are double-buffered in the MXU to hide the tile shift-in.
//  [book9] the scaling book, Part 9 "How to Profile TPU Programs": a Transformer profiled on
//          "8 TPUv2 cores" (a Colab v2-8) at 23e12 bf16 FLOP/s per core, the cores a "TPUv2
//          4x2" whose neighbours exchange at 1.2e11 B/s bidirectional.
//  [cacm20] Jouppi et al., "A Domain-Specific Supercomputer for Training Deep Neural
//          Networks" (CACM 2020), TPUv2: 2 TensorCores per chip, one 128x128 MXU per core,
//          700 MHz, 16 GiB of HBM at 700 GB/s per chip, 4 ICI links, 256-chip 2D-torus pods.

// VMEM feeds the MXU and VPU at about 22x the HBM bandwidth [book, "How to Think About
// TPUs": VMEM bandwidth vs HBM], so a kernel working from VMEM needs an intensity of only
// ~10-20 FLOPs/byte to be compute-bound.
constexpr double kVmemToHbmBandwidth = 22;

// Per-kernel and per-grid-step fixed costs [pallas]. Only v5e was measured; the other
// generations reuse it (a model assumption: the step cost is a few hundred cycles of
// DMA/semaphore bookkeeping on every generation).
constexpr double kGridStepSeconds = 0.35e-6;
constexpr double kKernelLaunchSeconds = 0.35e-6;

// ICI collective constants [ppermute]: a public ppermute sweep on real chips fits
// t = 4.55 us + bytes / 86.3 GB/s on v5p and 2.29 us + bytes / 86.8 GB/s on v6e (links of
// 90 GB/s one-way): the intercepts are t0, the slopes eta = 86.3/90 = 0.959 and 86.8/90 =
// 0.964. Only v5p and v6e were measured; the other 3D generations (v4, v7) reuse v5p's
// constants and the other 2D generations (v3, v5e) v6e's (a model assumption: the start-up
// is DMA and semaphore bookkeeping alike within a family).
constexpr double kFixed3d = 4.55e-6, kEfficiency3d = 86.3e9 / 9e10;
constexpr double kFixed2d = 2.29e-6, kEfficiency2d = 86.8e9 / 9e10;

// Fills the derived fields: the clock from peak = cores x MXUs x R x C x 2 x f (TPU.md), the
// VMEM bandwidth and the fixed overheads.
TpuChipSpec Finish(TpuChipSpec spec) {
  const double macs_per_cycle = static_cast<double>(spec.tensor_cores * spec.mxus_per_core *
                                                    spec.mxu_dim * spec.mxu_dim);
  spec.clock_hz = spec.bf16_flops / (2 * macs_per_cycle);
  spec.vmem_bandwidth = kVmemToHbmBandwidth * spec.hbm_bandwidth;
  spec.kernel_launch_s = kKernelLaunchSeconds;
  spec.grid_step_s = kGridStepSeconds;
  spec.ici_collective_fixed_s = spec.torus_rank == 3 ? kFixed3d : kFixed2d;
  spec.ici_efficiency = spec.torus_rank == 3 ? kEfficiency3d : kEfficiency2d;
  return spec;
}

std::vector<TpuChipSpec> MakeTable() {
  std::vector<TpuChipSpec> table;
  // v2 [book9; cacm20; cloud/v2] and v3 [book chip table; cloud/v3] are rows per TensorCore,
  // not per chip: JAX lists each core of a v2/v3 chip as its own device (a v2-8 or v3-8 board
  // of 2x2 chips is 8 devices; the book profiles "8 TPUv2 cores" as a "TPUv2 4x2"), each with
  // its own MXUs and half the chip's HBM. make_pod takes the slice's shape in chips and makes
  // two devices per chip whose cores are joined by the on-chip path (devices_per_chip,
  // core_link_bandwidth; ici::Torus's core axis). ICI links run between chips; a model
  // simplification gives each core its own ports (the book's 4x2 grid of equal links).
  //
  // v2: the peak is the book's 23e12 per core (cacm20: 46e12 per chip of 2 cores); one
  // 128x128 MXU per core gives the derived clock 0.70 GHz, cacm20's 700 MHz. HBM per core:
  // half of the chip's 16 GiB and 700 GB/s [cacm20]. ICI: the book's 1.2e11 B/s bidirectional
  // between neighbouring cores, 6e10 one-way per link, 4 links of a 2D torus, 16x16 chips a
  // pod [cacm20]. The two cores of a chip exchange at the same 6e10 one-way: the book's
  // neighbours include the core pair (its 2-way model axis, which the profile shows moving
  // 134 MB in 1.13 ms). v2 has no int8 MXU mode: int8_ops is the bf16 rate. VMEM: no
  // published v2 figure; v3's 16 MiB per core (a model assumption).
  table.push_back(Finish({.generation = "v2",
                          .device_kind = "TPU v2",
                          .devices_per_chip = 2,
                          .bf16_flops = 23e12,
                          .int8_ops = 23e12,
                          .tensor_cores = 1,
                          .mxus_per_core = 1,
                          .mxu_dim = 128,
                          .hbm_bytes = 8 * kGiB,
                          .hbm_bandwidth = 3.5e11,
                          .vmem_bytes = 16 * kMiB,
                          .ici_link_bandwidth = 6e10,
                          .ici_links = 4,
                          .core_link_bandwidth = 6e10,
                          .torus_rank = 2,
                          .full_pod = {16, 16}}));
  // v3: half of the book's 1.4e14 per chip per core (the book's numbers win over Cloud's 123
  // TFLOP/s), 2 MXUs of 128x128 per core [cloud/v3]: derived clock 1.07 GHz. HBM per core:
  // half of the chip's 32 GiB and 9.0e11 B/s [book; cloud/v3: 32 GiB, 900 GBps per chip].
  // The core pair's on-chip path has no published rate: the ICI link's 1e11 one-way, as v2's
  // pair matches its links (a model assumption).
  table.push_back(Finish({.generation = "v3",
                          .device_kind = "TPU v3",
                          .devices_per_chip = 2,
                          .bf16_flops = 7e13,
                          .int8_ops = 7e13,
                          .tensor_cores = 1,
                          .mxus_per_core = 2,
                          .mxu_dim = 128,
                          .hbm_bytes = 16 * kGiB,
                          .hbm_bandwidth = 4.5e11,
                          .vmem_bytes = 16 * kMiB,
                          .ici_link_bandwidth = 1e11,
                          .ici_links = 4,
                          .core_link_bandwidth = 1e11,
                          .torus_rank = 2,
                          .full_pod = {32, 32}}));
  // v4 [book; cloud/v4: 2 TensorCores (megacore) x 4 MXUs]. Derived clock 1.05 GHz.
  table.push_back(Finish({.generation = "v4",
                          .device_kind = "TPU v4",
                          .bf16_flops = 2.75e14,
                          .int8_ops = 2.75e14,
                          .tensor_cores = 2,
                          .mxus_per_core = 4,
                          .mxu_dim = 128,
                          .hbm_bytes = 32 * kGiB,
                          .hbm_bandwidth = 1.2e12,
                          .vmem_bytes = 16 * kMiB,
                          .ici_link_bandwidth = 4.5e10,
                          .ici_links = 6,
                          .torus_rank = 3,
                          .full_pod = {16, 16, 16}}));
  // v5e [book; cloud/v5e: 1 TensorCore x 4 MXUs, 16 GB]. Derived clock 1.50 GHz (the book:
  // "about 5e13 bf16 FLOPs/s per MXU at 1.5GHz on TPU v5e").
  table.push_back(Finish({.generation = "v5e",
                          .device_kind = "TPU v5 lite",
                          .bf16_flops = 1.97e14,
                          .int8_ops = 3.94e14,
                          .tensor_cores = 1,
                          .mxus_per_core = 4,
                          .mxu_dim = 128,
                          .hbm_bytes = 16 * kGB,
                          .hbm_bandwidth = 8.2e11,
                          .vmem_bytes = 128 * kMiB,
                          .ici_link_bandwidth = 4.5e10,
                          .ici_links = 4,
                          .torus_rank = 2,
                          .full_pod = {16, 16}}));
  // v5p [book; cloud/v5p: 2 TensorCores (megacore) x 4 MXUs]. Derived clock 1.75 GHz.
  table.push_back(Finish({.generation = "v5p",
                          .device_kind = "TPU v5",
                          .bf16_flops = 4.59e14,
                          .int8_ops = 9.18e14,
                          .tensor_cores = 2,
                          .mxus_per_core = 4,
                          .mxu_dim = 128,
                          .hbm_bytes = 96 * kGB,
                          .hbm_bandwidth = 2.8e12,
                          .vmem_bytes = 64 * kMiB,
                          .ici_link_bandwidth = 9e10,
                          .ici_links = 6,
                          .torus_rank = 3,
                          .full_pod = {16, 20, 28}}));
  // v6e Trillium [book; cloud/v6e: 1 TensorCore, MXUs of 256x256]. TPU.md's 2 MXUs per core
  // give a derived clock of 3.5 GHz; the product cores x MXUs x f is what the cost model
  // uses, so the peak is exact either way.
  table.push_back(Finish({.generation = "v6e",
                          .device_kind = "TPU v6 lite",
                          .bf16_flops = 9.2e14,
                          .int8_ops = 1.84e15,
                          .tensor_cores = 1,
                          .mxus_per_core = 2,
                          .mxu_dim = 256,
                          .hbm_bytes = 32 * kGB,
                          .hbm_bandwidth = 1.6e12,
                          .vmem_bytes = 128 * kMiB,
                          .ici_link_bandwidth = 9e10,
                          .ici_links = 4,
                          .torus_rank = 2,
                          .full_pod = {16, 16}}));
  // v7 Ironwood [book; cloud/v7: 2 TensorCores per chip, 256x256 MXUs, 9,216-chip pods] is a
  // row per TensorCore, as v2/v3: JAX lists each core of a TPU7x chip as its own device
  // (Pallas' ChipVersion: 2 physical TensorCores, no megacore; mesh_utils lays a TPU7x slice
  // out as x, y, z and core_on_chip). Per core: half of the chip's 2.3e15 bf16 (int8_ops holds
  // the fp8 peak, half of 4.6e15), 192 GB and 7.4e12 B/s of HBM. The MXU count per core is
  // not in TPU.md: 4 (as v4/v5p) gives a derived clock of 2.2 GHz. ICI: 6 links of 9e10
  // one-way per chip, each core given its own ports (the simplification v2/v3 make). The core
  // pair's die-to-die path has no published rate: the ICI link's 9e10 one-way, as v3's pair
  // matches its links (a model assumption). The pod is 144 cubes of 4x4x4 arranged 4x6x6
  // (9,216 chips, 18,432 devices).
  table.push_back(Finish({.generation = "v7",
                          .device_kind = "TPU7x",
                          .devices_per_chip = 2,
                          .bf16_flops = 1.15e15,
                          .int8_ops = 2.3e15,
                          .tensor_cores = 1,
                          .mxus_per_core = 4,
                          .mxu_dim = 256,
                          .hbm_bytes = 96 * kGB,
                          .hbm_bandwidth = 3.7e12,
                          .vmem_bytes = 64 * kMiB,
                          .ici_link_bandwidth = 9e10,
                          .ici_links = 6,
                          .core_link_bandwidth = 9e10,
                          .torus_rank = 3,
                          .full_pod = {16, 24, 24}}));
  return table;
}

}  // namespace

const std::vector<TpuChipSpec>& AllChipSpecs() {
  static const auto* const kTable = new std::vector<TpuChipSpec>(MakeTable());
  return *kTable;
}

std::vector<std::string> KnownGenerations() {
  std::vector<std::string> names;
  for (const TpuChipSpec& spec : AllChipSpecs()) names.push_back(spec.generation);
  return names;
}

const TpuChipSpec& ChipSpec(std::string_view generation) {
  for (const TpuChipSpec& spec : AllChipSpecs()) {
    if (spec.generation == generation) return spec;
  }
  throw ValueError(StrCat("[tpu] unknown TPU generation \"", generation,
                          "\"; known generations: ", absl::StrJoin(KnownGenerations(), ", ")));
}

}  // namespace jx::tpu

// A dry run of one SPMD step on a pod: the program planned from shapes and shardings alone
// (no data, no host execution), so pods of thousands of chips are planned in seconds. Chips
// of one SPMD program run the same code, so a program is costed once and its timeline laid
// out per group of chips that behave alike; per-chip work and per-link traffic stay exact
// where chips differ (the ends of a line, uneven ppermutes).
//
//   auto pod = jx::tpu::make_pod("v4", {16, 16, 16});
//   auto mesh = jx::make_mesh({256, 16}, {"data", "model"}, pod.devices());
//   auto step = jx::jit(train_step, jx::in_shardings{...});
//   jx::tpu::PodPlan plan = step.lower(abstract_params, abstract_batch).compile().plan();
//   std::cout << plan.ToString();   // step time, exposed communication, HBM peak, MFU
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "jx/compiler/backend/tpu/kernel_categories.h"
#include "jx/devices/tpu/peak_buffers.h"
#include "jx/devices/tpu/pod_step.h"

namespace jx::tpu {

struct PodPlan {
  std::string what;              // "jit(train_step)"
  std::string pod;               // "v4 16x16x16 torus (4096 chips)"
  // The program's devices: one per chip, or one per TensorCore where a chip shows its two
  // (v2, v3, v7: devices_per_chip 2). The per-chip numbers below are per device.
  int64_t num_chips = 0;
  int64_t devices_per_chip = 1;
  StepReport step;               // the predicted step: wall time, chips, links, collectives
  double flops_per_chip = 0;     // the per-device program's FLOPs (recomputation included)
  double peak_flops_per_chip = 0;  // the chip's bf16 peak
  // Hardware FLOPs utilization: flops_per_chip / (peak * step.wall_seconds).
  double flops_utilization() const;
  // Model FLOPs utilization for a step that does `model_flops` useful FLOPs on the whole pod
  // (6 * params * tokens for a transformer's training step): model_flops / (chips * peak * wall).
  double mfu(double model_flops) const;
  int64_t hbm_peak_bytes = 0;      // the largest per-chip HBM high-water mark
  int64_t hbm_capacity_bytes = 0;  // one chip's HBM
  bool fits() const { return hbm_peak_bytes <= hbm_capacity_bytes; }
  // What the peak is made of: its split and the largest buffers live there (peak_buffers.h).
  HbmPeakReport hbm;
  // The per-device program's costliest instructions (collectives excluded), slowest first: what
  // the compute time is made of.
  std::vector<InstructionCost> costliest_instructions;
  // The per-device program's kernel time by XLA op-profile category (loop bodies counted per
  // trip), slowest first: how much of the compute is not the dots, and what kind it is.
  std::vector<KernelCategory> kernel_categories;
  int64_t num_timeline_classes = 0;  // chips with distinct timelines (scheduled once each)
  double planning_seconds = 0;     // host time to trace, partition, compile and plan
  // A summary: the step time and its split (compute, exposed and overlapped communication,
  // idle), HBM peak against capacity and what holds it, utilization, the costliest collectives and links. Devices
  // with equal numbers are one line ("4032 chips like TPU_0(...)"), the fastest and slowest
  // shown; at most max_lines such lines and as many links. Where a chip is two devices (v7)
  // the text says devices and gives the chips too ("18432 devices (9216 chips of 2 TensorCores)").
  std::string ToString(size_t max_lines = 8) const;
};

}  // namespace jx::tpu

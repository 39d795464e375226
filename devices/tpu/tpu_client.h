// The client of one simulated TPU pod (PJRT's client): its chips, in row-major order over
// the pod's shape, and its compiler (tpu_compiler.h). jx::tpu::make_pod (pod.h) makes one
// and registers it, so jx::devices("tpu") lists its chips.
//
//   auto client = std::make_shared<TpuClient>(ChipSpec("v5e"), std::vector<int64_t>{4, 2}, 1);
//   client->devices();                       // 8 chips, ids 1..8
//   auto exe = client->Lower(jaxpr, {.name = "f", .device_assignment = {client->devices()[0]}})
//                  ->Compile();
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string_view>
#include <vector>

#include "jx/compiler/backend/tpu/tpu_chip_spec.h"
#include "jx/core/device.h"
#include "jx/devices/tpu/pod_step.h"
#include "jx/devices/tpu/tpu_chip.h"

namespace jx::ici {
class Torus;  // devices/interconnect/torus.h
}  // namespace jx::ici

namespace jx::tpu {

class TpuClient final : public Client {
 public:
  // Chips for every position of shape (one per torus axis), ids first_id, first_id + 1, ...
  // in row-major order (the last axis fastest), each with spec's constants. On v2/v3/v7
  // (spec.devices_per_chip 2) each position holds two devices, its TensorCores, core 0 first.
  TpuClient(TpuChipSpec spec, std::vector<int64_t> shape, int first_id);

  std::string_view platform() const override { return "tpu"; }
  std::vector<const Device*> devices() const override;
  // Lowers for options.device_assignment: one chip of this client (empty: the first chip),
  // or several: the jaxpr is the per-device (SPMD) program every chip runs, partition p on
  // device_assignment[p] (a PodProgram, pod_program.h).
  std::shared_ptr<const Lowering> Lower(const ClosedJaxpr& jaxpr, const LoweringOptions& options) const override;

  const TpuChipSpec& spec() const { return spec_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  // Every device (a chip, or on v2/v3/v7 a TensorCore), as devices() lists them.
  const std::vector<std::unique_ptr<TpuChip>>& chips() const { return chips_; }
  // The slice's interconnect: its torus of chips (vertex i is chips()[i]; on v2/v3/v7 with a
  // core axis), built once here.
  const ici::Torus& torus() const { return *torus_; }
  // The report of the latest multi-chip step run on this pod's chips (any program), so a user
  // of jit or shard_map reads it without holding the program; empty before the first.
  StepReport last_step() const;
  void RecordStep(const StepReport& report) const;

 private:
  TpuChipSpec spec_;  // the chips refer to it
  std::vector<int64_t> shape_;
  std::vector<std::unique_ptr<TpuChip>> chips_;
  std::shared_ptr<const ici::Torus> torus_;
  mutable std::mutex step_mu_;
  mutable StepReport last_step_;
};

}  // namespace jx::tpu

// A simulated TPU chip: a Device whose memory is an HBM of the generation's capacity (every
// buffer on the chip is charged to it; a request beyond what is free throws
// ResourceExhaustedError naming the chip, the bytes asked and the bytes free) and whose
// programs advance a simulated clock by the cost model's predicted time, with busy time per
// unit (chip_clock.h). The numbers themselves are computed on the host. On v2/v3/v7, as in JAX,
// a device is one TensorCore of a chip (coords() the chip's, core_on_chip() 0 or 1), with
// its own HBM share, clock and MXUs.
//
//   const auto& chip = static_cast<const jx::tpu::TpuChip&>(*pod.devices()[0]);
//   chip.ToString();            // "TPU_1(process=0,(0,0,0,0))"
//   chip.device_kind();         // "TPU v5 lite"
//   chip.memory_stats().bytes_limit;      // 16e9
//   chip.activity().now_seconds;          // simulated seconds run so far
//   v3_pod.devices()[1]->ToString();      // "TPU_2(process=0,(0,0,0,1))": core 1 of chip (0,0)
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "jx/compiler/backend/tpu/tpu_chip_spec.h"
#include "jx/core/buffer.h"
#include "jx/core/device.h"
#include "jx/devices/tpu/chip_clock.h"

namespace jx::tpu {

class TpuChip final : public Device {
 public:
  // coords: the chip's position on the pod's torus, one entry per torus axis; core_on_chip:
  // which of the chip's spec.devices_per_chip TensorCores this device is. spec outlives the
  // chip (the client owns both).
  TpuChip(const Client& client, const TpuChipSpec& spec, int id, std::vector<int64_t> coords, int core_on_chip = 0);

  const Client& client() const override { return client_; }
  std::string_view platform() const override { return "tpu"; }
  int id() const override { return id_; }
  std::string device_kind() const override { return spec_.device_kind; }
  // JAX's str(device): "TPU_<id>(process=<p>,(x,y,z,core))"; z is 0 on a 2D torus.
  std::string ToString() const override { return name_; }
  MemoryStats memory_stats() const override;
  std::shared_ptr<Buffer> Allocate(int64_t nbytes) const override;

  const TpuChipSpec& spec() const { return spec_; }
  // JAX's TpuDevice.coords (the chip's position) and core_on_chip.
  const std::vector<int64_t>& coords() const { return coords_; }
  int core_on_chip() const { return core_on_chip_; }
  // The device's vertex position on the pod's ici::Torus: coords(), then the core on v2/v3/v7
  // (the torus' core axis).
  std::vector<int64_t> torus_coords() const;
  // The chip's HBM: what compiled programs reserve their scratch from while they run.
  const std::shared_ptr<MemoryAccount>& hbm() const { return hbm_; }
  // Runs one program's step on the chip's clock (see ChipClock::RunStep).
  StepTimeline RunStep(const CostAnalysis& cost) const { return clock_.RunStep(cost, spec_.hbm_bandwidth); }
  // Commits one chip's part of a pod step (ChipClock::Commit).
  void CommitStep(const StepTimeline& step) const { clock_.Commit(step); }
  ChipActivity activity() const { return clock_.activity(); }

 private:
  const Client& client_;
  const TpuChipSpec& spec_;
  const int id_;
  const std::vector<int64_t> coords_;
  const int core_on_chip_;
  const std::string name_;
  std::shared_ptr<MemoryAccount> hbm_;
  mutable ChipClock clock_;  // a const chip (as devices are handed out) still runs programs
};

}  // namespace jx::tpu

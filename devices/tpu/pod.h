// Simulated TPU pods (slices): chips of one generation on a 2D or 3D torus, made with
// jx::tpu::make_pod. The pod's client is registered with the process, so
// jx::devices("tpu") lists its chips and arrays put on them run there.
//
//   auto pod = jx::tpu::make_pod("v5e", {4, 2});     // 8 chips of a 2D torus
//   pod.devices();                                   // row-major over {4, 2}: a mesh of the
//                                                    // same shape lines up with the torus
//   pod.coords(pod.devices()[3]);                    // {1, 1}
//   auto cube = jx::tpu::make_pod("v4", {4, 4, 4});  // 64 chips of a 3D torus
//   jx::tpu::make_pod("v5e", {4, 4, 4});             // ValueError: v5e is a 2D torus
//   pod.torus().wraps(0);                            // false: a 4x2 v5e slice has no
//                                                    // wraparound (ici::Torus)
//
// v2 and v3 chips are two devices each, as JAX lists them (one per TensorCore, each with half
// the chip's HBM and its own MXUs); their cores are joined by the on-chip path, not ICI:
//
//   auto v3_8 = jx::tpu::make_pod("v3", {2, 2});     // a v3-8: 4 chips, 8 devices
//   v3_8.devices()[1]->ToString();                   // "TPU_2(process=0,(0,0,0,1))"
//   v3_8.coords(v3_8.devices()[3]);                  // {0, 1}: core 1 of chip (0, 1)
//   v3_8.torus().shape();                            // {2, 2, 2}: the last axis the cores
//
// So are v7 (Ironwood) chips, on a 3D torus:
//
//   auto cube7 = jx::tpu::make_pod("v7", {4, 4, 4});  // 64 chips, 128 devices
//   cube7.devices()[3]->ToString();                   // "TPU_4(process=0,(0,0,1,1))"
//   cube7.torus().shape();                            // {4, 4, 4, 2}: three rings, the cores
//
// Every device's HBM holds the generation's capacity; PodOptions::hbm_bytes simulates a
// smaller memory (tests of running out, what-if planning).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "jx/compiler/backend/tpu/tpu_chip_spec.h"
#include "jx/core/device.h"
#include "jx/devices/tpu/tpu_chip.h"
#include "jx/devices/tpu/tpu_client.h"

namespace jx::tpu {

struct PodOptions {
  int64_t hbm_bytes = 0;  // per device; 0: the generation's capacity
};

// A handle to a pod made by make_pod (cheap to copy; the chips live as long as the process,
// as every registered device does).
class Pod {
 public:
  explicit Pod(std::shared_ptr<const TpuClient> client) : client_(std::move(client)) {}

  // The devices, row-major over shape() (the last axis fastest; on v2/v3/v7 each chip's two
  // cores in a row), ids increasing.
  std::vector<const Device*> devices() const;
  const std::vector<int64_t>& shape() const;  // in chips
  const std::string& generation() const;
  const TpuChipSpec& spec() const;
  int64_t num_chips() const;
  int64_t num_devices() const;  // num_chips() x spec().devices_per_chip
  // The device at a torus position (and core, on v2/v3/v7) / a device's chip position
  // (ValueError for other devices).
  const TpuChip& chip(const std::vector<int64_t>& coords, int core_on_chip = 0) const;
  const std::vector<int64_t>& coords(const Device* device) const;
  const TpuClient& client() const { return *client_; }
  // The slice's interconnect (devices/interconnect/torus.h): which axes wrap, the links, the
  // routes; the cost of collectives on it is ici::CostCollective.
  const ici::Torus& torus() const { return client_->torus(); }
  // The latest multi-chip step run on the pod (jit of a shard_map, SPMD jit): wall time, per
  // chip compute / communication / idle, bytes per link, HBM high-water (pod_step.h).
  StepReport last_step() const { return client_->last_step(); }

 private:
  std::shared_ptr<const TpuClient> client_;
};

// A pod of `generation` ("v2", "v3", "v4", "v5e", "v5p", "v6e", "v7") chips on a torus of
// `shape` (in chips: a v3-8 is {2, 2}, a v3-32 {4, 4}).
// Throws ValueError when the generation is unknown, when shape's rank is not the
// generation's torus rank, when a dimension is below 1, or when the shape does not fit the
// generation's full pod. Chip ids follow every device registered so far.
Pod make_pod(std::string_view generation, const std::vector<int64_t>& shape, const PodOptions& options = {});

}  // namespace jx::tpu

// The host CPU as a device (JAX's CpuDevice) and its client (PJRT's CPU client): one device,
// "CpuDevice(id=0)", whose memory is the host's caching allocator and whose programs are
// compiled by the CPU compiler driver (cpu_compiler.h). The client is registered with the
// device registry by RegisterBuiltinClients() (core/array.h declares it; the user-facing
// templates call it), the first client, so the CPU is the default device.
//
//   const Device* cpu = jx::devices()[0];
//   cpu->memory_stats().bytes_in_use;
//   auto exe = cpu->client().Lower(jaxpr, {.name = "f", .device_assignment = {cpu}})->Compile();
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "jx/core/device.h"

namespace jx {

class CpuClient;

class CpuDevice final : public Device {
 public:
  CpuDevice(const CpuClient& client, int id) : client_(client), id_(id) {}
  const Client& client() const override;
  std::string_view platform() const override { return "cpu"; }
  int id() const override { return id_; }
  std::string device_kind() const override { return "cpu"; }
  std::string ToString() const override;
  // From the host's caching allocator: bytes in large blocks handed out and allocations
  // served; the host has no capacity limit (bytes_limit 0) and no peak tracking.
  MemoryStats memory_stats() const override;
  std::shared_ptr<Buffer> Allocate(int64_t nbytes) const override;

 private:
  const CpuClient& client_;
  int id_;
};

class CpuClient final : public Client {
 public:
  CpuClient();
  std::string_view platform() const override { return "cpu"; }
  std::vector<const Device*> devices() const override { return {&device_}; }
  // options.device_assignment: this client's device (or empty for it).
  std::shared_ptr<const Lowering> Lower(const ClosedJaxpr& jaxpr, const LoweringOptions& options) const override;

 private:
  CpuDevice device_;
};

}  // namespace jx

// Devices: where a concrete array's buffer lives and where programs run (JAX's jax.Device,
// PJRT's PjRtDevice and PjRtClient). core owns the interfaces; devices/ implements them for
// the host CPU and the simulated TPU chips and registers their clients here.
//
// An array with no device is uncommitted and lives on the default device (the host CPU);
// jx::device_put commits it. JAX's rules: an op on committed arrays runs on their device,
// and arrays committed to different devices in one call are an error.
//
//   for (const jx::Device* d : jx::devices("tpu")) std::cout << d->ToString() << "\n";
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "jx/core/executable.h"

namespace jx {

class Buffer;
class ClosedJaxpr;
class Client;

// JAX's device.memory_stats().
struct MemoryStats {
  int64_t bytes_in_use = 0;
  int64_t peak_bytes_in_use = 0;
  int64_t bytes_limit = 0;        // capacity; 0 when the device does not bound it (the host)
  int64_t num_allocs = 0;
  int64_t largest_alloc_size = 0;
};

class Device {
 public:
  virtual ~Device() = default;
  virtual const Client& client() const = 0;
  virtual std::string_view platform() const = 0;  // "cpu" or "tpu"
  virtual int id() const = 0;                     // unique in the process
  virtual std::string device_kind() const = 0;    // "cpu", "TPU v5 lite", ...
  virtual std::string ToString() const = 0;       // "CpuDevice(id=0)", "TPU_3(v5e,(1,1))"
  virtual MemoryStats memory_stats() const = 0;
  // Memory for nbytes on this device, counted against its capacity; throws
  // ResourceExhaustedError naming the device, the bytes asked and the bytes free, and then
  // nothing on the device has changed.
  virtual std::shared_ptr<Buffer> Allocate(int64_t nbytes) const = 0;
};

// A platform's devices and its compiler (PJRT's client).
class Client {
 public:
  virtual ~Client() = default;
  virtual std::string_view platform() const = 0;
  virtual std::vector<const Device*> devices() const = 0;
  // Lowers a traced program for options.device_assignment (devices of this client).
  virtual std::shared_ptr<const Lowering> Lower(const ClosedJaxpr& jaxpr, const LoweringOptions& options) const = 0;
};

// Whether programs for `device` are the host's own: its arrays' ops run the primitives' impl
// rules directly (the CPU device), not a program compiled through its client.
inline bool IsHostDevice(const Device& device) { return device.platform() == "cpu"; }

// The process's clients, in registration order (devices/ registers the host CPU's first,
// and each simulated pod its chips' when it is made). Thread-safe.
void RegisterClient(std::shared_ptr<const Client> client);
// Every registered device of a platform ("" for all), in registration and id order.
std::vector<const Device*> RegisteredDevices(std::string_view platform = "");
// DefaultDevice() and RegisterBuiltinClients() are declared in array.h (Array::devices()
// needs them).

}  // namespace jx

#include "jx/devices/cpu/cpu_client.h"

#include "jx/core/buffer.h"
#include "jx/core/errors.h"
#include "jx/core/str_util.h"
#include "jx/devices/cpu/cpu_compiler.h"

namespace jx {

const Client& CpuDevice::client() const { return client_; }

std::string CpuDevice::ToString() const { return StrCat("CpuDevice(id=", id_, ")"); }

MemoryStats CpuDevice::memory_stats() const {
  const AllocatorStats a = GetAllocatorStats();
  MemoryStats stats;
  stats.bytes_in_use = a.bytes_in_use;
  stats.num_allocs = a.cache_hits + a.cache_misses;
  return stats;
}

std::shared_ptr<Buffer> CpuDevice::Allocate(int64_t nbytes) const { return Buffer::Allocate(nbytes); }

// Device ids are unique in the process; the host CPU registers first and takes 0.
CpuClient::CpuClient() : device_(*this, 0) {}

std::shared_ptr<const Lowering> CpuClient::Lower(const ClosedJaxpr& jaxpr, const LoweringOptions& options) const {
  const std::vector<const Device*>& assignment = options.device_assignment;
  if (assignment.size() > 1 || (assignment.size() == 1 && assignment[0] != &device_)) {
    std::string got;
    for (const Device* d : assignment) StrAppend(&got, got.empty() ? "" : ", ", d->ToString());
    throw InternalError(StrCat("jit(", options.name, "): the CPU client compiles for ", device_.ToString(),
                               " only, got the device assignment [", got, "]"));
  }
  return cpu_device::LowerForCpu(jaxpr, options, device_);
}

void RegisterBuiltinClients() {
  static const bool registered = [] {
    RegisterClient(std::make_shared<CpuClient>());
    return true;
  }();
  (void)registered;
}

}  // namespace jx

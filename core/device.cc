#include "jx/core/device.h"

#include <atomic>
#include <mutex>

namespace jx {
namespace {

struct ClientRegistry {
  std::mutex mutex;
  std::vector<std::shared_ptr<const Client>> clients;
};

ClientRegistry& Registry() {
  static auto* registry = new ClientRegistry;  // never destroyed: devices outlive every array
  return *registry;
}

}  // namespace

void RegisterClient(std::shared_ptr<const Client> client) {
  ClientRegistry& r = Registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.clients.push_back(std::move(client));
}

std::vector<const Device*> RegisteredDevices(std::string_view platform) {
  ClientRegistry& r = Registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<const Device*> out;
  for (const auto& client : r.clients) {
    if (!platform.empty() && client->platform() != platform) continue;
    for (const Device* d : client->devices()) out.push_back(d);
  }
  return out;
}

const Device* DefaultDevice() {
  // Cached once found: the host CPU's client is registered first and never unregistered.
  static std::atomic<const Device*> cached{nullptr};
  if (const Device* d = cached.load(std::memory_order_acquire)) return d;
  const std::vector<const Device*> cpus = RegisteredDevices("cpu");
  if (cpus.empty()) return nullptr;
  cached.store(cpus.front(), std::memory_order_release);
  return cpus.front();
}

}  // namespace jx

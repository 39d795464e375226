#include "jx/core/device.h"

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

}  // namespace jx

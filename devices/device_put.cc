#include "jx/devices/device_put.h"

#include <atomic>
#include <cstring>
#include <memory>

#include "jx/core/errors.h"
#include "jx/core/str_util.h"
#include "jx/devices/sharded_gather_hook.h"

namespace jx {
namespace {

const ConcreteArray& PlacedValue(const Array& x, std::string_view op) {
  if (!x.defined()) ThrowOpError<ValueError>(op, "argument is an empty Array handle");
  if (!x.is_concrete()) {
    ThrowOpError<TypeError>(op, "got a traced ", x.aval().str(), " value: device_put places concrete arrays; "
                            "call it outside jit and other transformations");
  }
  (void)x.data();  // a donated (deleted) array throws here
  return static_cast<const ConcreteArray&>(*x.impl());
}

// A copy of x's bytes in device's memory.
std::shared_ptr<Buffer> CopyTo(const Array& x, const Device& device) {
  std::shared_ptr<Buffer> buffer = device.Allocate(x.nbytes());
  if (x.nbytes() > 0) std::memcpy(buffer->data(), x.data(), static_cast<size_t>(x.nbytes()));
  return buffer;
}

std::atomic<ShardedGatherHook> g_gather_hook{nullptr};

// The type of a sharded array's value once it is whole on one device (no sharding in it).
ShapedArray Unsharded(const ShapedArray& aval) { return ShapedArray{aval.shape, aval.dtype, aval.weak_type}; }

}  // namespace

ShardedGatherHook SetShardedGatherHook(ShardedGatherHook hook) { return g_gather_hook.exchange(hook); }

std::vector<const Device*> devices(std::string_view platform) {
  RegisterBuiltinClients();
  return RegisteredDevices(platform);
}

Array device_put(const Array& x, const Device* device) {
  if (device == nullptr) return jx::device_put(x);
  const ConcreteArray& c = PlacedValue(x, "device_put");
  RegisterBuiltinClients();
  if (c.is_sharded()) {
    // Gathers the shards: the global value, assembled on the host, copied into device's memory;
    // the shards' moves are costed by the sharding layer's hook (ICI transfers on a TPU slice).
    if (ShardedGatherHook hook = g_gather_hook.load()) hook(x, device);
    return Array(std::make_shared<ConcreteArray>(Unsharded(x.aval()), CopyTo(x, *device), device, /*committed=*/true));
  }
  const Device* from = c.device() != nullptr ? c.device() : DefaultDevice();
  if (from == device) {
    if (c.committed()) return x;
    return Array(std::make_shared<ConcreteArray>(x.aval(), c.buffer(), device, /*committed=*/true));
  }
  return Array(std::make_shared<ConcreteArray>(x.aval(), CopyTo(x, *device), device, /*committed=*/true));
}

Array device_put(const Array& x) {
  const ConcreteArray& c = PlacedValue(x, "device_put");
  RegisterBuiltinClients();
  const Device* host = DefaultDevice();
  if (c.is_sharded()) return Array(std::make_shared<ConcreteArray>(Unsharded(x.aval()), CopyTo(x, *host)));
  if (c.device() == nullptr && !c.committed()) return x;
  if (c.device() == nullptr || c.device() == host) return Array(std::make_shared<ConcreteArray>(x.aval(), c.buffer()));
  return Array(std::make_shared<ConcreteArray>(x.aval(), CopyTo(x, *host)));
}

}  // namespace jx

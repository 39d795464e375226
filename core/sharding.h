// Shardings: how an array's elements are laid out over devices (JAX's jax.sharding.Sharding).
// core owns the interface, so a concrete array can hold shards without knowing meshes;
// sharding/ implements NamedSharding (a mesh and a PartitionSpec) above the devices layer.
//
//   std::shared_ptr<const jx::Sharding> s = x.sharding();   // SingleDeviceSharding for a
//   s->device_set();                                         // one-device array
//   for (const jx::Shard& shard : x.addressable_shards()) {  // one per device of the set
//     shard.device; shard.index; shard.data;
//   }
#pragma once

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "jx/core/array.h"

namespace jx {

class Device;

// A shard's place in the global array: [start, stop) per dimension (JAX's tuple of slices).
using ShardIndex = std::vector<std::pair<int64_t, int64_t>>;

// One device's piece of a sharded array (JAX's jax.Shard).
struct Shard {
  const Device* device = nullptr;
  ShardIndex index;
  int64_t replica_id = 0;  // 0 for the first copy of each piece, 1.. for replicas
  Array data;              // a concrete array of shard_shape, committed to `device`
};

class Sharding {
 public:
  virtual ~Sharding() = default;
  // The devices holding a shard, in the order shards are listed (for a mesh: its devices,
  // row-major). Never empty.
  virtual const std::vector<const Device*>& device_set() const = 0;
  // Each device's piece of an array of global_shape, in device_set() order. Throws
  // ShapeError naming the dimension, its size and the number of pieces when a sharded
  // dimension does not divide evenly (nothing is silently replicated or padded).
  virtual std::vector<ShardIndex> devices_indices(const Shape& global_shape) const = 0;
  // The shape of every piece (the same on every device); the same errors.
  virtual Shape shard_shape(const Shape& global_shape) const = 0;
  virtual bool is_fully_replicated() const = 0;
  // What an array type with this sharding records (ShapedArray::spec) for an array of
  // `rank` dimensions: empty when the sharding is not expressed in types (one device).
  virtual std::vector<std::vector<std::string>> TypeSpec(int64_t rank) const = 0;
  // JAX's repr: "SingleDeviceSharding(device=TPU_1(...))", "NamedSharding(mesh=Mesh('x': 4,
  // 'y': 2, axis_types=(Explicit, Explicit)), spec=PartitionSpec('x', None))".
  virtual std::string ToString() const = 0;
  // Same devices in the same roles (equal shardings give equal shards), and its hash
  // (jit's cache key).
  virtual bool Equals(const Sharding& other) const = 0;
  virtual size_t Hash() const = 0;
};

// Everything on one device (every unsharded array's sharding).
class SingleDeviceSharding final : public Sharding {
 public:
  explicit SingleDeviceSharding(const Device* device) : devices_{device} {}
  const Device* device() const { return devices_[0]; }
  const std::vector<const Device*>& device_set() const override { return devices_; }
  std::vector<ShardIndex> devices_indices(const Shape& global_shape) const override;
  Shape shard_shape(const Shape& global_shape) const override { return global_shape; }
  bool is_fully_replicated() const override { return true; }
  std::vector<std::vector<std::string>> TypeSpec(int64_t) const override { return {}; }
  std::string ToString() const override;
  bool Equals(const Sharding& other) const override;
  size_t Hash() const override;

 private:
  std::vector<const Device*> devices_;
};

std::ostream& operator<<(std::ostream& os, const Sharding& s);

inline std::vector<Shard> Array::addressable_shards() const {
  RegisterBuiltinClients();
  return RegisteredShards();
}

struct ConcreteArray::ShardedValue {
  std::shared_ptr<const Sharding> sharding;
  std::vector<Shard> shards;  // one per device of sharding->device_set(), in that order
  mutable std::once_flag assembled;
};

}  // namespace jx

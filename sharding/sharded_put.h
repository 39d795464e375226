// Placing arrays by a sharding (JAX's jax.device_put(x, NamedSharding(...))): every device of
// the mesh gets its piece of x, committed to it and allocated in its memory (a chip's HBM);
// dimensions the spec leaves whole are copied to every device along the unnamed mesh axes.
// A sharded array goes back to one device with the plain device_put (devices/device_put.h),
// which assembles the global value there, or to another sharding with this one (resharding).
//
//   jx::Mesh mesh = jx::make_mesh({4, 2}, {"x", "y"});
//   jx::Array xs = jx::device_put(x, jx::NamedSharding(mesh, jx::P("x", jx::none)));
//   xs.addressable_shards()[2].index;        // {{4, 6}, {0, 4}} for x of shape (8, 4)
//   jx::Array back = jx::device_put(xs, jx::devices("cpu")[0]);   // the whole value again
#pragma once

#include <cstddef>
#include <type_traits>
#include <vector>

#include "jx/core/array.h"
#include "jx/core/pytree.h"
#include "jx/devices/device_put.h"
#include "jx/sharding/named_sharding.h"

namespace jx {

// x (concrete, on any device, sharded or not) laid out by `sharding`: x itself when it
// already has an equal sharding. Throws ShapeError when the spec is longer than x's rank or
// a split dimension does not divide (naming the dimension, its size and the number of
// pieces), ResourceExhaustedError when a device's memory is full (nothing stays allocated),
// TypeError on a tracer.
inline Array device_put(const Array& x, const NamedSharding& sharding);

// JAX's jax.make_array_from_single_device_arrays: the array of global `shape` laid out by
// `sharding` whose piece on device_set()[d] is arrays[d] (each of the shard shape, on that
// device; dtype and weak type from arrays[0]). Throws ValueError on a count, shape, dtype or
// device mismatch.
Array make_array_from_single_device_arrays(const Shape& shape, const NamedSharding& sharding,
                                           std::vector<Array> arrays);

namespace spmd {
// Makes eager ops on sharded arrays run as SPMD programs. Defined in jx_spmd, the layer above
// (jx::jx links it), and called from the inline entry points that make sharded arrays (so the
// user's object file pulls it in), as RegisterBuiltinClients is: no static initializer.
void RegisterSpmdPrimitives();
}  // namespace spmd

namespace sharding_internal {
Array DevicePutSharded(const Array& x, const NamedSharding& sharding);
}  // namespace sharding_internal

inline Array device_put(const Array& x, const NamedSharding& sharding) {
  spmd::RegisterSpmdPrimitives();
  return sharding_internal::DevicePutSharded(x, sharding);
}

// device_put of every leaf of a pytree to one sharding.
template <typename T>
  requires(!std::is_same_v<T, Array> && tree::IsPytree<T>)
T device_put(const T& tree, const NamedSharding& sharding) {
  return tree::map([&sharding](const Array& x) { return device_put(x, sharding); }, tree);
}

namespace sharding_internal {
// ValueError unless there is one sharding per leaf.
void CheckOneShardingPerLeaf(size_t leaves, size_t shardings);
}  // namespace sharding_internal

// device_put of each leaf of a pytree to its own sharding (JAX's device_put(xs, shardings)
// with a matching tree of shardings): one per leaf, in leaf order.
template <typename T>
  requires(tree::IsPytree<T>)
T device_put(const T& tree, const std::vector<NamedSharding>& shardings) {
  auto [leaves, def] = tree::flatten(tree);
  sharding_internal::CheckOneShardingPerLeaf(leaves.size(), shardings.size());
  for (size_t i = 0; i < leaves.size(); ++i) leaves[i] = device_put(leaves[i], shardings[i]);
  return tree::unflatten<T>(def, leaves);
}

}  // namespace jx

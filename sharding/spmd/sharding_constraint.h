// lax::with_sharding_constraint (JAX's jax.lax.with_sharding_constraint): the identity on
// values that pins the sharding of its result under jit; propagation starts from it and the
// partitioner reshards there. Eagerly it is device_put(x, sharding). It binds the primitive
// `sharding_constraint` (JAX's name) with the sharding as its param.
//
//   auto f = [&](const Array& x) { return lax::with_sharding_constraint(jnp::sin(x), s); };
//   jx::jit(f)(x);   // the sin's result is laid out by s
#pragma once

#include <string>

#include "jx/core/array.h"
#include "jx/core/param_map.h"
#include "jx/core/pytree.h"
#include "jx/sharding/named_sharding.h"

namespace jx {

// The param holding a NamedSharding (sharding_constraint's, jit's in/out shardings).
class ShardingParam final : public ParamObject {
 public:
  explicit ShardingParam(NamedSharding sharding) : sharding_(std::move(sharding)) {}
  const NamedSharding& sharding() const { return sharding_; }
  size_t Hash() const override { return sharding_.Hash(); }
  bool Equals(const ParamObject& other) const override;
  std::string ToString() const override { return sharding_.ToString(); }

 private:
  NamedSharding sharding_;
};

namespace spmd {
// Registers sharding_constraint's rules (idempotent; every entry point of the SPMD layer calls
// it, as the layer sits above lax::RegisterAll).
void RegisterSpmdPrimitives();
// Makes eager ops on sharded arrays run as SPMD programs (sharded_eager.cc); called by
// RegisterSpmdPrimitives.
void InstallShardedEagerHandler();
}  // namespace spmd

namespace lax {
Array with_sharding_constraint(const Array& x, const NamedSharding& sharding);
// Every leaf of a pytree constrained to one sharding.
template <typename T>
T with_sharding_constraint(const T& tree, const NamedSharding& sharding) {
  return tree::map([&sharding](const Array& x) { return with_sharding_constraint(x, sharding); }, tree);
}
}  // namespace lax

}  // namespace jx

// jx::reshard (JAX's jax.sharding.reshard): the value laid out by a NamedSharding and, in
// explicit sharding mode, typed by it (f32[8@x,4] resharded to P(None, 'y') is f32[8,4@y]).
// It is how an explicit-mode program changes a sharding where operands' types conflict (a
// TypeError names them; nothing reshards implicitly). Eagerly it is device_put(x, sharding);
// under jit propagation takes its result's sharding as fixed and the partitioner moves the
// data there. Its transpose reshards the cotangent back to the operand's sharding, so
// gradients keep their primals' types. Binds `reshard[dst_sharding=NamedSharding(...)]`.
//
//   Array b = jx::reshard(a, jx::NamedSharding(mesh, jx::P("x", "y")));   // f32[8@x,4@y]
//   Array c = a_xy + b;                                                  // types agree
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "jx/core/array.h"
#include "jx/core/param_map.h"
#include "jx/core/primitive.h"
#include "jx/core/pytree.h"
#include "jx/sharding/named_sharding.h"

namespace jx {

class Registry;

// Throws ShapeError naming reshard when the sharding does not divide x's shape.
Array reshard(const Array& x, const NamedSharding& sharding);
// Every leaf of a pytree resharded to one sharding.
template <typename T>
T reshard(const T& tree, const NamedSharding& sharding) {
  return tree::map([&sharding](const Array& x) { return reshard(x, sharding); }, tree);
}

namespace spmd {
// The primitive reshard binds.
const Primitive& ReshardPrimitive();
// The sharding an equation of sharding_constraint (with_sharding_constraint) or reshard pins
// its result to; null for any other primitive.
const NamedSharding* PinnedSharding(Primitive p, const ParamMap& params);
// Where a reshard equation puts its rank-`rank` result: per dimension, every mesh axis of its
// destination (Auto ones too; its type shows the Explicit ones).
std::vector<std::vector<std::string>> ReshardLayout(const ParamMap& params, int64_t rank);
// Registers reshard's rules (RegisterSpmdPrimitives calls it).
void RegisterReshard(Registry& r);
}  // namespace spmd

}  // namespace jx

// The mesh in context (JAX's get_abstract_mesh() under jax.sharding.use_mesh / jax.set_mesh):
// its axis names and sizes. Explicit-sharding types name mesh axes only (ShapedArray::spec),
// so their rules read the axes' sizes here to check exactly that a dimension's axes divide it
// and that a reshape keeps each device's piece contiguous; without a mesh in context they
// check what names alone can show. The sharding layer sets it (jx::use_mesh, and while jit
// with shardings or an op on sharded arrays traces), and jit puts its arguments' mesh in
// context while it traces them, as JAX's jit takes the mesh from its arguments' types.
// Thread-local; scopes nest.
//
//   jx::ScopedContextMeshAxes mesh_axes({{"x", 4}, {"y", 2}});
//   jx::ContextMeshAxisSize("x");   // 4
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/types/span.h"

namespace jx {

class Array;
class Sharding;

using MeshAxisSizes = std::vector<std::pair<std::string, int64_t>>;

class ScopedContextMeshAxes {
 public:
  explicit ScopedContextMeshAxes(MeshAxisSizes axes);
  ~ScopedContextMeshAxes();
  ScopedContextMeshAxes(const ScopedContextMeshAxes&) = delete;
  ScopedContextMeshAxes& operator=(const ScopedContextMeshAxes&) = delete;

 private:
  MeshAxisSizes axes_;
  const MeshAxisSizes* previous_;
};

// The innermost scope's axes, or nullptr when no mesh is in context.
const MeshAxisSizes* ContextMeshAxes();
// The size of `axis` in the mesh in context; nullopt without one or for an axis it lacks.
std::optional<int64_t> ContextMeshAxisSize(std::string_view axis);

// The axes of the mesh a sharding lays its array over, nullopt for a sharding without one
// (core knows no meshes: the sharding layer installs the answer for its NamedSharding).
using MeshAxesOfShardingFn = std::optional<MeshAxisSizes> (*)(const Sharding& sharding);
void SetMeshAxesOfSharding(MeshAxesOfShardingFn fn);
// The mesh axes of the first argument sharded over a mesh, or nullopt (none is, or no answer
// is installed).
std::optional<MeshAxisSizes> MeshAxesOfArguments(absl::Span<const Array> args);

}  // namespace jx

// jx::use_mesh: JAX's jax.sharding.use_mesh (and jax.set_mesh as a scope): while it lives, the
// mesh is the one explicit-sharding types refer to, so type rules see its axis sizes and check
// exactly (a reshape splitting or merging a sharded dimension is allowed when every device
// keeps one block of the result, and is JAX's TypeError naming the dimensions and sizes
// otherwise). jit with shardings and ops on sharded arrays set their mesh the same way while
// they trace. Scopes nest; thread-local.
//
//   Mesh mesh = make_mesh({4, 2}, {"x", "y"}, pod.devices());
//   jx::use_mesh in_context(mesh);
//   make_jaxpr([](const Array& a) { return a.reshape({32}); })(x);   // x: f32[8@x,4@y] -> TypeError
#pragma once

#include "jx/core/abstract_mesh_context.h"
#include "jx/sharding/mesh.h"

namespace jx {

class use_mesh {
 public:
  explicit use_mesh(const AbstractMesh& mesh) : axes_(AxisSizes(mesh)) {}
  explicit use_mesh(const Mesh& mesh) : use_mesh(mesh.abstract_mesh()) {}

 private:
  static MeshAxisSizes AxisSizes(const AbstractMesh& mesh) {
    MeshAxisSizes axes;
    for (size_t i = 0; i < mesh.axis_names().size(); ++i) axes.emplace_back(mesh.axis_names()[i], mesh.axis_sizes()[i]);
    return axes;
  }

  ScopedContextMeshAxes axes_;
};

}  // namespace jx

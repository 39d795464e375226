// NamedSharding (JAX's jax.sharding.NamedSharding): a mesh and a PartitionSpec. An array of
// global shape S with NamedSharding(mesh, P("x", none)) keeps rows [i*S0/4, (i+1)*S0/4) on
// the devices at x = i (and a copy on every y). device_put(x, sharding) makes one.
//
//   jx::NamedSharding s(mesh, jx::P("x", jx::none));
//   jx::Array xs = jx::device_put(x, s);   // sharded; xs.sharding()->ToString()
//   std::cout << jx::typeof(xs);           // float32[8@x,4]
//   jx::device_put(xs, jx::devices()[0]);  // gathered back to one device
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "jx/core/sharding.h"
#include "jx/sharding/mesh.h"
#include "jx/sharding/partition_spec.h"

namespace jx {

class NamedSharding final : public Sharding {
 public:
  // Throws ValueError when the spec names an axis the mesh lacks or names one axis twice.
  NamedSharding(Mesh mesh, PartitionSpec spec);

  const Mesh& mesh() const { return mesh_; }
  const PartitionSpec& spec() const { return spec_; }
  // How many pieces dimension `dim` is split into (the product of its axes' sizes; 1 when
  // the spec leaves it whole).
  int64_t num_pieces(int64_t dim) const;
  // Throws ShapeError (prefixed "[op]") when the spec is longer than the shape's rank or a
  // split dimension does not divide evenly: the message names the dimension, its size, the
  // number of pieces and the full shape (JAX's wording).
  void CheckCompatible(const Shape& global_shape, std::string_view op) const;

  const std::vector<const Device*>& device_set() const override { return mesh_.devices(); }
  std::vector<ShardIndex> devices_indices(const Shape& global_shape) const override;
  Shape shard_shape(const Shape& global_shape) const override;
  bool is_fully_replicated() const override;
  std::vector<std::vector<std::string>> TypeSpec(int64_t rank) const override;
  std::string ToString() const override;
  bool Equals(const Sharding& other) const override;
  size_t Hash() const override;

 private:
  Mesh mesh_;
  PartitionSpec spec_;
};

}  // namespace jx

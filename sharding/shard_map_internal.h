// What shard_map's transform, rules and eager evaluation share: its equation's parameters,
// the local (per-device) and global types, and tracing a body with the manual axes bound.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "jx/core/jaxpr.h"
#include "jx/core/param_map.h"
#include "jx/sharding/collectives.h"
#include "jx/sharding/mesh.h"
#include "jx/sharding/partition_spec.h"
#include "jx/transforms/jaxpr_util.h"

namespace jx::shard_map_internal {

// The mesh as a parameter (prints as JAX's Mesh repr).
class MeshParam final : public ParamObject {
 public:
  explicit MeshParam(Mesh mesh) : mesh_(std::move(mesh)) {}
  const Mesh& mesh() const { return mesh_; }
  size_t Hash() const override { return mesh_.Hash(); }
  bool Equals(const ParamObject& other) const override;
  std::string ToString() const override { return mesh_.ToString(); }

 private:
  Mesh mesh_;
};

// A list of PartitionSpecs as a parameter: "(P('x', 'y'), P('y', None))".
class SpecsParam final : public ParamObject {
 public:
  explicit SpecsParam(std::vector<PartitionSpec> specs) : specs_(std::move(specs)) {}
  const std::vector<PartitionSpec>& specs() const { return specs_; }
  size_t Hash() const override;
  bool Equals(const ParamObject& other) const override;
  std::string ToString() const override;

 private:
  std::vector<PartitionSpec> specs_;
};

// A shard_map equation's parameters.
struct ShardMapParams {
  Mesh mesh;
  std::vector<PartitionSpec> in_specs, out_specs;
  std::vector<std::string> manual_axes;
  bool check_vma = true;
  ClosedJaxpr jaxpr;  // the body over local types; no consts
  ParamMap ToParamMap() const;
  static ShardMapParams From(const ParamMap& params);
  std::shared_ptr<const CollectiveMesh> collective_mesh() const;
};

// The per-device type of an argument of global type `global` split by spec (vma: the spec's
// axes when check_vma), and the global type of per-device results assembled by spec.
ShapedArray LocalAval(const ShapedArray& global, const PartitionSpec& spec, const Mesh& mesh, bool check_vma);
ShapedArray GlobalAval(const ShapedArray& local, const PartitionSpec& spec, const Mesh& mesh);

// Traces fn over local avals with the manual axes bound (collectives may name them) and,
// under check_vma, pvary inserted where operands' varying axes differ. Consts hoisted.
Hoisted TraceBody(const ArraysFn& fn, absl::Span<const ShapedArray> local_avals, const ShardMapParams& like,
                  const std::string& name);

// Binds a shard_map equation running `body` (its hoisted consts lead, replicated).
Arrays BindShardMap(const Hoisted& body, ShardMapParams params, absl::Span<const Array> args);

// The eager evaluation (shard_map_eval.cc).
Arrays ShardMapImpl(absl::Span<const Array> in, const ParamMap& params, absl::Span<const ShapedArray> out_avals);
// The transformation rules (shard_map_rules.cc).
void SetShardMapTransformRules(PrimitiveRules& rules);

}  // namespace jx::shard_map_internal

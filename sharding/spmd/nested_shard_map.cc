#include "jx/sharding/spmd/nested_shard_map.h"

#include "jx/core/errors.h"
#include "jx/core/str_util.h"
#include "jx/sharding/shard_map.h"
#include "jx/sharding/shard_map_internal.h"
#include "jx/sharding/spmd/mesh_axes.h"

namespace jx::spmd {
namespace {

std::vector<DimShardings> Shardings(const std::vector<PartitionSpec>& specs, const std::vector<int64_t>& ranks) {
  std::vector<DimShardings> out;
  for (size_t k = 0; k < specs.size() && k < ranks.size(); ++k) out.push_back(SpecShardings(specs[k], ranks[k]));
  return out;
}

shard_map_internal::ShardMapParams ParamsOn(const Eqn& eqn, const AbstractMesh& mesh) {
  auto p = shard_map_internal::ShardMapParams::From(eqn.params);
  if (!(p.mesh.abstract_mesh() == mesh)) {
    throw ValueError(StrCat("shard_map over ", p.mesh.ToString(), " inside a program partitioned for a mesh of ",
                            "other axes: every shard_map of one jit must use the program's mesh"));
  }
  return p;
}

}  // namespace

bool IsShardMap(const Eqn& eqn) { return eqn.primitive == kShardMap; }

std::vector<DimShardings> ShardMapInShardings(const Jaxpr& jaxpr, const Eqn& eqn, const AbstractMesh& mesh) {
  const auto p = ParamsOn(eqn, mesh);
  std::vector<int64_t> ranks;
  for (const Atom& a : eqn.inputs) ranks.push_back(jaxpr.aval(a).ndim());
  return Shardings(p.in_specs, ranks);
}

std::vector<DimShardings> ShardMapOutShardings(const Jaxpr& jaxpr, const Eqn& eqn, const AbstractMesh& mesh) {
  const auto p = ParamsOn(eqn, mesh);
  std::vector<int64_t> ranks;
  for (const Var& v : eqn.outputs) ranks.push_back(jaxpr.aval(v).ndim());
  return Shardings(p.out_specs, ranks);
}

Arrays InlineShardMap(const Eqn& eqn, absl::Span<const Array> local_operands) {
  const auto p = shard_map_internal::ShardMapParams::From(eqn.params);
  return EvalJaxpr(*p.jaxpr.jaxpr, p.jaxpr.consts, local_operands);
}

}  // namespace jx::spmd

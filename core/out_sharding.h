// JAX's out_sharding= on an op (dot_general's, as JAX's transpose of a dot passes the primal's
// sharding): the result's explicit-sharding type, per dimension the mesh axes splitting it.
// An op bound with one is typed with it (its sharding rule still checks that the operands
// agree; a sharded contraction is then not ambiguous: its partial sums are reduced into the
// given sharding). Printed as JAX prints a PartitionSpec: out_sharding=P('x', None).
//
//   ParamMap params = ...;
//   params.Set("out_sharding", OutShardingParam::Make({{"x"}, {}}));
//   if (const DimShardings* s = OutShardingOf(params)) ...
#pragma once

#include <concepts>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/types/span.h"
#include "jx/core/abstract_mesh_context.h"
#include "jx/core/array.h"
#include "jx/core/none.h"
#include "jx/core/param_map.h"
#include "jx/core/shape.h"

namespace jx {

// What an op's public out_sharding= argument accepts (JAX's NamedSharding | PartitionSpec |
// None): a NamedSharding (its Explicit axes type the result), a PartitionSpec (axes of the
// mesh in context or of the operands'), or none (the default: the sharding rule decides, and a
// sharded contraction is ambiguous).
//
//   lax::dot_general(a, b, dn, {}, std::nullopt, jx::P("x", jx::none));
//   jnp::matmul(a, b, jx::NamedSharding(mesh, jx::P()));   // replicated: partial sums all-reduced
class OutSharding {
 public:
  OutSharding() = default;
  OutSharding(NoneType) {}
  // Per result dimension, the mesh axes splitting it (empty: whole), as types record them.
  explicit OutSharding(std::vector<std::vector<std::string>> spec)
      : entries_(static_cast<int64_t>(spec.size())), spec_([spec = std::move(spec)](int64_t rank) {
          std::vector<std::vector<std::string>> out = spec;
          out.resize(static_cast<size_t>(rank));
          return out;
        }) {}
  // A PartitionSpec (sharding/partition_spec.h; taken by its shape to stay below that layer).
  template <typename Spec>
    requires requires(const Spec& p) {
      { p.dims()[0].axes() } -> std::convertible_to<const std::vector<std::string>&>;
      { p.size() } -> std::convertible_to<int64_t>;
    }
  OutSharding(const Spec& spec) : entries_(spec.size()) {
    std::vector<std::vector<std::string>> axes;
    for (const auto& d : spec.dims()) axes.push_back(d.axes());
    spec_ = [axes = std::move(axes)](int64_t rank) {
      std::vector<std::vector<std::string>> out(static_cast<size_t>(rank));
      for (size_t d = 0; d < axes.size() && d < out.size(); ++d) out[d] = axes[d];
      return out;
    };
  }
  // A NamedSharding (sharding/named_sharding.h): the axes its type records (Explicit ones).
  template <typename S>
    requires requires(const S& s, int64_t rank) {
      { s.TypeSpec(rank) } -> std::convertible_to<std::vector<std::vector<std::string>>>;
      { s.spec().size() } -> std::convertible_to<int64_t>;
    }
  OutSharding(const S& sharding) : entries_(sharding.spec().size()) {
    if constexpr (requires { sharding.mesh().axis_names(); }) {
      MeshAxisSizes axes;
      for (size_t i = 0; i < sharding.mesh().axis_names().size(); ++i) {
        axes.emplace_back(sharding.mesh().axis_names()[i], sharding.mesh().axis_sizes()[i]);
      }
      mesh_ = std::move(axes);
    }
    spec_ = [sharding](int64_t rank) {
      std::vector<std::vector<std::string>> out = sharding.TypeSpec(rank);
      out.resize(static_cast<size_t>(rank));
      return out;
    };
  }

  bool is_none() const { return !spec_; }
  // The result's sharding, one entry per dimension of a rank-`rank` result (empty: whole).
  // Throws ValueError naming `op` when the spec has more entries than the result has dims.
  std::vector<std::vector<std::string>> ForRank(std::string_view op, int64_t rank) const;
  // A NamedSharding's mesh (its axis names and sizes); nullopt for a PartitionSpec or none.
  const std::optional<MeshAxisSizes>& mesh() const { return mesh_; }
  // JAX's check of a NamedSharding given to `op`: its mesh is the operands' (their sharded
  // arguments' mesh, or the mesh in context while tracing), else ValueError naming both.
  void CheckMesh(std::string_view op, absl::Span<const Array> operands) const;

 private:
  int64_t entries_ = 0;
  std::optional<MeshAxisSizes> mesh_;
  std::function<std::vector<std::vector<std::string>>(int64_t)> spec_;
};

class OutShardingParam final : public ParamObject {
 public:
  // spec: one entry per result dimension (empty: replicated).
  explicit OutShardingParam(std::vector<std::vector<std::string>> spec) : spec_(std::move(spec)) {}
  static Param Make(std::vector<std::vector<std::string>> spec);

  const std::vector<std::vector<std::string>>& spec() const { return spec_; }
  size_t Hash() const override;
  bool Equals(const ParamObject& other) const override;
  std::string ToString() const override;  // P('x', None), P(('x', 'y'),), P()

 private:
  std::vector<std::vector<std::string>> spec_;
};

// Sets params' out_sharding for a rank-`rank` result (nothing when it is none: the op prints
// as before), after OutSharding::CheckMesh against the operands.
void SetOutSharding(ParamMap& params, std::string_view op, const OutSharding& out_sharding, int64_t rank,
                    absl::Span<const Array> operands = {});

// The op's out_sharding param, or null when it has none (or None).
const std::vector<std::vector<std::string>>* OutShardingOf(const ParamMap& params);

}  // namespace jx

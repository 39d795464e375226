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

#include <memory>
#include <string>

#include "jx/core/param_map.h"
#include "jx/core/shape.h"

namespace jx {

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

// The op's out_sharding param, or null when it has none (or None).
const std::vector<std::vector<std::string>>* OutShardingOf(const ParamMap& params);

}  // namespace jx

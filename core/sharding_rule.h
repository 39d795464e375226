// A primitive's sharding rule (Shardy's OpShardingRuleAttr): every dimension of every operand
// and result is a list of factors; a factor names one logical loop of the op. Sharding a
// factor over mesh axes shards every dimension it appears in. A factor that appears in
// operands but in no result is a reduction factor: sharding it leaves each device a partial
// result that a collective (psum for a sum) combines. The rule of matmul reads as Shardy
// prints it:
//
//   ([i, j], [j, k])->([i, k]) {i=8, j=16, k=4} reduction={j}
//
// Explicit-sharding types (ShapedArray::spec), propagation under jit and the SPMD partitioner
// all read the one rule a primitive registers (PrimitiveRules::sharding_rule).
//
//   jx::ShardingRuleBuilder b;
//   int i = b.AddFactor(8), j = b.AddFactor(16), k = b.AddFactor(4);
//   b.AddOperand({{i}, {j}}); b.AddOperand({{j}, {k}}); b.AddResult({{i}, {k}});
//   jx::ShardingRule rule = std::move(b).Build();
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/types/span.h"
#include "jx/core/param_map.h"
#include "jx/core/shape.h"

namespace jx {

// The factors of one tensor dimension, major first (several for a reshape's merged dims).
using DimFactors = absl::InlinedVector<int, 1>;
// One tensor's factors, per dimension.
using TensorFactors = std::vector<DimFactors>;
// One tensor's sharding: per dimension, the mesh axes splitting it, major first (the form of
// ShapedArray::spec; an empty entry: not split).
using DimShardings = std::vector<std::vector<std::string>>;

struct ShardingRule {
  // How partial results over a sharded reduction factor combine.
  enum class Combiner { kNone, kSum, kMax, kMin };

  std::vector<int64_t> factor_sizes;
  std::vector<TensorFactors> operands;
  std::vector<TensorFactors> results;
  // Factors that must stay unsharded (a sort or cumulative axis).
  std::vector<int> need_replication;
  // The combiner of the reduction factors; kNone: they cannot be sharded (argmax).
  Combiner combiner = Combiner::kSum;
  // JAX's explicit mode: a result whose reduction factor is sharded is ambiguous (dot_general
  // wants out_sharding) rather than silently all-reduced (reduce_sum is allowed).
  bool sharded_reduction_is_type_error = false;

  int num_factors() const { return static_cast<int>(factor_sizes.size()); }
  // A factor in no result dimension.
  bool IsReduction(int factor) const;
  bool NeedsReplication(int factor) const;
  // Shardy's text: "([i, j], [j, k])->([i, k]) {i=8, j=16, k=4} reduction={j}".
  std::string ToString() const;
};

class ShardingRuleBuilder {
 public:
  int AddFactor(int64_t size);
  ShardingRuleBuilder& AddOperand(TensorFactors dims);
  ShardingRuleBuilder& AddResult(TensorFactors dims);
  ShardingRuleBuilder& NeedReplication(int factor);
  ShardingRuleBuilder& SetCombiner(ShardingRule::Combiner combiner);
  ShardingRuleBuilder& ShardedReductionIsTypeError();
  ShardingRule Build() &&;

 private:
  ShardingRule rule_;
};

// Computes the rule for one equation from its input avals, params and output avals.
using ShardingRuleFn = std::function<ShardingRule(absl::Span<const ShapedArray* const> in, const ParamMap& params,
                                                  absl::Span<const ShapedArray> out)>;

// The rule of an elementwise op over operands and results of one shape (rank-0 operands of a
// ranked op broadcast and take no factors).
ShardingRule ElementwiseShardingRule(absl::Span<const ShapedArray* const> in, absl::Span<const ShapedArray> out);

// Per factor, the mesh axes sharding it given the tensors' shardings (propagation and types
// share this): the axes of a dimension go to its factors major first. Returns the first
// conflict (two tensors sharding one factor differently, or one axis on two factors) through
// `conflict` when it is non-null, keeping the first tensor's choice.
std::vector<std::vector<std::string>> FactorShardings(const ShardingRule& rule,
                                                      absl::Span<const DimShardings* const> operands,
                                                      absl::Span<const DimShardings* const> results,
                                                      std::string* conflict);

// Clears the axes no tensor can express: in a dimension of several factors (a reshape's
// merged dim [ij]), a factor's axes can shard it only when every factor before it is split
// whole (Shardy's rule), so a later factor's axes are dropped otherwise, for every tensor.
void ClearInexpressibleFactorAxes(const ShardingRule& rule, std::vector<std::vector<std::string>>& factor_axes,
                                  const std::function<int64_t(const std::string&)>& axis_size);

// A tensor's sharding from its factors' shardings (empty entries where unsharded).
DimShardings TensorSharding(const TensorFactors& factors, const std::vector<std::vector<std::string>>& factor_axes);

// Explicit-sharding types: sets each output's spec from the inputs' specs through the rule,
// or throws TypeError naming the op and the conflicting types (JAX's explicit mode).
void ApplyShardingRuleToTypes(std::string_view op, const ShardingRule& rule,
                              absl::Span<const ShapedArray* const> in, absl::Span<ShapedArray> out);

// True when JX_LOG_SPMD=1: propagation, the partitioner and types log their choices to stderr.
bool SpmdLoggingEnabled();
void SpmdLog(const std::string& line);

}  // namespace jx

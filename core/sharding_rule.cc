#include "jx/core/sharding_rule.h"

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <mutex>

#include "absl/strings/str_join.h"
#include "jx/core/errors.h"
#include "jx/core/str_util.h"

namespace jx {
namespace {

std::string FactorName(int f) {
  // i, j, k, ..., z, then z1, z2 (Shardy's names).
  constexpr int kLetters = 'z' - 'i' + 1;
  if (f < kLetters) return std::string(1, static_cast<char>('i' + f));
  return StrCat("z", f - kLetters + 1);
}

std::string TensorText(const TensorFactors& t) {
  std::vector<std::string> dims;
  for (const DimFactors& d : t) {
    std::vector<std::string> names;
    for (int f : d) names.push_back(FactorName(f));
    dims.push_back(names.size() == 1 ? names[0] : absl::StrJoin(names, ""));
  }
  return StrCat("[", absl::StrJoin(dims, ", "), "]");
}

std::string AxesText(const std::vector<std::string>& axes) {
  if (axes.empty()) return "None";
  if (axes.size() == 1) return StrCat("'", axes[0], "'");
  return StrCat("(", absl::StrJoin(axes, ", ", [](std::string* out, const std::string& a) { StrAppend(out, "'", a, "'"); }),
                ")");
}

}  // namespace

bool ShardingRule::IsReduction(int factor) const {
  for (const TensorFactors& t : results) {
    for (const DimFactors& d : t) {
      if (std::find(d.begin(), d.end(), factor) != d.end()) return false;
    }
  }
  return true;
}

bool ShardingRule::NeedsReplication(int factor) const {
  if (std::find(need_replication.begin(), need_replication.end(), factor) != need_replication.end()) return true;
  return combiner == Combiner::kNone && IsReduction(factor);
}

std::string ShardingRule::ToString() const {
  std::vector<std::string> ins, outs, sizes, reductions, replicated;
  for (const TensorFactors& t : operands) ins.push_back(TensorText(t));
  for (const TensorFactors& t : results) outs.push_back(TensorText(t));
  for (int f = 0; f < num_factors(); ++f) {
    sizes.push_back(StrCat(FactorName(f), "=", factor_sizes[f]));
    if (NeedsReplication(f)) {
      replicated.push_back(FactorName(f));
    } else if (IsReduction(f)) {
      reductions.push_back(FactorName(f));
    }
  }
  std::string s = StrCat("(", absl::StrJoin(ins, ", "), ")->(", absl::StrJoin(outs, ", "), ") {",
                         absl::StrJoin(sizes, ", "), "}");
  if (!reductions.empty()) StrAppend(&s, " reduction={", absl::StrJoin(reductions, ", "), "}");
  if (!replicated.empty()) StrAppend(&s, " need_replication={", absl::StrJoin(replicated, ", "), "}");
  return s;
}

int ShardingRuleBuilder::AddFactor(int64_t size) {
  rule_.factor_sizes.push_back(size);
  return rule_.num_factors() - 1;
}
ShardingRuleBuilder& ShardingRuleBuilder::AddOperand(TensorFactors dims) {
  rule_.operands.push_back(std::move(dims));
  return *this;
}
ShardingRuleBuilder& ShardingRuleBuilder::AddResult(TensorFactors dims) {
  rule_.results.push_back(std::move(dims));
  return *this;
}
ShardingRuleBuilder& ShardingRuleBuilder::NeedReplication(int factor) {
  rule_.need_replication.push_back(factor);
  return *this;
}
ShardingRuleBuilder& ShardingRuleBuilder::SetCombiner(ShardingRule::Combiner combiner) {
  rule_.combiner = combiner;
  return *this;
}
ShardingRuleBuilder& ShardingRuleBuilder::ShardedReductionIsTypeError() {
  rule_.sharded_reduction_is_type_error = true;
  return *this;
}
ShardingRule ShardingRuleBuilder::Build() && { return std::move(rule_); }

ShardingRule ElementwiseShardingRule(absl::Span<const ShapedArray* const> in, absl::Span<const ShapedArray> out) {
  ShardingRuleBuilder b;
  const ShapedArray& shape_of = out.empty() ? *in[0] : out[0];
  TensorFactors full;
  for (int64_t d : shape_of.shape) full.push_back({b.AddFactor(d)});
  for (const ShapedArray* a : in) b.AddOperand(a->ndim() == shape_of.ndim() ? full : TensorFactors{});
  for (const ShapedArray& a : out) b.AddResult(a.ndim() == shape_of.ndim() ? full : TensorFactors{});
  return std::move(b).Build();
}

std::vector<std::vector<std::string>> FactorShardings(const ShardingRule& rule,
                                                      absl::Span<const DimShardings* const> operands,
                                                      absl::Span<const DimShardings* const> results,
                                                      std::string* conflict) {
  std::vector<std::vector<std::string>> axes(rule.num_factors());
  std::vector<bool> set(rule.num_factors(), false);
  std::vector<int> order;  // factors in the order they got their axes (earlier tensors win)
  auto note = [&](std::string why) {
    if (conflict != nullptr && conflict->empty()) *conflict = std::move(why);
  };
  auto visit = [&](const TensorFactors& factors, const DimShardings* sharding) {
    if (sharding == nullptr || sharding->empty()) return;
    for (size_t d = 0; d < factors.size() && d < sharding->size(); ++d) {
      const std::vector<std::string>& dim_axes = (*sharding)[d];
      if (dim_axes.empty() || factors[d].empty()) continue;
      // The dimension's axes go to its major factor of size > 1 (a merged reshape dim).
      int target = factors[d][0];
      for (int f : factors[d]) {
        if (rule.factor_sizes[f] > 1) {
          target = f;
          break;
        }
      }
      if (!set[target]) {
        set[target] = true;
        axes[target] = dim_axes;
        order.push_back(target);
      } else if (axes[target] != dim_axes) {
        note(StrCat("factor of size ", rule.factor_sizes[target], " is sharded as ", AxesText(axes[target]), " and as ",
                    AxesText(dim_axes)));
      }
    }
  };
  for (size_t i = 0; i < operands.size() && i < rule.operands.size(); ++i) visit(rule.operands[i], operands[i]);
  for (size_t i = 0; i < results.size() && i < rule.results.size(); ++i) visit(rule.results[i], results[i]);
  // A mesh axis may shard one factor only: the factor that got it first keeps it.
  for (size_t fi = 0; fi < order.size(); ++fi) {
    const int f = order[fi];
    for (size_t gi = 0; gi < fi; ++gi) {
      const int g = order[gi];
      for (const std::string& a : axes[f]) {
        if (std::find(axes[g].begin(), axes[g].end(), a) != axes[g].end()) {
          note(StrCat("mesh axis '", a, "' shards two different dimensions"));
          axes[f].clear();
          break;
        }
      }
    }
  }
  return axes;
}

void ClearInexpressibleFactorAxes(const ShardingRule& rule, std::vector<std::vector<std::string>>& factor_axes,
                                  const std::function<int64_t(const std::string&)>& axis_size) {
  auto visit = [&](const TensorFactors& t) {
    for (const DimFactors& d : t) {
      bool whole = true;  // every factor so far split into pieces of size 1
      for (int f : d) {
        if (!whole) {
          factor_axes[f].clear();
          continue;
        }
        int64_t n = 1;
        for (const std::string& a : factor_axes[f]) n *= axis_size(a);
        whole = n == rule.factor_sizes[f];
      }
    }
  };
  for (const TensorFactors& t : rule.operands) visit(t);
  for (const TensorFactors& t : rule.results) visit(t);
}

DimShardings TensorSharding(const TensorFactors& factors, const std::vector<std::vector<std::string>>& factor_axes) {
  DimShardings out(factors.size());
  bool any = false;
  for (size_t d = 0; d < factors.size(); ++d) {
    for (int f : factors[d]) {
      out[d].insert(out[d].end(), factor_axes[f].begin(), factor_axes[f].end());
    }
    any |= !out[d].empty();
  }
  if (!any) out.clear();
  return out;
}

void ApplyShardingRuleToTypes(std::string_view op, const ShardingRule& rule, absl::Span<const ShapedArray* const> in,
                              absl::Span<ShapedArray> out) {
  std::vector<const DimShardings*> ins;
  for (const ShapedArray* a : in) ins.push_back(&a->spec);
  std::string conflict;
  auto axes = FactorShardings(rule, ins, {}, &conflict);
  auto types = [&] {
    std::vector<std::string> s;
    for (const ShapedArray* a : in) s.push_back(a->str());
    return absl::StrJoin(s, ", ");
  };
  if (!conflict.empty()) {
    ThrowOpError<TypeError>(op, "operation with inputs: ", types(), " produces an incompatible sharding: ", conflict,
                            ". Reshard the operands (lax::with_sharding_constraint or jx::device_put) so they agree");
  }
  for (int f = 0; f < rule.num_factors(); ++f) {
    if (axes[f].empty()) continue;
    if (rule.NeedsReplication(f)) {
      ThrowOpError<TypeError>(op, "operation with inputs: ", types(), " shards a dimension of size ",
                              rule.factor_sizes[f], " over ", AxesText(axes[f]),
                              " that this op needs whole; reshard it to replicated first");
    }
    if (rule.IsReduction(f) && rule.sharded_reduction_is_type_error) {
      ThrowOpError<TypeError>(op, "operation with inputs: ", types(), ": contracting dimensions are sharded (over ",
                              AxesText(axes[f]), ") and it is ambiguous how the output should be sharded. Reshard "
                              "the operands, or make the result replicated or sharded with lax::with_sharding_constraint "
                              "outside explicit mode");
    }
  }
  // A result dim of several factors (a reshape merging dims) holds each device's pieces
  // contiguously only if every factor before a sharded one is split too: [8, 4@y] -> [32]
  // would leave each device strided elements, which no sharding of [32] describes.
  for (size_t i = 0; i < out.size() && i < rule.results.size(); ++i) {
    for (size_t d = 0; d < rule.results[i].size(); ++d) {
      const DimFactors& fs = rule.results[i][d];
      for (size_t k = 1; k < fs.size(); ++k) {
        if (axes[fs[k]].empty()) continue;
        for (size_t m = 0; m < k; ++m) {
          if (!axes[fs[m]].empty() || rule.factor_sizes[fs[m]] == 1) continue;
          ThrowOpError<TypeError>(op, "operation with inputs: ", types(), " merges dimensions into dimension ", d,
                                  " of its result (size ", out[i].shape[d], ") with a minor one sharded over ",
                                  AxesText(axes[fs[k]]), " and a major one (size ", rule.factor_sizes[fs[m]],
                                  ") whole: each device would hold strided elements. Reshard the operand so the ",
                                  "major dimension is sharded (or it is replicated) first");
        }
      }
    }
  }
  for (size_t i = 0; i < out.size() && i < rule.results.size(); ++i) {
    out[i].spec = TensorSharding(rule.results[i], axes);
  }
}

bool SpmdLoggingEnabled() {
  static const bool enabled = [] {
    const char* v = std::getenv("JX_LOG_SPMD");
    return v != nullptr && v[0] != '\0' && v[0] != '0';
  }();
  return enabled;
}

void SpmdLog(const std::string& line) {
  if (!SpmdLoggingEnabled()) return;
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  std::cerr << "[jx spmd] " << line << "\n";
}

}  // namespace jx

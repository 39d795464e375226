#include "jx/core/sharding_rule.h"

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <optional>

#include "absl/strings/str_join.h"
#include "jx/core/abstract_mesh_context.h"
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

namespace {

// The number of pieces the axes split a dimension into, from the mesh in context (nullopt
// without one, or for an axis it lacks).
std::optional<int64_t> ContextPieces(const std::vector<std::string>& axes) {
  int64_t n = 1;
  for (const std::string& a : axes) {
    const std::optional<int64_t> size = ContextMeshAxisSize(a);
    if (!size.has_value()) return std::nullopt;
    n *= *size;
  }
  return n;
}

// "'x' (size 4)", "('x', 'y') (4 x 2)".
std::string AxesWithSizes(const std::vector<std::string>& axes) {
  std::vector<std::string> sizes;
  for (const std::string& a : axes) sizes.push_back(std::to_string(ContextMeshAxisSize(a).value_or(0)));
  return StrCat(AxesText(axes), axes.size() == 1 ? " (size " : " (", absl::StrJoin(sizes, " x "), ")");
}

// With axis sizes in context: an operand dimension that becomes several result dimensions (a
// reshape's split, [32] -> [2, 16]) hands its axes to its pieces major first, as JAX's split
// rule does: a piece takes axes while they divide it and passes on once they split it whole,
// so each device keeps one block ([32@(x,y)] with x:2, y:4 -> [2@x, 16@y]). Axes that fit no
// piece that way would leave a device a piece no sharding of the result describes: TypeError.
void SplitDimensionAxes(std::string_view op, const ShardingRule& rule, absl::Span<const ShapedArray* const> in,
                        std::vector<std::vector<std::string>>& axes, const std::string& types) {
  for (size_t i = 0; i < in.size() && i < rule.operands.size(); ++i) {
    const DimShardings& spec = in[i]->spec;
    for (size_t d = 0; d < rule.operands[i].size() && d < spec.size(); ++d) {
      std::vector<int> pieces;  // the dimension's factors of size > 1, major first
      for (int f : rule.operands[i][d]) {
        if (rule.factor_sizes[f] > 1) pieces.push_back(f);
      }
      if (pieces.size() < 2 || spec[d].empty() || axes[pieces[0]] != spec[d] || !ContextPieces(spec[d])) continue;
      for (int f : pieces) axes[f].clear();
      size_t k = 0;
      int64_t used = 1;  // how many ways piece k is split so far
      for (const std::string& a : spec[d]) {
        const int64_t n = *ContextMeshAxisSize(a);
        while (k < pieces.size() && rule.factor_sizes[pieces[k]] % (used * n) != 0 &&
               used == rule.factor_sizes[pieces[k]]) {
          ++k;
          used = 1;
        }
        if (k == pieces.size() || rule.factor_sizes[pieces[k]] % (used * n) != 0) {
          std::vector<int64_t> sizes;
          for (int f : pieces) sizes.push_back(rule.factor_sizes[f]);
          ThrowOpError<TypeError>(
              op, op == "reshape" ? "This reshape is not supported: " : "", "operation with inputs: ", types,
              " splits dimension ", d, " of operand ", i, " (size ", in[i]->shape[d], ", sharded over ",
              AxesWithSizes(spec[d]), ") into pieces of sizes (", absl::StrJoin(sizes, ", "), "): ",
              AxesWithSizes({a}), " does not divide ", k < pieces.size() ? "the piece of size " : "any piece",
              k < pieces.size() ? std::to_string(rule.factor_sizes[pieces[k]] / used) : "",
              ", so a device's elements would not be one block of the result. Reshard the operand first "
              "(jx::reshard)");
        }
        axes[pieces[k]].push_back(a);
        used *= n;
      }
    }
  }
}

}  // namespace

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
                            ". Reshard one of the operands (jx::reshard) so they agree");
  }
  const bool sizes_known = ContextMeshAxes() != nullptr;
  if (sizes_known) SplitDimensionAxes(op, rule, in, axes, types());
  for (int f = 0; f < rule.num_factors(); ++f) {
    if (axes[f].empty()) continue;
    // A reduction's reduced dims lose their axes (JAX's rule for every reduction: the result
    // is replicated over them, whatever collective combines the partial results); only the
    // factors the rule lists (a sort or cumulative axis) must be whole.
    const bool listed =
        std::find(rule.need_replication.begin(), rule.need_replication.end(), f) != rule.need_replication.end();
    if (listed) {
      ThrowOpError<TypeError>(op, "operation with inputs: ", types(), " shards a dimension of size ",
                              rule.factor_sizes[f], " over ", AxesText(axes[f]),
                              " that this op needs whole; reshard it to replicated first (jx::reshard)");
    }
    if (rule.IsReduction(f) && rule.sharded_reduction_is_type_error) {
      ThrowOpError<TypeError>(op, "operation with inputs: ", types(), ": contracting dimensions are sharded (over ",
                              AxesText(axes[f]), ") and it is ambiguous how the output should be sharded. Reshard "
                              "the operands so the contracting dimensions are whole (jx::reshard)");
    }
  }
  // A result dim of several factors (a reshape merging dims) holds each device's pieces
  // contiguously only if every factor before a sharded one is split whole: [8, 4@y] -> [32]
  // would leave each device strided elements, which no sharding of [32] describes; so would
  // [8@x, 4@y] -> [32] unless x splits the 8 rows into single rows (its size is 8). Without a
  // mesh in context the sizes are unknown, and a major factor split at all is taken as whole.
  for (size_t i = 0; i < out.size() && i < rule.results.size(); ++i) {
    for (size_t d = 0; d < rule.results[i].size(); ++d) {
      const DimFactors& fs = rule.results[i][d];
      for (size_t k = 1; k < fs.size(); ++k) {
        if (axes[fs[k]].empty()) continue;
        for (size_t m = 0; m < k; ++m) {
          const int64_t size = rule.factor_sizes[fs[m]];
          if (size == 1) continue;
          const std::optional<int64_t> pieces = sizes_known ? ContextPieces(axes[fs[m]]) : std::nullopt;
          if (pieces.has_value() ? *pieces == size : !axes[fs[m]].empty()) continue;
          const std::string major =
              axes[fs[m]].empty() ? StrCat("a major one (size ", size, ") whole")
                                  : StrCat("a major one (size ", size, ") split only ", pieces.value_or(0),
                                           " ways over ", AxesWithSizes(axes[fs[m]]));
          ThrowOpError<TypeError>(op, op == "reshape" ? "This reshape is not supported: " : "",
                                  "operation with inputs: ", types(), " merges dimensions into dimension ", d,
                                  " of its result (size ", out[i].shape[d], ") with a minor one sharded over ",
                                  sizes_known ? AxesWithSizes(axes[fs[k]]) : AxesText(axes[fs[k]]), " and ", major,
                                  ": each device would hold strided elements. Reshard the operand so the major ",
                                  "dimension is split whole (or the minor one is replicated) first");
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

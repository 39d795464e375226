// Sharding rules of the shape ops. transpose permutes factors; broadcast_in_dim maps operand
// dim i to result dim broadcast_dimensions[i] (a size-1 operand dim that is broadcast gets its
// own factor of size 1) and gives the new dims fresh factors; squeeze/expand_dims drop or add
// size-1 dims; reshape factors each group of dims whose sizes multiply out alike, Shardy's
// way: [8] -> [2, 4] is ([ij])->([i, j]) {i=2, j=4}, so an operand sharded on its major part
// stays sharded. A group that does not split into common factors ([2, 3] -> [3, 2]) is one
// factor that needs replication. rev's reversed dims need replication; so do slice's sliced
// dims and concatenate's joined dim (the others pass through).
#include <algorithm>

#include "jx/core/registry.h"
#include "jx/lax/primitives.h"
#include "jx/lax/sharding_rules.h"

namespace jx::lax::internal {
namespace {

bool Contains(const std::vector<int64_t>& v, int64_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }

ShardingRule TransposeRule(InAvals in, const ParamMap& params, absl::Span<const ShapedArray>) {
  const ShapedArray& x = *in[0];
  const std::vector<int64_t>& perm = params.GetInts("permutation");
  ShardingRuleBuilder b;
  TensorFactors operand, result;
  for (int64_t d = 0; d < x.ndim(); ++d) operand.push_back({b.AddFactor(x.shape[d])});
  for (int64_t p : perm) result.push_back(operand[p]);
  b.AddOperand(std::move(operand)).AddResult(std::move(result));
  return std::move(b).Build();
}

ShardingRule BroadcastInDimRule(InAvals in, const ParamMap& params, absl::Span<const ShapedArray> out) {
  const ShapedArray& x = *in[0];
  const std::vector<int64_t>& bdims = params.GetInts("broadcast_dimensions");
  ShardingRuleBuilder b;
  TensorFactors operand(x.ndim()), result(out[0].ndim());
  for (int64_t d = 0; d < x.ndim(); ++d) {
    const int f = b.AddFactor(x.shape[d]);
    operand[d] = {f};
    if (x.shape[d] == out[0].shape[bdims[d]]) result[bdims[d]] = {f};
  }
  for (int64_t d = 0; d < out[0].ndim(); ++d) {
    if (result[d].empty()) result[d] = {b.AddFactor(out[0].shape[d])};
  }
  // Further operands (dynamic shapes) have no factors.
  b.AddOperand(std::move(operand));
  for (size_t i = 1; i < in.size(); ++i) b.AddOperand({});
  b.AddResult(std::move(result));
  return std::move(b).Build();
}

ShardingRule SqueezeRule(InAvals in, const ParamMap& params, absl::Span<const ShapedArray>) {
  const ShapedArray& x = *in[0];
  const std::vector<int64_t>& dims = params.GetInts("dimensions");
  ShardingRuleBuilder b;
  TensorFactors operand, result;
  for (int64_t d = 0; d < x.ndim(); ++d) {
    operand.push_back({b.AddFactor(x.shape[d])});
    if (!Contains(dims, d)) result.push_back(operand.back());
  }
  b.AddOperand(std::move(operand)).AddResult(std::move(result));
  return std::move(b).Build();
}

ShardingRule ExpandDimsRule(InAvals in, const ParamMap& params, absl::Span<const ShapedArray> out) {
  const std::vector<int64_t>& dims = params.GetInts("dimensions");
  ShardingRuleBuilder b;
  TensorFactors operand, result;
  for (int64_t d = 0; d < out[0].ndim(); ++d) {
    result.push_back({b.AddFactor(out[0].shape[d])});
    if (!Contains(dims, d)) operand.push_back(result.back());
  }
  b.AddOperand(std::move(operand)).AddResult(std::move(result));
  return std::move(b).Build();
}

ShardingRule RevRule(InAvals in, const ParamMap& params, absl::Span<const ShapedArray>) {
  const ShapedArray& x = *in[0];
  ShardingRuleBuilder b;
  TensorFactors t;
  for (int64_t d = 0; d < x.ndim(); ++d) t.push_back({b.AddFactor(x.shape[d])});
  for (int64_t d : params.GetInts("dimensions")) b.NeedReplication(t[d][0]);
  b.AddOperand(t).AddResult(t);
  return std::move(b).Build();
}

ShardingRule ReshapeRule(InAvals in, const ParamMap&, absl::Span<const ShapedArray> out) {
  const Shape& a = in[0]->shape;
  const Shape& c = out[0].shape;
  ShardingRuleBuilder b;
  TensorFactors operand(a.size()), result(c.size());
  if (NumElements(a) == 0) {  // nothing to shard: one factor the whole op keeps whole
    const int f = b.AddFactor(0);
    b.NeedReplication(f);
    for (auto& d : operand) d = {f};
    for (auto& d : result) d = {f};
    b.AddOperand(std::move(operand)).AddResult(std::move(result));
    return std::move(b).Build();
  }
  size_t i = 0, j = 0;
  while (i < a.size() || j < c.size()) {
    // Size-1 dims take a factor of their own on their side.
    if (i < a.size() && a[i] == 1) {
      operand[i++] = {b.AddFactor(1)};
      continue;
    }
    if (j < c.size() && c[j] == 1) {
      result[j++] = {b.AddFactor(1)};
      continue;
    }
    // A group: the fewest dims on each side whose sizes multiply to the same number.
    const size_t i0 = i, j0 = j;
    int64_t pa = a[i++], pc = c[j++];
    while (pa != pc) {
      if (pa < pc) {
        pa *= a[i++];
      } else {
        pc *= c[j++];
      }
    }
    // Split both sides into common factors, walking major to minor.
    std::vector<std::pair<size_t, size_t>> owners;  // per factor: (operand dim, result dim)
    std::vector<int64_t> sizes;
    bool divisible = true;
    {
      size_t ii = i0, jj = j0;
      int64_t ra = a[ii], rc = c[jj];
      while (ii < i && jj < j) {
        const int64_t f = std::min(ra, rc);
        if (ra % f != 0 || rc % f != 0) {
          divisible = false;
          break;
        }
        sizes.push_back(f);
        owners.push_back({ii, jj});
        ra /= f;
        rc /= f;
        if (ra == 1 && ++ii < i) ra = a[ii];
        if (rc == 1 && ++jj < j) rc = c[jj];
      }
    }
    if (!divisible) {
      const int f = b.AddFactor(pa);
      b.NeedReplication(f);
      for (size_t k = i0; k < i; ++k) operand[k] = {f};
      for (size_t k = j0; k < j; ++k) result[k] = {f};
      continue;
    }
    for (size_t k = 0; k < sizes.size(); ++k) {
      const int f = b.AddFactor(sizes[k]);
      operand[owners[k].first].push_back(f);
      result[owners[k].second].push_back(f);
    }
  }
  b.AddOperand(std::move(operand));
  for (size_t k = 1; k < in.size(); ++k) b.AddOperand({});
  b.AddResult(std::move(result));
  return std::move(b).Build();
}

// slice: a dim taken whole passes its factor through; a sliced (or strided) dim is one factor
// on the operand and another on the result, both needing replication (Shardy's rule).
ShardingRule SliceRule(InAvals in, const ParamMap& params, absl::Span<const ShapedArray> out) {
  const ShapedArray& x = *in[0];
  const std::vector<int64_t>& start = params.GetInts("start_indices");
  const Param* strides = params.Find("strides");
  const bool strided = strides != nullptr && !std::holds_alternative<ParamNone>(strides->value);
  ShardingRuleBuilder b;
  TensorFactors operand, result;
  for (int64_t d = 0; d < x.ndim(); ++d) {
    const bool whole = start[d] == 0 && out[0].shape[d] == x.shape[d] && (!strided || params.GetInts("strides")[d] == 1);
    if (whole) {
      operand.push_back({b.AddFactor(x.shape[d])});
      result.push_back(operand.back());
      continue;
    }
    const int from = b.AddFactor(x.shape[d]), to = b.AddFactor(out[0].shape[d]);
    b.NeedReplication(from).NeedReplication(to);
    operand.push_back({from});
    result.push_back({to});
  }
  b.AddOperand(std::move(operand)).AddResult(std::move(result));
  return std::move(b).Build();
}

// concatenate: the other dims are shared by every operand and the result; the joined dim is
// a factor of its own on each, needing replication.
ShardingRule ConcatenateRule(InAvals in, const ParamMap& params, absl::Span<const ShapedArray> out) {
  const int64_t dim = params.GetInt("dimension");
  ShardingRuleBuilder b;
  TensorFactors shared(out[0].ndim());
  for (int64_t d = 0; d < out[0].ndim(); ++d) {
    if (d != dim) shared[d] = {b.AddFactor(out[0].shape[d])};
  }
  auto with_own = [&](int64_t size) {
    TensorFactors t = shared;
    const int f = b.AddFactor(size);
    b.NeedReplication(f);
    t[dim] = {f};
    return t;
  };
  for (const ShapedArray* a : in) b.AddOperand(with_own(a->shape[dim]));
  b.AddResult(with_own(out[0].shape[dim]));
  return std::move(b).Build();
}

}  // namespace

void RegisterShapeSharding(Registry& r) {
  r.Define(kSlice).sharding_rule = SliceRule;
  r.Define(kConcatenate).sharding_rule = ConcatenateRule;
  r.Define(kTranspose).sharding_rule = TransposeRule;
  r.Define(kBroadcastInDim).sharding_rule = BroadcastInDimRule;
  r.Define(kSqueeze).sharding_rule = SqueezeRule;
  r.Define(kExpandDims).sharding_rule = ExpandDimsRule;
  r.Define(kRev).sharding_rule = RevRule;
  r.Define(kReshape).sharding_rule = ReshapeRule;
}

}  // namespace jx::lax::internal

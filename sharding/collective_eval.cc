#include "jx/sharding/collective_eval.h"

#include "jx/core/errors.h"
#include "jx/core/interpreter.h"
#include "jx/core/str_util.h"
#include "jx/lax/binary_ops.h"
#include "jx/lax/shape_ops.h"
#include "jx/lax/slicing_ops.h"
#include "jx/sharding/collectives.h"
#include "jx/transforms/ad_util.h"

namespace jx::shard_map_internal {
namespace {

using Groups = std::vector<std::vector<int64_t>>;

// A host copy of a device's value (uncommitted, so host ops combine values of several
// devices).
Array ToHost(const Array& x) { return Array::FromData(x.data(), x.shape(), x.dtype()); }

// Block k of n along dim.
Array Block(const Array& x, int64_t dim, int64_t k, int64_t n) {
  const int64_t size = x.shape()[static_cast<size_t>(dim)] / n;
  std::vector<int64_t> start(x.shape().size(), 0), limit(x.shape().begin(), x.shape().end());
  start[static_cast<size_t>(dim)] = k * size;
  limit[static_cast<size_t>(dim)] = (k + 1) * size;
  return lax::slice(x, start, limit);
}

Array Fold(Primitive p, const std::vector<Array>& host, const std::vector<int64_t>& group) {
  Array acc = host[static_cast<size_t>(group[0])];
  for (size_t i = 1; i < group.size(); ++i) {
    const Array& v = host[static_cast<size_t>(group[i])];
    if (p == lax::kPmax) {
      acc = lax::max(acc, v);
    } else if (p == lax::kPmin) {
      acc = lax::min(acc, v);
    } else {
      acc = lax::add(acc, v);
    }
  }
  return acc;
}

}  // namespace

std::vector<Array> EvalCollective(Primitive p, const std::vector<Array>& inputs, const ParamMap& params) {
  const CollectiveMesh& mesh = CollectiveMeshOf(params);
  const std::vector<std::string> axes = CollectiveAxes(params);
  const Groups groups = mesh.Groups(axes);
  const size_t num = static_cast<size_t>(mesh.num_devices());
  std::vector<Array> out(num);
  if (p == lax::kAxisIndex) {
    for (size_t d = 0; d < num; ++d) {
      out[d] = Array::Scalar(static_cast<double>(mesh.PositionAlong(static_cast<int64_t>(d), axes)), DType::kInt32);
    }
    return out;
  }
  if (inputs.size() != num) {
    throw InternalError(StrCat("[", p.name(), "] got ", inputs.size(), " device values for a mesh of ", num));
  }
  std::vector<Array> host(num);
  for (size_t d = 0; d < num; ++d) host[d] = ToHost(inputs[d]);
  if (p == lax::kPvary) return host;
  for (const std::vector<int64_t>& group : groups) {
    const int64_t n = static_cast<int64_t>(group.size());
    if (p == lax::kPsum || p == lax::kPsumUntyped || p == lax::kPmax || p == lax::kPmin) {
      const Array r = Fold(p, host, group);
      for (int64_t d : group) out[static_cast<size_t>(d)] = r;
    } else if (p == lax::kAllGather) {
      const int64_t dim = params.GetInt("all_gather_dimension");
      std::vector<Array> parts;
      for (int64_t d : group) {
        const Array& v = host[static_cast<size_t>(d)];
        parts.push_back(params.GetBool("tiled") ? v : lax::expand_dims(v, {dim}));
      }
      const Array r = lax::concatenate(parts, dim);
      for (int64_t d : group) out[static_cast<size_t>(d)] = r;
    } else if (p == lax::kReduceScatter) {
      const int64_t dim = params.GetInt("scatter_dimension");
      const Array sum = Fold(lax::kPsum, host, group);
      for (int64_t k = 0; k < n; ++k) {
        Array b = Block(sum, dim, k, n);
        out[static_cast<size_t>(group[static_cast<size_t>(k)])] = params.GetBool("tiled") ? b : lax::squeeze(b, {dim});
      }
    } else if (p == lax::kAllToAll) {
      const int64_t split = params.GetInt("split_axis");
      const int64_t concat = params.GetInt("concat_axis");
      for (int64_t k = 0; k < n; ++k) {
        std::vector<Array> parts;
        for (int64_t j : group) parts.push_back(Block(host[static_cast<size_t>(j)], split, k, n));
        out[static_cast<size_t>(group[static_cast<size_t>(k)])] = lax::concatenate(parts, concat);
      }
    } else if (p == lax::kPpermute) {
      for (int64_t d : group) out[static_cast<size_t>(d)] = Zeros(host[static_cast<size_t>(d)].aval());
      for (const auto& [src, dst] : PermOf(params)) {
        out[static_cast<size_t>(group[static_cast<size_t>(dst)])] = host[static_cast<size_t>(group[static_cast<size_t>(src)])];
      }
    } else {
      throw InternalError(StrCat("[", p.name(), "] is not a collective"));
    }
  }
  return out;
}

}  // namespace jx::shard_map_internal

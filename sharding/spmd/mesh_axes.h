// Small helpers on lists of mesh axes and per-dimension shardings that the SPMD partitioner's
// files share (internal to sharding/spmd).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "jx/core/sharding_rule.h"
#include "jx/core/str_util.h"
#include "jx/sharding/mesh.h"
#include "jx/sharding/partition_spec.h"

namespace jx::spmd {

using Axes = std::vector<std::string>;

// The number of devices the axes span together.
inline int64_t AxesSize(const Mesh& mesh, const Axes& axes) {
  int64_t n = 1;
  for (const std::string& a : axes) n *= mesh.axis_size(a);
  return n;
}

// s with one entry per dimension of a rank-`rank` value.
inline DimShardings Padded(const DimShardings& s, int64_t rank) {
  DimShardings out = s;
  out.resize(static_cast<size_t>(rank));
  return out;
}

inline bool IsPrefix(const Axes& a, const Axes& b) {
  return a.size() <= b.size() && std::equal(a.begin(), a.end(), b.begin());
}

// "'x'" or "('x', 'y')", as the partitioner's log names axes.
inline std::string AxesText(const Axes& axes) {
  if (axes.size() == 1) return StrCat("'", axes[0], "'");
  return StrCat("(", absl::StrJoin(axes, ", ", [](std::string* o, const std::string& a) { StrAppend(o, "'", a, "'"); }),
                ")");
}

// A PartitionSpec's mesh axes per dimension of a rank-`rank` value (every axis, Auto ones
// too); empty when it splits no dimension.
inline DimShardings SpecShardings(const PartitionSpec& spec, int64_t rank) {
  DimShardings out;
  bool sharded = false;
  for (int64_t d = 0; d < rank; ++d) {
    out.push_back(spec[d].axes());
    sharded |= !out.back().empty();
  }
  if (!sharded) out.clear();
  return out;
}

}  // namespace jx::spmd

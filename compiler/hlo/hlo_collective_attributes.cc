// Text forms of the collectives' attributes (declared in hlo_attributes.h): replica_groups
// and source_target_pairs, as XLA prints and parses them.
#include <algorithm>
#include <numeric>
#include <optional>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "jx/compiler/hlo/hlo_attributes.h"
#include "jx/compiler/hlo/str_util.h"

namespace jx::hlo {
namespace {

absl::Status Bad(std::string_view what, std::string_view text, std::string_view why = "") {
  return absl::InvalidArgumentError(
      StrCat("bad ", what, " \"", text, "\"", why.empty() ? "" : ": ", why));
}

// "{{0,1},{2,3}}" -> [[0,1],[2,3]]; "{}" -> [].
absl::StatusOr<std::vector<std::vector<int64_t>>> ParseNestedIntLists(std::string_view s,
                                                                     std::string_view what) {
  std::string_view body = StripAsciiWhitespace(s);
  if (!ConsumePrefix(&body, "{") || !ConsumeSuffix(&body, "}")) return Bad(what, s);
  std::vector<std::vector<int64_t>> out;
  body = StripAsciiWhitespace(body);
  while (!body.empty()) {
    if (!ConsumePrefix(&body, "{")) return Bad(what, s);
    const size_t close = body.find('}');
    if (close == std::string_view::npos) return Bad(what, s);
    absl::StatusOr<std::vector<int64_t>> list = ParseIntList(StrCat("{", body.substr(0, close), "}"));
    if (!list.ok()) return Bad(what, s);
    out.push_back(*std::move(list));
    body = StripAsciiWhitespace(body.substr(close + 1));
    if (!body.empty() && !ConsumePrefix(&body, ",")) return Bad(what, s);
    body = StripAsciiWhitespace(body);
  }
  return out;
}

// "[2,2]" -> {2,2}.
absl::StatusOr<std::vector<int64_t>> ParseBracketList(std::string_view* s, std::string_view text) {
  if (!ConsumePrefix(s, "[")) return Bad("replica_groups", text);
  const size_t close = s->find(']');
  if (close == std::string_view::npos) return Bad("replica_groups", text);
  absl::StatusOr<std::vector<int64_t>> list = ParseIntList(StrCat("{", s->substr(0, close), "}"));
  if (!list.ok()) return Bad("replica_groups", text);
  s->remove_prefix(close + 1);
  return list;
}

// XLA's IotaReplicaGroupList: "[G,S]<=[d...]" or "[G,S]<=[d...]T(perm)".
absl::StatusOr<ReplicaGroups> ParseIotaReplicaGroups(std::string_view text) {
  std::string_view s = StripAsciiWhitespace(text);
  absl::StatusOr<std::vector<int64_t>> group_shape = ParseBracketList(&s, text);
  if (!group_shape.ok()) return group_shape.status();
  if (group_shape->size() != 2 || !ConsumePrefix(&s, "<=")) return Bad("replica_groups", text);
  absl::StatusOr<std::vector<int64_t>> dims = ParseBracketList(&s, text);
  if (!dims.ok()) return dims.status();
  std::vector<int64_t> perm(dims->size());
  std::iota(perm.begin(), perm.end(), 0);
  if (ConsumePrefix(&s, "T(")) {
    if (!ConsumeSuffix(&s, ")")) return Bad("replica_groups", text);
    absl::StatusOr<std::vector<int64_t>> p = ParseIntList(StrCat("{", s, "}"));
    if (!p.ok() || p->size() != dims->size()) return Bad("replica_groups", text, "T() must permute the dims");
    perm = *std::move(p);
    s = "";
  }
  if (!s.empty()) return Bad("replica_groups", text);
  int64_t count = 1;
  for (int64_t d : *dims) {
    if (d < 1) return Bad("replica_groups", text, "dims must be positive");
    count *= d;
  }
  const int64_t groups = (*group_shape)[0], size = (*group_shape)[1];
  if (groups < 1 || size < 1 || groups * size != count) {
    return Bad("replica_groups", text, "group shape must cover the iota's ids");
  }
  std::vector<bool> seen(perm.size(), false);
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(perm.size()) || seen[p]) {
      return Bad("replica_groups", text, "T() must permute the dims");
    }
    seen[p] = true;
  }
  // Element k of the transposed array: its index in the transposed shape, mapped back.
  const size_t rank = dims->size();
  std::vector<int64_t> tdims(rank), strides(rank, 1);
  for (size_t i = 0; i < rank; ++i) tdims[i] = (*dims)[perm[i]];
  for (size_t i = rank; i-- > 1;) strides[i - 1] = strides[i] * (*dims)[i];
  ReplicaGroups out(groups);
  for (std::vector<int64_t>& g : out) g.reserve(static_cast<size_t>(size));
  std::vector<int64_t> index(rank, 0);
  for (int64_t k = 0; k < count; ++k) {
    int64_t id = 0;
    for (size_t i = 0; i < rank; ++i) id += index[i] * strides[perm[i]];
    out[k / size].push_back(id);
    for (size_t i = rank; i-- > 0;) {
      if (++index[i] < tdims[i]) break;
      index[i] = 0;
    }
  }
  return out;
}

std::string NestedToString(const std::vector<std::vector<int64_t>>& lists) {
  std::vector<std::string> parts;
  for (const std::vector<int64_t>& l : lists) parts.push_back(IntListToString(l));
  return StrCat("{", absl::StrJoin(parts, ","), "}");
}

// XLA's IotaReplicaGroupList text for `groups` when they are one: read group by group, the
// ids are iota(prod(dims)) reshaped to dims and transposed by perm (a mesh's groups over some
// of its axes). Found from the innermost dimension out: each level is the longest run of a
// constant stride over blocks of the levels inside it; the result is then regenerated and
// compared, so a list that is no transposed iota (or that the runs misread) gets nullopt.
std::optional<std::string> IotaReplicaGroupsString(const ReplicaGroups& groups) {
  if (groups.empty() || groups[0].empty()) return std::nullopt;
  const int64_t size = static_cast<int64_t>(groups[0].size());
  for (const std::vector<int64_t>& g : groups) {
    if (static_cast<int64_t>(g.size()) != size) return std::nullopt;
  }
  const int64_t count = static_cast<int64_t>(groups.size()) * size;
  auto at = [&](int64_t k) { return groups[static_cast<size_t>(k / size)][static_cast<size_t>(k % size)]; };
  if (at(0) != 0) return std::nullopt;
  struct Level {
    int64_t extent, stride;
  };
  std::vector<Level> levels;  // innermost first
  for (int64_t block = 1; block < count;) {
    const int64_t stride = at(block);
    if (stride <= 0) return std::nullopt;
    int64_t extent = 1;
    while (extent * block < count && at(extent * block) == extent * stride) ++extent;
    if ((count / block) % extent != 0) return std::nullopt;
    levels.push_back({extent, stride});
    block *= extent;
  }
  if (levels.empty()) levels.push_back({1, 1});
  // The iota's dims: the levels by stride, largest first, must be a row-major layout.
  std::vector<size_t> by_stride(levels.size());
  std::iota(by_stride.begin(), by_stride.end(), 0);
  std::sort(by_stride.begin(), by_stride.end(),
            [&](size_t a, size_t b) { return levels[a].stride > levels[b].stride; });
  std::vector<int64_t> dims, dim_of(levels.size());
  int64_t expected = 1;
  for (size_t i = by_stride.size(); i-- > 0;) {
    const Level& l = levels[by_stride[i]];
    if (l.stride != expected) return std::nullopt;
    expected *= l.extent;
  }
  for (size_t i = 0; i < by_stride.size(); ++i) {
    dims.push_back(levels[by_stride[i]].extent);
    dim_of[by_stride[i]] = static_cast<int64_t>(i);
  }
  std::vector<int64_t> perm;  // the transposed dims, outermost first
  for (size_t i = levels.size(); i-- > 0;) perm.push_back(dim_of[i]);
  // Regenerate: walk the transposed index (innermost level fastest).
  std::vector<int64_t> index(levels.size(), 0);
  int64_t id = 0;
  for (const std::vector<int64_t>& g : groups) {
    for (const int64_t got : g) {
      if (got != id) return std::nullopt;
      for (size_t i = 0; i < levels.size(); ++i) {
        id += levels[i].stride;
        if (++index[i] < levels[i].extent) break;
        id -= levels[i].stride * levels[i].extent;
        index[i] = 0;
      }
    }
  }
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) identity &= perm[i] == static_cast<int64_t>(i);
  return StrCat("[", groups.size(), ",", size, "]<=[", identity ? StrCat(count) : absl::StrJoin(dims, ","), "]",
                identity ? "" : StrCat("T(", absl::StrJoin(perm, ","), ")"));
}

// Lists of more ids than this print in the iota form when they have one: a pod's groups
// (thousands of ids per collective) would otherwise be most of a module's text.
constexpr int64_t kMaxExplicitReplicaGroupIds = 64;

}  // namespace

std::string ReplicaGroupsToString(const ReplicaGroups& groups) {
  int64_t ids = 0;
  for (const std::vector<int64_t>& g : groups) ids += static_cast<int64_t>(g.size());
  if (ids > kMaxExplicitReplicaGroupIds) {
    if (std::optional<std::string> iota = IotaReplicaGroupsString(groups)) return *std::move(iota);
  }
  return NestedToString(groups);
}

absl::StatusOr<ReplicaGroups> ParseReplicaGroups(std::string_view s) {
  if (StripAsciiWhitespace(s).rfind('[', 0) == 0) return ParseIotaReplicaGroups(s);
  return ParseNestedIntLists(s, "replica_groups");
}

std::string SourceTargetPairsToString(const SourceTargetPairs& pairs) {
  std::vector<std::vector<int64_t>> lists;
  for (const auto& [source, target] : pairs) lists.push_back({source, target});
  return NestedToString(lists);
}

absl::StatusOr<SourceTargetPairs> ParseSourceTargetPairs(std::string_view s) {
  absl::StatusOr<std::vector<std::vector<int64_t>>> lists = ParseNestedIntLists(s, "source_target_pairs");
  if (!lists.ok()) return lists.status();
  SourceTargetPairs out;
  for (const std::vector<int64_t>& l : *lists) {
    if (l.size() != 2) return Bad("source_target_pairs", s, "each pair is {source,target}");
    out.emplace_back(l[0], l[1]);
  }
  return out;
}

}  // namespace jx::hlo

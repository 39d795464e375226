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
    if (!p.ok()) return Bad("replica_groups", text, "T() must permute the dims");
    perm = *std::move(p);
    s = "";
  }
  if (!s.empty()) return Bad("replica_groups", text);
  absl::StatusOr<ReplicaGroups> groups =
      ReplicaGroups::Iota((*group_shape)[0], (*group_shape)[1], *std::move(dims), std::move(perm));
  if (!groups.ok()) return Bad("replica_groups", text, std::string(groups.status().message()));
  return groups;
}

std::string NestedToString(const std::vector<std::vector<int64_t>>& lists) {
  std::vector<std::string> parts;
  for (const std::vector<int64_t>& l : lists) parts.push_back(IntListToString(l));
  return StrCat("{", absl::StrJoin(parts, ","), "}");
}

// XLA's IotaReplicaGroupList text: "[G,S]<=[n]" for an iota in order, else
// "[G,S]<=[d...]T(perm)".
std::string IotaString(const ReplicaGroups::IotaForm& f) {
  bool identity = true;
  for (size_t i = 0; i < f.perm.size(); ++i) identity &= f.perm[i] == static_cast<int64_t>(i);
  if (identity) return StrCat("[", f.num_groups, ",", f.group_size, "]<=[", f.num_groups * f.group_size, "]");
  return StrCat("[", f.num_groups, ",", f.group_size, "]<=[", absl::StrJoin(f.dims, ","), "]T(",
                absl::StrJoin(f.perm, ","), ")");
}

// Lists of more ids than this print in the iota form when they have one: a pod's groups
// (thousands of ids per collective) would otherwise be most of a module's text.
constexpr int64_t kMaxExplicitReplicaGroupIds = 64;

}  // namespace

std::string ReplicaGroupsToString(const ReplicaGroups& groups) {
  if (groups.iota() != nullptr && groups.num_ids() > kMaxExplicitReplicaGroupIds) return IotaString(*groups.iota());
  return NestedToString(groups.ToLists());
}

absl::StatusOr<ReplicaGroups> ParseReplicaGroups(std::string_view s) {
  if (StripAsciiWhitespace(s).rfind('[', 0) == 0) return ParseIotaReplicaGroups(s);
  absl::StatusOr<std::vector<std::vector<int64_t>>> lists = ParseNestedIntLists(s, "replica_groups");
  if (!lists.ok()) return lists.status();
  return ReplicaGroups(*std::move(lists));
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

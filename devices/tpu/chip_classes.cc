#include "jx/devices/tpu/chip_classes.h"

#include <algorithm>
#include <map>
#include <memory>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"

namespace jx::tpu {
namespace {

// Renumbers keys (one per chip) densely in order of first appearance.
template <typename Key>
int64_t Renumber(const std::vector<Key>& keys, std::vector<int64_t>* out) {
  std::map<Key, int64_t> ids;
  out->resize(keys.size());
  for (size_t p = 0; p < keys.size(); ++p) {
    auto [it, inserted] = ids.emplace(keys[p], static_cast<int64_t>(ids.size()));
    (*out)[p] = it->second;
  }
  return static_cast<int64_t>(ids.size());
}

// The partner sets of a collective with these groups: per chip, an index into `sets` (the
// sorted classes of the chips it waits for, itself included), or -1 for a chip that takes no
// part. A chip in one group (every collective but a permute) shares its group's set.
std::vector<int64_t> PartnerSets(const std::vector<std::vector<int64_t>>& groups, const std::vector<int64_t>& cls,
                                 std::vector<std::vector<int64_t>>* sets) {
  std::map<std::vector<int64_t>, int64_t> ids;
  auto id_of = [&](std::vector<int64_t> set) {
    std::sort(set.begin(), set.end());
    set.erase(std::unique(set.begin(), set.end()), set.end());
    auto [it, inserted] = ids.emplace(set, static_cast<int64_t>(sets->size()));
    if (inserted) sets->push_back(std::move(set));
    return it->second;
  };
  std::vector<int64_t> group_of(cls.size(), -1);  // a chip's group; -2 when in several
  std::vector<int64_t> group_set(groups.size());
  for (size_t g = 0; g < groups.size(); ++g) {
    std::vector<int64_t> set;
    set.reserve(groups[g].size());
    for (int64_t q : groups[g]) {
      set.push_back(cls[q]);
      group_of[q] = group_of[q] == -1 ? static_cast<int64_t>(g) : -2;
    }
    group_set[g] = id_of(std::move(set));
  }
  std::vector<int64_t> out(cls.size(), -1);
  for (size_t p = 0; p < cls.size(); ++p) {
    if (group_of[p] >= 0) out[p] = group_set[group_of[p]];
  }
  std::map<int64_t, std::vector<int64_t>> union_of;
  for (size_t g = 0; g < groups.size(); ++g) {
    for (int64_t q : groups[g]) {
      if (group_of[q] != -2) continue;
      const std::vector<int64_t>& set = (*sets)[group_set[g]];
      std::vector<int64_t>& u = union_of[q];
      u.insert(u.end(), set.begin(), set.end());
    }
  }
  for (auto& [q, u] : union_of) out[q] = id_of(std::move(u));
  return out;
}

using Groups = PartnerGroups::Lists;

// Splits classes row by row (see the header); returns the number of classes.
class Refiner {
 public:
  Refiner(std::vector<int64_t> cls, int64_t num) : cls_(std::move(cls)), num_(num) {}

  void Walk(absl::Span<const PodStepRow> rows) {
    for (const PodStepRow& row : rows) {
      if (row.loop != nullptr) {
        // Each pass over the body can only split; a pass that splits nothing is a fixed point.
        for (int64_t trip = 0; trip < row.loop->trips; ++trip) {
          const int64_t before = num_;
          Walk(row.loop->rows);
          if (num_ == before) break;
        }
      } else if (!row.groups.empty()) {
        Split(row.groups);
      }
    }
  }

  const std::vector<int64_t>& classes() const { return cls_; }
  int64_t num() const { return num_; }

 private:
  void Split(const PartnerGroups& groups) {
    // A list that split nothing since the classes last changed splits nothing again: the
    // partner sets depend only on the list and the classes. Rows of equal collectives share
    // their list (PartnerGroups), so it is known by its identity.
    if (settled_.contains(groups.identity())) return;
    std::vector<std::vector<int64_t>> sets;
    const std::vector<int64_t> sig = PartnerSets(groups.lists(), cls_, &sets);
    // Most collectives split nothing: every chip of a class has its class's set.
    std::vector<int64_t> first(static_cast<size_t>(num_), -3);
    bool splits = false;
    for (size_t p = 0; p < cls_.size() && !splits; ++p) {
      int64_t& f = first[cls_[p]];
      if (f == -3) f = sig[p];
      splits = f != sig[p];
    }
    if (!splits) {
      settled_.insert(groups.identity());
      return;
    }
    std::vector<std::pair<int64_t, int64_t>> keys(cls_.size());
    for (size_t p = 0; p < cls_.size(); ++p) keys[p] = {cls_[p], sig[p]};
    num_ = Renumber(keys, &cls_);
    settled_.clear();
  }

  std::vector<int64_t> cls_;
  int64_t num_;
  absl::flat_hash_set<const void*> settled_;  // lists that split nothing under the current classes
};

// A collective's partners over classes: each class's representative's partners (see the
// header).
Groups ClassGroups(const Groups& groups, const std::vector<int64_t>& cls, const std::vector<int64_t>& representative) {
  std::vector<std::vector<int64_t>> sets;
  const std::vector<int64_t> sig = PartnerSets(groups, cls, &sets);
  // A pair per class and partner class; from both sides, since the partners of classes that
  // had equal clocks at this row are interchangeable.
  std::vector<std::vector<int64_t>> pairs;
  for (size_t c = 0; c < representative.size(); ++c) {
    const auto self = static_cast<int64_t>(c);
    const int64_t set = sig[static_cast<size_t>(representative[c])];
    if (set < 0) continue;  // its chips take no part
    for (int64_t d : sets[static_cast<size_t>(set)]) {
      pairs.push_back(d == self ? std::vector<int64_t>{self} : std::vector<int64_t>{std::min(self, d), std::max(self, d)});
    }
  }
  std::sort(pairs.begin(), pairs.end());
  pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
  return pairs;
}

// The rows over classes (the classes are final: a list's class groups are computed once).
std::vector<PodStepRow> ClassRows(absl::Span<const PodStepRow> rows, const std::vector<int64_t>& cls,
                                  const std::vector<int64_t>& representative,
                                  absl::flat_hash_map<const void*, PartnerGroups>& memo) {
  std::vector<PodStepRow> out(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    const PodStepRow& row = rows[i];
    out[i].async_start = row.async_start;
    out[i].start_row = row.start_row;
    if (row.loop != nullptr) {
      auto loop = std::make_shared<PodStepLoop>();
      loop->trips = row.loop->trips;
      loop->costs = row.loop->costs;
      loop->rows = ClassRows(row.loop->rows, cls, representative, memo);
      out[i].loop = std::move(loop);
    }
    if (row.groups.empty()) continue;
    auto [it, fresh] = memo.try_emplace(row.groups.identity());
    if (fresh) it->second = ClassGroups(row.groups.lists(), cls, representative);
    out[i].groups = it->second;
  }
  return out;
}

}  // namespace

std::vector<double> ChipClasses::RepresentativeStarts(absl::Span<const double> starts) const {
  std::vector<double> out;
  out.reserve(representative.size());
  for (int64_t p : representative) out.push_back(starts[p]);
  return out;
}

ChipClasses GroupIdenticalChips(absl::Span<const PodStepRow> rows, absl::Span<const double> starts) {
  const size_t n = starts.size();
  std::vector<int64_t> initial;
  const int64_t num = Renumber(std::vector<double>(starts.begin(), starts.end()), &initial);
  Refiner refiner(std::move(initial), num);
  refiner.Walk(rows);
  ChipClasses out;
  out.class_of = refiner.classes();
  out.representative.assign(static_cast<size_t>(refiner.num()), -1);
  out.size.assign(static_cast<size_t>(refiner.num()), 0);
  for (size_t p = 0; p < n; ++p) {
    const int64_t c = out.class_of[p];
    if (out.representative[c] < 0) out.representative[c] = static_cast<int64_t>(p);
    ++out.size[c];
  }
  absl::flat_hash_map<const void*, PartnerGroups> memo;  // by list: the rows' lists outlive it
  out.rows = ClassRows(rows, out.class_of, out.representative, memo);
  return out;
}

}  // namespace jx::tpu

#include "jx/devices/tpu/chip_classes.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <utility>

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

// The distinct classes of a group's members, sorted.
std::vector<int64_t> ClassesOf(const std::vector<int64_t>& group, const std::vector<int64_t>& cls,
                               std::vector<int64_t>* stamp, int64_t mark) {
  std::vector<int64_t> out;
  for (int64_t q : group) {
    const int64_t c = cls[q];
    if ((*stamp)[c] == mark) continue;
    (*stamp)[c] = mark;
    out.push_back(c);
  }
  std::sort(out.begin(), out.end());
  return out;
}

int64_t Find(std::vector<int64_t>& parent, int64_t x) {
  while (parent[x] != x) x = parent[x] = parent[parent[x]];
  return x;
}

}  // namespace

std::vector<double> ChipClasses::RepresentativeStarts(absl::Span<const double> starts) const {
  std::vector<double> out;
  out.reserve(representative.size());
  for (int64_t p : representative) out.push_back(starts[p]);
  return out;
}

ChipClasses GroupIdenticalChips(const SyncGroups& sync, absl::Span<const double> starts) {
  const size_t n = starts.size();
  std::vector<int64_t> cls;
  int64_t num = Renumber(std::vector<double>(starts.begin(), starts.end()), &cls);
  std::vector<int64_t> stamp(n, -1);
  int64_t mark = 0;
  for (const std::vector<std::vector<int64_t>>& groups : sync) {
    if (groups.empty()) continue;
    // Each chip's group as the set of classes in it (-1: in no group).
    std::map<std::vector<int64_t>, int64_t> signatures;
    std::vector<int64_t> sig(n, -1);
    for (const std::vector<int64_t>& g : groups) {
      auto [it, inserted] = signatures.emplace(ClassesOf(g, cls, &stamp, mark++), static_cast<int64_t>(signatures.size()));
      for (int64_t q : g) sig[q] = it->second;
    }
    if (signatures.size() == 1 && *std::min_element(sig.begin(), sig.end()) >= 0) continue;  // nothing splits
    std::vector<std::pair<int64_t, int64_t>> keys(n);
    for (size_t p = 0; p < n; ++p) keys[p] = {cls[p], sig[p]};
    num = Renumber(keys, &cls);
  }
  ChipClasses out;
  out.class_of = cls;
  out.representative.assign(static_cast<size_t>(num), -1);
  out.size.assign(static_cast<size_t>(num), 0);
  for (size_t p = 0; p < n; ++p) {
    if (out.representative[cls[p]] < 0) out.representative[cls[p]] = static_cast<int64_t>(p);
    ++out.size[cls[p]];
  }
  // Each row's groups over final classes. Two groups holding one class are merged: the
  // class's chips had equal clocks in both, so the merged group starts when each would have.
  std::vector<int64_t> class_stamp(static_cast<size_t>(num), -1);
  out.sync.resize(sync.size());
  for (size_t r = 0; r < sync.size(); ++r) {
    if (sync[r].empty()) continue;
    std::vector<std::vector<int64_t>> sets;
    for (const std::vector<int64_t>& g : sync[r]) sets.push_back(ClassesOf(g, cls, &class_stamp, mark++));
    std::vector<int64_t> parent(sets.size());
    std::iota(parent.begin(), parent.end(), 0);
    std::vector<int64_t> set_of(static_cast<size_t>(num), -1);
    for (size_t s = 0; s < sets.size(); ++s) {
      for (int64_t c : sets[s]) {
        if (set_of[c] >= 0) parent[Find(parent, static_cast<int64_t>(s))] = Find(parent, set_of[c]);
        else set_of[c] = static_cast<int64_t>(s);
      }
    }
    std::map<int64_t, std::vector<int64_t>> merged;
    for (size_t s = 0; s < sets.size(); ++s) {
      std::vector<int64_t>& m = merged[Find(parent, static_cast<int64_t>(s))];
      m.insert(m.end(), sets[s].begin(), sets[s].end());
    }
    for (auto& [root, m] : merged) {
      std::sort(m.begin(), m.end());
      m.erase(std::unique(m.begin(), m.end()), m.end());
      out.sync[r].push_back(std::move(m));
    }
  }
  return out;
}

}  // namespace jx::tpu

#include "jx/compiler/hlo/replica_groups.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"

namespace jx::hlo {
namespace {

// The same transposed iota with no dim of 1 and no two dims merged by the transpose kept
// apart (transposed dims j, j+1 that are dims p, p+1: one dim of their product), as XLA's
// IotaTileAssignment canonicalizes: equal id sequences then have equal forms.
void Canonicalize(std::vector<int64_t>* dims, std::vector<int64_t>* perm) {
  auto erase_dim = [&](int64_t d) {  // drops dim d from dims and perm, renumbering
    dims->erase(dims->begin() + d);
    perm->erase(std::find(perm->begin(), perm->end(), d));
    for (int64_t& p : *perm) p -= p > d ? 1 : 0;
  };
  for (int64_t d = static_cast<int64_t>(dims->size()); d-- > 0;) {
    if ((*dims)[d] == 1) erase_dim(d);
  }
  for (size_t j = 0; j + 1 < perm->size();) {
    const int64_t d = (*perm)[j];
    if ((*perm)[j + 1] != d + 1) {
      ++j;
      continue;
    }
    (*dims)[d] *= (*dims)[d + 1];
    (*dims)[d + 1] = 1;
    erase_dim(d + 1);
  }
  if (dims->empty()) {
    dims->push_back(1);
    perm->push_back(0);
  }
}

// `groups` as a transposed iota, when they are one. Read group by group, found from the
// innermost dimension out: each level is the longest run of a constant stride over blocks of
// the levels inside it; the levels by stride must be a row-major layout, and the ids are then
// regenerated and compared, so a list that is no transposed iota (or that the runs misread)
// gets nullopt.
std::optional<ReplicaGroups::IotaForm> AsIota(const std::vector<std::vector<int64_t>>& groups) {
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
  std::vector<size_t> by_stride(levels.size());  // levels by stride, largest first: the dims
  std::iota(by_stride.begin(), by_stride.end(), 0);
  std::sort(by_stride.begin(), by_stride.end(), [&](size_t a, size_t b) { return levels[a].stride > levels[b].stride; });
  int64_t expected = 1;
  for (size_t i = by_stride.size(); i-- > 0;) {
    const Level& l = levels[by_stride[i]];
    if (l.stride != expected) return std::nullopt;
    expected *= l.extent;
  }
  ReplicaGroups::IotaForm form;
  form.num_groups = static_cast<int64_t>(groups.size());
  form.group_size = size;
  std::vector<int64_t> dim_of(levels.size());
  for (size_t i = 0; i < by_stride.size(); ++i) {
    form.dims.push_back(levels[by_stride[i]].extent);
    dim_of[by_stride[i]] = static_cast<int64_t>(i);
  }
  for (size_t i = levels.size(); i-- > 0;) form.perm.push_back(dim_of[i]);  // outermost first
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
  Canonicalize(&form.dims, &form.perm);
  return form;
}

// Appends elements [begin, begin + count) of the transposed iota, in order: runs along the
// innermost transposed dim in a tight loop, the outer dims carried at each run's end
// (consumers that list whole groups read every id of a pod this way).
void AppendIotaIds(const ReplicaGroups::IotaForm& f, int64_t begin, int64_t count, std::vector<int64_t>* out) {
  const size_t rank = f.dims.size();
  absl::InlinedVector<int64_t, 8> strides(rank, 1), tdims(rank), tstrides(rank), index(rank);
  for (size_t d = rank; d-- > 1;) strides[d - 1] = strides[d] * f.dims[d];
  for (size_t j = 0; j < rank; ++j) {
    tdims[j] = f.dims[f.perm[j]];
    tstrides[j] = strides[f.perm[j]];
  }
  int64_t id = 0;
  for (size_t j = rank, k = static_cast<size_t>(begin); j-- > 0;) {
    index[j] = static_cast<int64_t>(k % static_cast<size_t>(tdims[j]));
    k /= static_cast<size_t>(tdims[j]);
    id += index[j] * tstrides[j];
  }
  const size_t inner = rank - 1;
  while (count > 0) {
    const int64_t run = std::min(tdims[inner] - index[inner], count);
    for (int64_t r = 0; r < run; ++r) out->push_back(id + r * tstrides[inner]);
    count -= run;
    if (count == 0) break;
    id -= index[inner] * tstrides[inner];  // back to the run's start, then carry outward
    index[inner] = 0;
    for (size_t j = inner; j-- > 0;) {
      id += tstrides[j];
      if (++index[j] < tdims[j]) break;
      id -= tstrides[j] * tdims[j];
      index[j] = 0;
    }
  }
}

// Every group of `f`, listed (O(ids)). Consumers that need whole lists ask once per distinct
// form (the pod step's PartnersMemo), so no cache here.
std::vector<std::vector<int64_t>> ListIota(const ReplicaGroups::IotaForm& f) {
  std::vector<std::vector<int64_t>> lists(static_cast<size_t>(f.num_groups));
  for (size_t i = 0; i < lists.size(); ++i) {
    lists[i].reserve(static_cast<size_t>(f.group_size));
    AppendIotaIds(f, static_cast<int64_t>(i) * f.group_size, f.group_size, &lists[i]);
  }
  return lists;
}

}  // namespace

ReplicaGroups::ReplicaGroups(std::vector<std::vector<int64_t>> groups) {
  if (groups.empty()) return;
  iota_ = AsIota(groups);
  if (!iota_) lists_ = std::make_shared<const std::vector<std::vector<int64_t>>>(std::move(groups));
}

absl::StatusOr<ReplicaGroups> ReplicaGroups::Iota(int64_t num_groups, int64_t group_size, std::vector<int64_t> dims,
                                                  std::vector<int64_t> perm) {
  auto bad = [&](const char* why) {
    return absl::InvalidArgumentError(absl::StrCat("iota replica groups [", num_groups, ",", group_size, "]: ", why));
  };
  int64_t count = 1;
  for (const int64_t d : dims) {
    if (d < 1) return bad("dims must be positive");
    count *= d;
  }
  if (num_groups < 1 || group_size < 1 || num_groups * group_size != count) {
    return bad("the group shape must cover the iota's ids");
  }
  if (perm.size() != dims.size()) return bad("T() must permute the dims");
  std::vector<bool> seen(perm.size(), false);
  for (const int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(perm.size()) || seen[p]) return bad("T() must permute the dims");
    seen[p] = true;
  }
  Canonicalize(&dims, &perm);
  ReplicaGroups out;
  out.iota_ = IotaForm{.num_groups = num_groups, .group_size = group_size, .dims = std::move(dims), .perm = std::move(perm)};
  return out;
}

size_t ReplicaGroups::size() const {
  if (iota_) return static_cast<size_t>(iota_->num_groups);
  return lists_ == nullptr ? 0 : lists_->size();
}

int64_t ReplicaGroups::num_ids() const {
  if (iota_) return iota_->num_groups * iota_->group_size;
  int64_t ids = 0;
  if (lists_ != nullptr) {
    for (const std::vector<int64_t>& g : *lists_) ids += static_cast<int64_t>(g.size());
  }
  return ids;
}

int64_t ReplicaGroups::group_size() const {
  if (iota_) return iota_->group_size;
  return lists_ == nullptr ? 0 : static_cast<int64_t>(lists_->front().size());
}

bool ReplicaGroups::uniform() const {
  if (iota_ || lists_ == nullptr) return true;
  return std::all_of(lists_->begin(), lists_->end(),
                     [&](const std::vector<int64_t>& g) { return g.size() == lists_->front().size(); });
}

std::vector<int64_t> ReplicaGroups::group(size_t i) const {
  if (i >= size()) throw std::out_of_range(absl::StrCat("replica group ", i, " of ", size()));
  if (!iota_) return (*lists_)[i];
  std::vector<int64_t> members;
  members.reserve(static_cast<size_t>(iota_->group_size));
  AppendIotaIds(*iota_, static_cast<int64_t>(i) * iota_->group_size, iota_->group_size, &members);
  return members;
}

std::optional<ReplicaGroups::Place> ReplicaGroups::Find(int64_t id) const {
  if (!iota_) {
    if (lists_ == nullptr) return std::nullopt;
    for (size_t g = 0; g < lists_->size(); ++g) {
      const std::vector<int64_t>& members = (*lists_)[g];
      if (auto it = std::find(members.begin(), members.end(), id); it != members.end()) {
        return Place{static_cast<int64_t>(g), it - members.begin()};
      }
    }
    return std::nullopt;
  }
  const IotaForm& f = *iota_;
  if (id < 0 || id >= f.num_groups * f.group_size) return std::nullopt;
  // id's index in `dims`, then its position in the transposed array, row-major.
  const size_t rank = f.dims.size();
  std::vector<int64_t> index(rank);
  for (size_t d = rank, rest = static_cast<size_t>(id); d-- > 0;) {
    index[d] = static_cast<int64_t>(rest) % f.dims[d];
    rest /= static_cast<size_t>(f.dims[d]);
  }
  int64_t k = 0;
  for (size_t j = 0; j < rank; ++j) k = k * f.dims[f.perm[j]] + index[f.perm[j]];
  return Place{k / f.group_size, k % f.group_size};
}

std::vector<std::vector<int64_t>> ReplicaGroups::ToLists() const {
  if (!iota_) return lists_ == nullptr ? std::vector<std::vector<int64_t>>() : *lists_;
  return ListIota(*iota_);
}

bool operator==(const ReplicaGroups& a, const ReplicaGroups& b) {
  if (a.iota_ || b.iota_) return a.iota_ == b.iota_;
  if (a.lists_ == b.lists_) return true;
  if (a.lists_ == nullptr || b.lists_ == nullptr) return false;
  return *a.lists_ == *b.lists_;
}

}  // namespace jx::hlo

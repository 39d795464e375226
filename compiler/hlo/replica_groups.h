// The groups of partitions a collective runs over, kept as XLA's CollectiveDeviceList keeps
// them: compact when the groups are a transposed iota (IotaReplicaGroupList, a mesh's groups
// over some of its axes: "[1152,16]<=[18432]", "[144,64]<=[9,64,16]T(0,2,1)"), listed
// otherwise. A pod-wide collective names every device (18432 on a v7 pod); in the compact
// form copying, comparing, hashing and checking one is O(rank), and one group's members (or
// the group holding a device) are computed when asked for, never the whole list.
//
//   ReplicaGroups g = ReplicaGroups::Iota(4, 2, {2, 4}, {1, 0});  // {{0,4},{1,5},{2,6},{3,7}}
//   g.size() == 4; g.group_size() == 2; g.group(1) == {1, 5}; g.Find(6) == {2, 1}
//   g == ReplicaGroups{{0, 4}, {1, 5}, {2, 6}, {3, 7}}  // lists that are an iota become one
//
// Empty (no groups) means one group of every partition, as XLA's replica_groups={}.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace jx::hlo {

class ReplicaGroups {
 public:
  // Ids iota(prod(dims)) reshaped to `dims`, transposed by `perm`, read row-major and split
  // into num_groups groups of group_size. Kept canonical (no dim of 1, no two transposed dims
  // that are adjacent in `dims` and in order), so equal groups have equal forms.
  struct IotaForm {
    int64_t num_groups = 0, group_size = 0;
    std::vector<int64_t> dims, perm;
    friend bool operator==(const IotaForm&, const IotaForm&) = default;
  };

  ReplicaGroups() = default;
  // Listed groups; stored in the iota form when they are one (checked once, here).
  ReplicaGroups(std::vector<std::vector<int64_t>> groups);  // NOLINT: lists convert as before
  ReplicaGroups(std::initializer_list<std::vector<int64_t>> groups)
      : ReplicaGroups(std::vector<std::vector<int64_t>>(groups)) {}
  // The iota form; InvalidArgument when the group shape does not cover prod(dims) ids or
  // `perm` is no permutation of the dims.
  static absl::StatusOr<ReplicaGroups> Iota(int64_t num_groups, int64_t group_size, std::vector<int64_t> dims,
                                            std::vector<int64_t> perm);

  // The compact form, or nullptr for listed groups that are no transposed iota.
  const IotaForm* iota() const { return iota_ ? &*iota_ : nullptr; }

  bool empty() const { return size() == 0; }
  size_t size() const;           // groups
  int64_t num_ids() const;       // ids over all groups
  int64_t group_size() const;    // members of the first group (of every group when uniform())
  bool uniform() const;          // every group has group_size() members
  // Group i's members, in order (computed for the iota form).
  std::vector<int64_t> group(size_t i) const;
  std::vector<int64_t> operator[](size_t i) const { return group(i); }
  std::vector<int64_t> front() const { return group(0); }
  // The group holding partition `id` and its position there; nullopt when no group does.
  struct Place {
    int64_t group = 0, position = 0;
    friend bool operator==(const Place&, const Place&) = default;
  };
  std::optional<Place> Find(int64_t id) const;
  // Every group listed: O(ids). For consumers that need the lists whole.
  std::vector<std::vector<int64_t>> ToLists() const;
  operator std::vector<std::vector<int64_t>>() const { return ToLists(); }  // NOLINT

  // Iterates the groups, each computed as it is read.
  class const_iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = std::vector<int64_t>;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = std::vector<int64_t>;
    const_iterator(const ReplicaGroups* groups, size_t i) : groups_(groups), i_(i) {}
    std::vector<int64_t> operator*() const { return groups_->group(i_); }
    const_iterator& operator++() {
      ++i_;
      return *this;
    }
    friend bool operator==(const const_iterator& a, const const_iterator& b) { return a.i_ == b.i_; }

   private:
    const ReplicaGroups* groups_;
    size_t i_;
  };
  using iterator = const_iterator;
  using value_type = std::vector<int64_t>;
  const_iterator begin() const { return {this, 0}; }
  const_iterator end() const { return {this, size()}; }

  // Equal groups compare equal whichever way they were made (a list that is an iota is
  // stored as one).
  friend bool operator==(const ReplicaGroups& a, const ReplicaGroups& b);
  template <typename H>
  friend H AbslHashValue(H h, const ReplicaGroups& g) {
    if (g.iota_) return H::combine(std::move(h), true, g.iota_->num_groups, g.iota_->group_size, g.iota_->dims, g.iota_->perm);
    if (g.lists_ == nullptr) return H::combine(std::move(h), false, size_t{0});
    return H::combine(std::move(h), false, *g.lists_);
  }

 private:
  std::optional<IotaForm> iota_;
  // Listed groups (shared: copies of an instruction's attributes don't copy the ids).
  std::shared_ptr<const std::vector<std::vector<int64_t>>> lists_;
};

}  // namespace jx::hlo

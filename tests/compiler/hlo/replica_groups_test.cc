// ReplicaGroups in XLA's iota form: members and the group of a device computed from the
// compact form (checked against groups listed by hand and by a brute-force transpose),
// equality and hashing across the two forms, and the text round trip.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "jx/compiler/hlo/hlo_attributes.h"
#include "jx/compiler/hlo/hlo_fingerprint.h"
#include "jx/compiler/hlo/hlo_module.h"
#include "jx/compiler/hlo/hlo_parser.h"
#include "jx/compiler/hlo/replica_groups.h"

namespace jx::hlo::replica_groups_test {
namespace {

using Lists = std::vector<std::vector<int64_t>>;

ReplicaGroups Iota(int64_t groups, int64_t size, std::vector<int64_t> dims, std::vector<int64_t> perm) {
  absl::StatusOr<ReplicaGroups> g = ReplicaGroups::Iota(groups, size, std::move(dims), std::move(perm));
  EXPECT_TRUE(g.ok()) << g.status();
  return g.ok() ? *std::move(g) : ReplicaGroups();
}

// iota(24) as a 3x4x2 array transposed by `perm`, read row-major, split into groups of `size`:
// the nested loops walk the transposed array's index directly.
Lists Transposed342(std::vector<int64_t> perm, int64_t size) {
  const int64_t dims[3] = {3, 4, 2};
  const int64_t strides[3] = {8, 2, 1};
  Lists out;
  int64_t k = 0;
  for (int64_t i = 0; i < dims[perm[0]]; ++i) {
    for (int64_t j = 0; j < dims[perm[1]]; ++j) {
      for (int64_t l = 0; l < dims[perm[2]]; ++l, ++k) {
        if (k % size == 0) out.emplace_back();
        out.back().push_back(i * strides[perm[0]] + j * strides[perm[1]] + l * strides[perm[2]]);
      }
    }
  }
  return out;
}

TEST(ReplicaGroupsTest, ATransposedIotaListsItsGroups) {
  const ReplicaGroups g = Iota(4, 2, {2, 4}, {1, 0});
  ASSERT_NE(g.iota(), nullptr);
  EXPECT_EQ(g.size(), 4u);
  EXPECT_EQ(g.group_size(), 2);
  EXPECT_EQ(g.num_ids(), 8);
  EXPECT_TRUE(g.uniform());
  EXPECT_EQ(g.group(1), (std::vector<int64_t>{1, 5}));
  EXPECT_EQ(g.ToLists(), (Lists{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
  Lists iterated;
  for (const std::vector<int64_t>& members : g) iterated.push_back(members);
  EXPECT_EQ(iterated, g.ToLists());
}

TEST(ReplicaGroupsTest, MembersAndTheGroupOfADeviceFollowTheTranspose) {
  const std::vector<std::vector<int64_t>> perms = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  for (const std::vector<int64_t>& perm : perms) {
    for (const int64_t size : {1, 2, 3, 4, 6, 8, 12, 24}) {
      const Lists expected = Transposed342(perm, size);
      const ReplicaGroups g = Iota(24 / size, size, {3, 4, 2}, perm);
      SCOPED_TRACE(ReplicaGroupsToString(g));
      ASSERT_EQ(g.size(), expected.size());
      for (size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(g.group(i), expected[i]) << "group " << i;
      for (size_t i = 0; i < expected.size(); ++i) {
        for (size_t p = 0; p < expected[i].size(); ++p) {
          const std::optional<ReplicaGroups::Place> place = g.Find(expected[i][p]);
          ASSERT_TRUE(place.has_value()) << expected[i][p];
          EXPECT_EQ(*place, (ReplicaGroups::Place{static_cast<int64_t>(i), static_cast<int64_t>(p)}));
        }
      }
      EXPECT_FALSE(g.Find(-1).has_value());
      EXPECT_FALSE(g.Find(24).has_value());
      // The same ids listed: stored as the same iota, equal, same hash.
      const ReplicaGroups listed(expected);
      ASSERT_NE(listed.iota(), nullptr);
      EXPECT_EQ(listed, g);
      EXPECT_EQ(absl::HashOf(listed), absl::HashOf(g));
    }
  }
}

TEST(ReplicaGroupsTest, EqualGroupsHaveOneFormHoweverTheIotaIsWritten) {
  // Dims of 1 and transposed dims that stay in order describe the same ids.
  EXPECT_EQ(Iota(4, 2, {2, 1, 4}, {2, 1, 0}), Iota(4, 2, {2, 4}, {1, 0}));
  EXPECT_EQ(absl::HashOf(Iota(4, 2, {2, 1, 4}, {2, 1, 0})), absl::HashOf(Iota(4, 2, {2, 4}, {1, 0})));
  EXPECT_EQ(Iota(2, 4, {2, 2, 2}, {0, 1, 2}), Iota(2, 4, {8}, {0}));
  EXPECT_EQ(Iota(2, 4, {2, 2, 2}, {2, 0, 1}), Iota(2, 4, {4, 2}, {1, 0}));
  EXPECT_EQ(Iota(2, 4, {2, 2, 2}, {2, 0, 1}).iota()->dims, (std::vector<int64_t>{4, 2}));
  // The same ids split differently, or different ids, are different groups.
  EXPECT_NE(Iota(2, 4, {8}, {0}), Iota(4, 2, {8}, {0}));
  EXPECT_NE(Iota(4, 2, {2, 4}, {1, 0}), Iota(4, 2, {4, 2}, {1, 0}));
}

TEST(ReplicaGroupsTest, ListsThatAreNoIotaStayListed) {
  const ReplicaGroups uneven({{0, 2}, {1, 3, 4}});
  EXPECT_EQ(uneven.iota(), nullptr);
  EXPECT_FALSE(uneven.uniform());
  EXPECT_EQ(uneven.num_ids(), 5);
  EXPECT_EQ(uneven.Find(4), (ReplicaGroups::Place{1, 2}));
  EXPECT_FALSE(uneven.Find(5).has_value());
  const ReplicaGroups swapped({{1, 0}, {2, 3}});
  EXPECT_EQ(swapped.iota(), nullptr);
  EXPECT_EQ(swapped, ReplicaGroups({{1, 0}, {2, 3}}));
  EXPECT_EQ(absl::HashOf(swapped), absl::HashOf(ReplicaGroups({{1, 0}, {2, 3}})));
  EXPECT_NE(swapped, ReplicaGroups({{0, 1}, {2, 3}}));
  EXPECT_TRUE(ReplicaGroups().empty());
  EXPECT_EQ(ReplicaGroups(), ReplicaGroups(Lists{}));
  EXPECT_NE(ReplicaGroups(), ReplicaGroups({{0}}));
}

TEST(ReplicaGroupsTest, InvalidIotaFormsAreRejected) {
  EXPECT_FALSE(ReplicaGroups::Iota(3, 3, {8}, {0}).ok());        // 9 ids of 8
  EXPECT_FALSE(ReplicaGroups::Iota(2, 2, {2, 2}, {0, 0}).ok());  // no permutation
  EXPECT_FALSE(ReplicaGroups::Iota(2, 2, {2, 2}, {0}).ok());     // perm of another rank
  EXPECT_FALSE(ReplicaGroups::Iota(0, 4, {0, 4}, {0, 1}).ok());
}

// A pod's groups print in XLA's iota form and read back compact; short ones list their ids.
TEST(ReplicaGroupsTest, TheIotaFormRoundTripsThroughText) {
  for (const std::string text : {"[1152,16]<=[18432]", "[144,64]<=[9,64,16]T(0,2,1)", "[1024,9]<=[9,1024]T(1,0)"}) {
    absl::StatusOr<ReplicaGroups> g = ParseReplicaGroups(text);
    ASSERT_TRUE(g.ok()) << g.status();
    ASSERT_NE(g->iota(), nullptr) << text;
    EXPECT_EQ(ReplicaGroupsToString(*g), text);
  }
  // Written with dims of 1 or merged dims apart: read as the one form, printed as XLA would.
  absl::StatusOr<ReplicaGroups> g = ParseReplicaGroups("[64,144]<=[9,64,1,16]T(1,2,0,3)");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(ReplicaGroupsToString(*g), "[64,144]<=[9,64,16]T(1,0,2)");
  g = ParseReplicaGroups("[4,2]<=[2,4]T(1,0)");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(ReplicaGroupsToString(*g), "{{0,4},{1,5},{2,6},{3,7}}");
}

// A module written with listed groups and the same module with them in the iota form are the
// same program: equal fingerprints.
TEST(ReplicaGroupsTest, TheFingerprintIsTheSameForBothForms) {
  auto module = [](const std::string& groups) {
    return ParseHloModule(absl::StrCat(R"(HloModule m

%sum (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %x, f32[] %y)
}

ENTRY %main (p: f32[8]) -> f32[8] {
  %p = f32[8]{0} parameter(0)
  ROOT %ar = f32[8]{0} all-reduce(f32[8]{0} %p), channel_id=1, replica_groups=)",
                                       groups, R"(, use_global_device_ids=true, to_apply=%sum
}
)"));
  };
  absl::StatusOr<std::unique_ptr<HloModule>> listed = module("{{0,4},{1,5},{2,6},{3,7}}");
  absl::StatusOr<std::unique_ptr<HloModule>> iota = module("[4,2]<=[2,4]T(1,0)");
  absl::StatusOr<std::unique_ptr<HloModule>> other = module("[4,2]<=[8]");
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_TRUE(iota.ok()) << iota.status();
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_EQ(FingerprintHloModule(**listed), FingerprintHloModule(**iota));
  EXPECT_NE(FingerprintHloModule(**listed), FingerprintHloModule(**other));
}

}  // namespace
}  // namespace jx::hlo::replica_groups_test

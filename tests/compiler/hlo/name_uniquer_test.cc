// NameUniquer: the per-prefix name registry hands out exactly the names a set of every name
// taken would (the names, and so the printed modules, are as before it).
#include "jx/compiler/hlo/name_uniquer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

namespace jx::hlo::name_uniquer_test {
namespace {

TEST(NameUniquerTest, AnExactNameIsTakenOnce) {
  NameUniquer names;
  EXPECT_TRUE(names.TakeExact("x"));
  EXPECT_FALSE(names.TakeExact("x"));
  EXPECT_TRUE(names.TakeExact("x.07"));  // not "x.7": its own name
  EXPECT_TRUE(names.TakeExact("x.7"));
  EXPECT_FALSE(names.TakeExact("x.7"));
  EXPECT_FALSE(names.TakeExact("x.07"));
}

TEST(NameUniquerTest, GeneratedNamesSkipTakenOnesAndMoveTheCounter) {
  NameUniquer names;
  int64_t counter = 5;
  EXPECT_EQ(names.TakeGenerated("add", counter), "add.5");
  EXPECT_EQ(counter, 5);
  EXPECT_EQ(names.TakeGenerated("add", counter), "add.6");  // same counter, next free
  EXPECT_EQ(counter, 6);
  EXPECT_EQ(names.TakeGenerated("sub", counter), "sub.6");  // another family
  ASSERT_TRUE(names.TakeExact("add.7"));
  ASSERT_TRUE(names.TakeExact("add.8"));
  EXPECT_EQ(names.TakeGenerated("add", counter), "add.9");
  EXPECT_EQ(counter, 9);
  EXPECT_FALSE(names.TakeExact("add.5"));  // generated names are taken for exact ones too
  EXPECT_FALSE(names.TakeExact("add.9"));
  EXPECT_TRUE(names.TakeExact("add"));
  EXPECT_EQ(names.TakeGenerated("add.9", counter), "add.9.9");  // a prefix with a suffix
  EXPECT_FALSE(names.TakeExact("add.9.9"));
}

// Random mixes of exact and generated requests, as HloModule makes them (the counter moving
// on between some of them, as instruction ids do), against a set of every name taken.
TEST(NameUniquerTest, HandsOutWhatASetOfEveryNameWould) {
  const std::vector<std::string> prefixes = {"a", "a.1", "b", "a.01", "b.2.3", "", "c.x"};
  std::mt19937 rng(7);
  for (int round = 0; round < 20; ++round) {
    NameUniquer names;
    absl::flat_hash_set<std::string> reference;
    int64_t counter = 1, reference_counter = 1;
    for (int step = 0; step < 200; ++step) {
      const std::string& prefix = prefixes[rng() % prefixes.size()];
      switch (rng() % 4) {
        case 0: {  // an exact name, maybe one a later generated name would have
          const std::string name = rng() % 2 ? prefix : absl::StrCat(prefix, ".", counter + rng() % 4);
          EXPECT_EQ(names.TakeExact(name), reference.insert(name).second) << name;
          break;
        }
        case 1: {
          int64_t n = reference_counter;
          while (reference.contains(absl::StrCat(prefix, ".", n))) ++n;
          reference.insert(absl::StrCat(prefix, ".", n));
          reference_counter = n;
          EXPECT_EQ(names.TakeGenerated(prefix, counter), absl::StrCat(prefix, ".", n));
          EXPECT_EQ(counter, reference_counter);
          break;
        }
        default:  // an instruction took the id
          ++counter;
          ++reference_counter;
      }
    }
  }
}

}  // namespace
}  // namespace jx::hlo::name_uniquer_test

#include "jx/core/buffer.h"

#include <cstring>

#include <gtest/gtest.h>

#include "jx/core/parallel.h"

namespace jx {
namespace {

TEST(BufferTest, LargeBlocksAreReused) {
  const int64_t n = int64_t{8} << 20;
  void* first;
  {
    auto b = Buffer::Allocate(n);
    first = b->data();
    std::memset(b->data(), 1, static_cast<size_t>(n));
  }
  const AllocatorStats before = GetAllocatorStats();
  auto again = Buffer::Allocate(n - 1000);  // same size class
  const AllocatorStats after = GetAllocatorStats();
  EXPECT_EQ(again->data(), first);
  EXPECT_EQ(after.cache_hits, before.cache_hits + 1);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(again->data()) % Buffer::kAlignment, 0u);
}

TEST(BufferTest, ReleaseEmptiesTheCache) {
  { auto b = Buffer::Allocate(int64_t{1} << 20); }
  EXPECT_GT(GetAllocatorStats().bytes_cached, 0);
  ReleaseCachedMemory();
  EXPECT_EQ(GetAllocatorStats().bytes_cached, 0);
}

TEST(BufferTest, SmallAndZeroSizedBlocks) {
  auto z = Buffer::Allocate(0);
  EXPECT_NE(z->data(), nullptr);
  auto s = Buffer::Allocate(3);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(s->data()) % Buffer::kAlignment, 0u);
}

TEST(ParallelTest, CoversTheRangeOnce) {
  std::vector<int> hits(100000, 0);
  ParallelFor(static_cast<int64_t>(hits.size()), 1000, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) ++hits[static_cast<size_t>(i)];
  });
  for (int h : hits) ASSERT_EQ(h, 1);
}

}  // namespace
}  // namespace jx

#include "jx/core/buffer.h"

#include <cstring>

#include <gtest/gtest.h>

#include "jx/core/errors.h"
#include "jx/core/parallel.h"

namespace jx::buffer_test {
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

TEST(MemoryAccountTest, BuffersChargeTheirAccountUntilFreed) {
  auto hbm = std::make_shared<MemoryAccount>("chip HBM", 1000);
  auto a = Buffer::Allocate(600, hbm);
  EXPECT_EQ(a->account(), hbm);
  EXPECT_EQ(hbm->usage().bytes_in_use, 600);
  EXPECT_EQ(hbm->bytes_free(), 400);
  {
    auto b = Buffer::Allocate(300, hbm);
    EXPECT_EQ(hbm->usage().bytes_in_use, 900);
  }
  EXPECT_EQ(hbm->usage().bytes_in_use, 600);
  const MemoryAccount::Usage u = hbm->usage();
  EXPECT_EQ(u.peak_bytes_in_use, 900);
  EXPECT_EQ(u.num_allocs, 2);
  EXPECT_EQ(u.largest_alloc_size, 600);
  a.reset();
  EXPECT_EQ(hbm->usage().bytes_in_use, 0);
  EXPECT_EQ(Buffer::Allocate(10)->account(), nullptr);  // host memory is not accounted
}

TEST(MemoryAccountTest, ExhaustionNamesTheMemoryAndChangesNothing) {
  auto hbm = std::make_shared<MemoryAccount>("TPU_1 HBM", 1000);
  auto a = Buffer::Allocate(700, hbm);
  try {
    Buffer::Allocate(400, hbm);
    FAIL() << "expected ResourceExhaustedError";
  } catch (const ResourceExhaustedError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("TPU_1 HBM"), std::string::npos) << msg;
    EXPECT_NE(msg.find("allocating 400 bytes"), std::string::npos) << msg;
    EXPECT_NE(msg.find("300 bytes (300.00 B) free of 1000 bytes"), std::string::npos) << msg;
  }
  EXPECT_EQ(hbm->usage().bytes_in_use, 700);
  EXPECT_EQ(hbm->usage().num_allocs, 1);
  auto b = Buffer::Allocate(300, hbm);  // exactly what is left still fits
  EXPECT_EQ(hbm->bytes_free(), 0);
}

TEST(MemoryAccountTest, DonationMovesTheCharge) {
  auto hbm = std::make_shared<MemoryAccount>("chip HBM", 1000);
  auto a = Buffer::Allocate(500, hbm);
  std::shared_ptr<Buffer> taken = a->TakeStorage();
  EXPECT_EQ(taken->account(), hbm);
  a.reset();  // the deleted husk refunds nothing
  EXPECT_EQ(hbm->usage().bytes_in_use, 500);
  taken.reset();
  EXPECT_EQ(hbm->usage().bytes_in_use, 0);
}

TEST(MemoryAccountTest, CapacityCheckComparesWithTheWholeMemory) {
  MemoryAccount hbm("chip HBM", 1000);
  hbm.Reserve(900);
  EXPECT_NO_THROW(hbm.CheckCapacity(1000, "compiling f, whose peak is"));
  try {
    hbm.CheckCapacity(1001, "compiling f, whose peak is");
    FAIL() << "expected ResourceExhaustedError";
  } catch (const ResourceExhaustedError& e) {
    EXPECT_NE(std::string(e.what()).find("compiling f, whose peak is 1001 bytes"), std::string::npos) << e.what();
  }
  EXPECT_EQ(hbm.usage().bytes_in_use, 900);
}

TEST(ParallelTest, CoversTheRangeOnce) {
  std::vector<int> hits(100000, 0);
  ParallelFor(static_cast<int64_t>(hits.size()), 1000, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) ++hits[static_cast<size_t>(i)];
  });
  for (int h : hits) ASSERT_EQ(h, 1);
}

}  // namespace
}  // namespace jx::buffer_test

#include "jx/core/buffer.h"

#include <bit>
#include <cstdlib>
#include <map>
#include <mutex>
#include <new>
#include <vector>

#include "jx/core/errors.h"

namespace jx {
namespace {

// Blocks at least this large are cached; smaller ones are cheap from malloc.
constexpr int64_t kCacheMinBytes = 64 << 10;
// Upper bound on memory parked in the cache.
constexpr int64_t kCacheMaxBytes = int64_t{2} << 30;

// Rounds up to one of four size classes per power of two, so a freed block serves requests
// up to 25% smaller without wasting more than that.
int64_t SizeClass(int64_t n) {
  if (n < kCacheMinBytes) return (n + Buffer::kAlignment - 1) & ~(Buffer::kAlignment - 1);
  const int shift = 63 - std::countl_zero(static_cast<uint64_t>(n)) - 2;
  const int64_t quantum = int64_t{1} << shift;
  return (n + quantum - 1) & ~(quantum - 1);
}

class CachingAllocator {
 public:
  void* Allocate(int64_t capacity) {
    if (capacity >= kCacheMinBytes) {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = free_.find(capacity);
      if (it != free_.end() && !it->second.empty()) {
        void* p = it->second.back();
        it->second.pop_back();
        stats_.bytes_cached -= capacity;
        stats_.bytes_in_use += capacity;
        ++stats_.cache_hits;
        return p;
      }
      ++stats_.cache_misses;
      stats_.bytes_in_use += capacity;
    }
    void* p = std::aligned_alloc(Buffer::kAlignment, static_cast<size_t>(capacity ? capacity : Buffer::kAlignment));
    if (p == nullptr) {
      if (capacity >= kCacheMinBytes) {
        ReleaseAll();
        p = std::aligned_alloc(Buffer::kAlignment, static_cast<size_t>(capacity));
      }
      if (p == nullptr) {
        throw ResourceExhaustedError(StrCat("[allocator] out of host memory allocating ", capacity, " bytes"));
      }
    }
    return p;
  }

  void Free(void* p, int64_t capacity) {
    if (capacity >= kCacheMinBytes) {
      std::lock_guard<std::mutex> lock(mu_);
      stats_.bytes_in_use -= capacity;
      if (stats_.bytes_cached + capacity <= kCacheMaxBytes) {
        free_[capacity].push_back(p);
        stats_.bytes_cached += capacity;
        return;
      }
    }
    std::free(p);
  }

  void ReleaseAll() {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [size, blocks] : free_) {
      for (void* p : blocks) std::free(p);
    }
    free_.clear();
    stats_.bytes_cached = 0;
  }

  AllocatorStats stats() {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }

 private:
  std::mutex mu_;
  std::map<int64_t, std::vector<void*>> free_;
  AllocatorStats stats_;
};

CachingAllocator& GlobalAllocator() {
  // Leaked on purpose: buffers may be freed during static destruction.
  static auto* allocator = new CachingAllocator;
  return *allocator;
}

}  // namespace

std::shared_ptr<Buffer> Buffer::Allocate(int64_t nbytes) {
  if (nbytes < 0) throw InternalError("[allocator] negative buffer size");
  const int64_t capacity = SizeClass(nbytes);
  void* p = GlobalAllocator().Allocate(capacity);
  return std::make_shared<Buffer>(PrivateTag{}, p, nbytes, capacity);
}

Buffer::~Buffer() {
  if (!deleted_) GlobalAllocator().Free(data_, capacity_);
}

std::shared_ptr<Buffer> Buffer::TakeStorage() {
  if (deleted_) throw InternalError("[allocator] TakeStorage of a deleted buffer");
  auto taken = std::make_shared<Buffer>(PrivateTag{}, data_, nbytes_, capacity_);
  data_ = nullptr;
  deleted_ = true;
  return taken;
}

AllocatorStats GetAllocatorStats() { return GlobalAllocator().stats(); }
void ReleaseCachedMemory() { GlobalAllocator().ReleaseAll(); }

}  // namespace jx

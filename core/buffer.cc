#include "jx/core/buffer.h"

#include <algorithm>
#include <bit>
#include <cstdio>
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

// "1073741824 bytes (1.00 GiB)": exact for tests and scripts, readable for people.
std::string Bytes(int64_t n) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = static_cast<double>(n);
  int unit = 0;
  while (v >= 1024 && unit < 5) {
    v /= 1024;
    ++unit;
  }
  char human[32];
  std::snprintf(human, sizeof(human), "%.2f %s", v, kUnits[unit]);
  return StrCat(n, " bytes (", human, ")");
}

}  // namespace

MemoryAccount::MemoryAccount(std::string owner, int64_t capacity) : owner_(std::move(owner)), capacity_(capacity) {}

void MemoryAccount::Reserve(int64_t nbytes, std::string_view what) {
  std::lock_guard<std::mutex> lock(mu_);
  const int64_t free = FreeLocked();
  if (nbytes > free) ThrowExhausted(nbytes, free, what);
  usage_.bytes_in_use += nbytes;
  usage_.peak_bytes_in_use = std::max(usage_.peak_bytes_in_use, usage_.bytes_in_use);
  usage_.largest_alloc_size = std::max(usage_.largest_alloc_size, nbytes);
  ++usage_.num_allocs;
}

void MemoryAccount::Release(int64_t nbytes) {
  std::lock_guard<std::mutex> lock(mu_);
  usage_.bytes_in_use -= nbytes;
}

void MemoryAccount::CheckCapacity(int64_t nbytes, std::string_view what) const {
  if (nbytes <= capacity_) return;
  std::lock_guard<std::mutex> lock(mu_);
  ThrowExhausted(nbytes, FreeLocked(), what);
}

void MemoryAccount::ThrowExhausted(int64_t nbytes, int64_t free, std::string_view what) const {
  throw ResourceExhaustedError(StrCat("RESOURCE_EXHAUSTED: ", owner_, ": out of memory ", what, " ", Bytes(nbytes),
                                      "; ", Bytes(free), " free of ", Bytes(capacity_)));
}

MemoryAccount::Usage MemoryAccount::usage() const {
  std::lock_guard<std::mutex> lock(mu_);
  return usage_;
}

int64_t MemoryAccount::bytes_free() const {
  std::lock_guard<std::mutex> lock(mu_);
  return FreeLocked();
}

std::shared_ptr<Buffer> Buffer::Allocate(int64_t nbytes) {
  if (nbytes < 0) throw InternalError("[allocator] negative buffer size");
  const int64_t capacity = SizeClass(nbytes);
  void* p = GlobalAllocator().Allocate(capacity);
  return std::make_shared<Buffer>(PrivateTag{}, p, nbytes, capacity);
}

std::shared_ptr<Buffer> Buffer::Allocate(int64_t nbytes, std::shared_ptr<MemoryAccount> account) {
  if (account == nullptr) return Allocate(nbytes);
  account->Reserve(nbytes);
  std::shared_ptr<Buffer> buffer;
  try {
    buffer = Allocate(nbytes);
  } catch (...) {
    account->Release(nbytes);  // the host is out of memory: the device's count is unchanged
    throw;
  }
  buffer->account_ = std::move(account);
  return buffer;
}

Buffer::~Buffer() {
  if (deleted_) return;
  GlobalAllocator().Free(data_, capacity_);
  if (account_ != nullptr) account_->Release(nbytes_);
}

std::shared_ptr<Buffer> Buffer::TakeStorage() {
  if (deleted_) throw InternalError("[allocator] TakeStorage of a deleted buffer");
  auto taken = std::make_shared<Buffer>(PrivateTag{}, data_, nbytes_, capacity_);
  taken->account_ = std::move(account_);
  data_ = nullptr;
  deleted_ = true;
  return taken;
}

AllocatorStats GetAllocatorStats() { return GlobalAllocator().stats(); }
void ReleaseCachedMemory() { GlobalAllocator().ReleaseAll(); }

}  // namespace jx

// Buffer: a 64-byte-aligned block of host memory, shared by the arrays that view it.
//
// Large blocks come from a caching allocator that keeps freed blocks for reuse: on the VMs
// jx targets a first touch costs ~1.9 us per 4 KiB page, so a fresh 64 MiB buffer costs more
// than most work done on it. Small blocks go to the aligned system allocator.
//
//   auto buf = jx::Buffer::Allocate(1 << 20);   // uninitialized
//   std::memset(buf->data(), 0, buf->nbytes());
#pragma once

#include <cstdint>
#include <memory>

namespace jx {

class Buffer {
 public:
  static constexpr int64_t kAlignment = 64;
  static std::shared_ptr<Buffer> Allocate(int64_t nbytes);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* data() { return data_; }
  const void* data() const { return data_; }
  int64_t nbytes() const { return nbytes_; }

  // Donation: a new Buffer takes over this one's memory, and this one is deleted (its data
  // is null; arrays viewing it throw RuntimeError on use). A compiled program then writes
  // its result into the memory its argument held.
  std::shared_ptr<Buffer> TakeStorage();
  bool is_deleted() const { return deleted_; }

  struct PrivateTag {};
  Buffer(PrivateTag, void* data, int64_t nbytes, int64_t capacity)
      : data_(data), nbytes_(nbytes), capacity_(capacity) {}

 private:
  void* data_;
  int64_t nbytes_;
  int64_t capacity_;  // the size class actually reserved
  bool deleted_ = false;
};

// Statistics of the caching allocator (tests and benchmarks read them).
struct AllocatorStats {
  int64_t cache_hits = 0;
  int64_t cache_misses = 0;
  int64_t bytes_cached = 0;      // free blocks held for reuse
  int64_t bytes_in_use = 0;      // large blocks handed out and not yet freed
};
AllocatorStats GetAllocatorStats();
// Returns every cached free block to the system.
void ReleaseCachedMemory();

}  // namespace jx

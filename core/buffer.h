// Buffer: a 64-byte-aligned block of host memory, shared by the arrays that view it.
//
// Large blocks come from a caching allocator that keeps freed blocks for reuse: on the VMs
// jx targets a first touch costs ~1.9 us per 4 KiB page, so a fresh 64 MiB buffer costs more
// than most work done on it. Small blocks go to the aligned system allocator.
//
// A device with a bounded memory (a simulated TPU chip's HBM) allocates against a
// MemoryAccount: the buffer is charged to the account when made and refunds it when freed,
// so the device's bytes in use are exactly its live buffers. Host buffers carry no account
// and pay nothing for the feature.
//
//   auto buf = jx::Buffer::Allocate(1 << 20);   // uninitialized
//   std::memset(buf->data(), 0, buf->nbytes());
//
//   auto hbm = std::make_shared<jx::MemoryAccount>("TPU_1(process=0,(0,0,0,0)) HBM", 16 << 30);
//   auto on_chip = jx::Buffer::Allocate(1 << 20, hbm);  // hbm->bytes_in_use() == 1 << 20
//   on_chip.reset();                                     // back to 0
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

namespace jx {

// A memory with a capacity and the bytes allocated in it (a simulated chip's HBM). Reserve
// either fits the request or throws ResourceExhaustedError naming the memory, the bytes
// asked and the bytes free, and then nothing has changed. Thread-safe.
class MemoryAccount {
 public:
  // owner names the memory in errors ("TPU_1(process=0,(0,0,0,0)) HBM").
  MemoryAccount(std::string owner, int64_t capacity);
  MemoryAccount(const MemoryAccount&) = delete;
  MemoryAccount& operator=(const MemoryAccount&) = delete;

  const std::string& owner() const { return owner_; }
  int64_t capacity() const { return capacity_; }

  // Counts nbytes as in use (one allocation), or throws ResourceExhaustedError. what says
  // what the bytes are for ("allocating", "reserving jit(f)'s scratch of").
  void Reserve(int64_t nbytes, std::string_view what = "allocating");
  // Returns bytes an earlier Reserve counted.
  void Release(int64_t nbytes);
  // Throws ResourceExhaustedError (as Reserve does) when nbytes exceed the whole capacity,
  // reserving nothing: a compiler's check that a program's peak can ever fit. what says
  // whose bytes they are ("compiling jit(f), whose peak is").
  void CheckCapacity(int64_t nbytes, std::string_view what) const;

  struct Usage {
    int64_t bytes_in_use = 0;
    int64_t peak_bytes_in_use = 0;
    int64_t num_allocs = 0;          // Reserve calls that succeeded
    int64_t largest_alloc_size = 0;
  };
  Usage usage() const;
  int64_t bytes_free() const;

 private:
  [[noreturn]] void ThrowExhausted(int64_t nbytes, int64_t free, std::string_view what) const;
  int64_t FreeLocked() const { return capacity_ - usage_.bytes_in_use; }

  const std::string owner_;
  const int64_t capacity_;
  mutable std::mutex mu_;
  Usage usage_;
};

// Bytes held in a memory for a scope (a program's scratch while it runs on a chip).
class ScopedReservation {
 public:
  ScopedReservation(MemoryAccount& account, int64_t nbytes, std::string_view what) : account_(account), nbytes_(nbytes) {
    if (nbytes_ > 0) account_.Reserve(nbytes_, what);
  }
  ~ScopedReservation() {
    if (nbytes_ > 0) account_.Release(nbytes_);
  }
  ScopedReservation(const ScopedReservation&) = delete;
  ScopedReservation& operator=(const ScopedReservation&) = delete;

 private:
  MemoryAccount& account_;
  int64_t nbytes_;
};

class Buffer {
 public:
  static constexpr int64_t kAlignment = 64;
  static std::shared_ptr<Buffer> Allocate(int64_t nbytes);
  // Memory charged to account (see MemoryAccount::Reserve; on failure nothing is allocated).
  static std::shared_ptr<Buffer> Allocate(int64_t nbytes, std::shared_ptr<MemoryAccount> account);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* data() { return data_; }
  const void* data() const { return data_; }
  int64_t nbytes() const { return nbytes_; }

  // Donation: a new Buffer takes over this one's memory (and its account's charge), and this
  // one is deleted (its data is null; arrays viewing it throw RuntimeError on use). A
  // compiled program then writes its result into the memory its argument held.
  std::shared_ptr<Buffer> TakeStorage();
  bool is_deleted() const { return deleted_; }
  // The account the buffer is charged to; null for host memory.
  const std::shared_ptr<MemoryAccount>& account() const { return account_; }

  struct PrivateTag {};
  Buffer(PrivateTag, void* data, int64_t nbytes, int64_t capacity)
      : data_(data), nbytes_(nbytes), capacity_(capacity) {}

 private:
  void* data_;
  int64_t nbytes_;
  int64_t capacity_;  // the size class actually reserved
  bool deleted_ = false;
  std::shared_ptr<MemoryAccount> account_;  // charged nbytes_ while not deleted
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

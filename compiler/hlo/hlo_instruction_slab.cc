// Where HloInstructions live: a slab of cache-line aligned slots carved in order from
// huge-page-advised chunks. A module's instructions are created in the order the lowering
// and the passes walk them, so consecutive instructions sit in consecutive slots and a walk
// reads memory in sequence (with malloc they were scattered among the operand, name and
// metadata blocks of other sizes, and a walk over a module past the L3 missed on each).
#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <new>

#include "jx/compiler/hlo/hlo_instruction.h"

namespace jx::hlo {
namespace {

// AddressSanitizer must see every instruction's own new and delete to catch a use after
// free (a slab slot reused by the next instruction would hide it), so sanitized builds
// allocate each instruction from the heap.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kUseSlab = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kUseSlab = false;
#else
constexpr bool kUseSlab = true;
#endif
#else
constexpr bool kUseSlab = true;
#endif

constexpr size_t kSlotBytes = sizeof(HloInstruction);
constexpr size_t kChunkBytes = size_t{2} << 20;  // one huge page
static_assert(kSlotBytes % alignof(HloInstruction) == 0);

// Thread-safe: modules are built, compiled and destroyed on any thread. Freed slots are
// reused last-freed first; chunks stay with the process (the slab keeps its peak, as a
// malloc arena keeps its top), and are reused by the next module.
class InstructionSlab {
 public:
  void* Allocate() {
    std::lock_guard<std::mutex> lock(mu_);
    if (free_ != nullptr) {
      FreeSlot* slot = free_;
      free_ = slot->next;
      return slot;
    }
    if (end_ - next_ < static_cast<ptrdiff_t>(kSlotBytes)) NewChunk();
    void* slot = next_;
    next_ += kSlotBytes;
    return slot;
  }

  void Free(void* p) {
    std::lock_guard<std::mutex> lock(mu_);
    free_ = new (p) FreeSlot{free_};
  }

 private:
  struct FreeSlot {
    FreeSlot* next;
  };

  // A chunk aligned to its size, so the kernel can back it with one huge page.
  void NewChunk() {
    void* mapped = mmap(nullptr, 2 * kChunkBytes, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mapped == MAP_FAILED) throw std::bad_alloc();
    const uintptr_t begin = reinterpret_cast<uintptr_t>(mapped);
    const uintptr_t aligned = (begin + kChunkBytes - 1) & ~(kChunkBytes - 1);
    if (aligned > begin) munmap(mapped, aligned - begin);
    if (aligned < begin + kChunkBytes) {
      munmap(reinterpret_cast<void*>(aligned + kChunkBytes), begin + kChunkBytes - aligned);
    }
    madvise(reinterpret_cast<void*>(aligned), kChunkBytes, MADV_HUGEPAGE);
    next_ = reinterpret_cast<char*>(aligned);
    end_ = next_ + kChunkBytes;
  }

  std::mutex mu_;
  FreeSlot* free_ = nullptr;
  char* next_ = nullptr;  // the current chunk's first unused slot
  char* end_ = nullptr;
};

InstructionSlab& Slab() {
  static InstructionSlab* const slab = new InstructionSlab();  // never destroyed
  return *slab;
}

}  // namespace

void* HloInstruction::operator new(std::size_t size, std::align_val_t alignment) {
  if (!kUseSlab || size != kSlotBytes) return ::operator new(size, alignment);
  return Slab().Allocate();
}

void HloInstruction::operator delete(void* p, std::size_t size, std::align_val_t alignment) {
  if (!kUseSlab || size != kSlotBytes) return ::operator delete(p, size, alignment);
  Slab().Free(p);
}

}  // namespace jx::hlo

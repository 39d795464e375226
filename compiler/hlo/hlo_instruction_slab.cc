// Where HloInstructions live: a slab of cache-line aligned slots in huge-page-advised chunks.
// A module's instructions are created in the order the lowering and the passes walk them, so
// a walk reads memory in sequence when creation order is address order (with malloc they
// were scattered among the operand, name and metadata blocks of other sizes, and a walk over
// a module past the L3 missed on each). The slab keeps that order after reuse too: it hands
// out the free slot of lowest address, so a module built where an old one was freed lies in
// creation order again (a last-freed-first list laid it out backwards, or scattered).
#include "jx/compiler/hlo/hlo_instruction_slab.h"

#include <sys/mman.h>

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <new>
#include <vector>

#include "jx/compiler/hlo/hlo_instruction.h"

namespace jx::hlo {
namespace {

constexpr size_t kSlotBytes = sizeof(HloInstruction);
constexpr size_t kChunkBytes = size_t{2} << 20;  // one huge page
static_assert(kSlotBytes % alignof(HloInstruction) == 0);

constexpr size_t RoundUp(size_t n, size_t to) { return (n + to - 1) / to * to; }

// A chunk begins with its header: which of its slots are taken (a bit per slot, so the
// lowest free one is a count of trailing ones away), how many are free, and the lowest word
// that may have a free bit (lowered by each free). The slots follow.
constexpr size_t HeaderBytes(size_t slots) {
  // The three counters, padded to the bitmap's alignment, then the bitmap.
  return RoundUp(4 * sizeof(uint32_t) + (slots + 63) / 64 * sizeof(uint64_t), alignof(HloInstruction));
}
constexpr size_t FittingSlots() {
  size_t slots = kChunkBytes / kSlotBytes;
  while (HeaderBytes(slots) + slots * kSlotBytes > kChunkBytes) --slots;
  return slots;
}
constexpr size_t kSlotsPerChunk = FittingSlots();
constexpr size_t kWordsPerChunk = (kSlotsPerChunk + 63) / 64;
constexpr size_t kFirstSlot = HeaderBytes(kSlotsPerChunk);

struct ChunkHeader {
  uint32_t index;          // this chunk's place in the slab's chunks, by address
  uint32_t free_slots;
  uint32_t lowest_word;    // no free slot in the words below
  uint64_t taken[kWordsPerChunk];  // bits past kSlotsPerChunk are set: never handed out

  char* Slot(size_t i) { return reinterpret_cast<char*>(this) + kFirstSlot + i * kSlotBytes; }
  size_t SlotOf(const void* p) const {
    return (static_cast<const char*>(p) - reinterpret_cast<const char*>(this) - kFirstSlot) / kSlotBytes;
  }
};
static_assert(sizeof(ChunkHeader) <= kFirstSlot);

// Thread-safe: modules are built, compiled and destroyed on any thread. Allocation takes the
// lowest free slot of the lowest chunk that has one; a hint per chunk (its lowest word that
// may have a free bit) and one for the slab (the lowest chunk that may have a free slot),
// lowered by each free, keep the search short: it skips a full word or chunk once until a
// free below it lowers the hint again (a chunk's bitmap is about a hundred words, and a
// 100k-instruction module fills 16 chunks). Chunks stay with the process (the slab
// keeps its peak, as a malloc arena keeps its top) and are reused by the next module.
class InstructionSlab {
 public:
  void* Allocate() {
    std::lock_guard<std::mutex> lock(mu_);
    while (lowest_chunk_ < chunks_.size() && chunks_[lowest_chunk_]->free_slots == 0) ++lowest_chunk_;
    if (lowest_chunk_ == chunks_.size()) lowest_chunk_ = NewChunk();
    ChunkHeader* chunk = chunks_[lowest_chunk_];
    size_t word = chunk->lowest_word;
    while (chunk->taken[word] == ~uint64_t{0}) ++word;  // free_slots > 0: one word has a zero
    chunk->lowest_word = static_cast<uint32_t>(word);
    const int bit = std::countr_one(chunk->taken[word]);
    chunk->taken[word] |= uint64_t{1} << bit;
    --chunk->free_slots;
    return chunk->Slot(word * 64 + bit);
  }

  void Free(void* p) {
    std::lock_guard<std::mutex> lock(mu_);
    ChunkHeader* chunk = reinterpret_cast<ChunkHeader*>(reinterpret_cast<uintptr_t>(p) & ~(kChunkBytes - 1));
    const size_t slot = chunk->SlotOf(p);
    chunk->taken[slot / 64] &= ~(uint64_t{1} << (slot % 64));
    ++chunk->free_slots;
    chunk->lowest_word = std::min(chunk->lowest_word, static_cast<uint32_t>(slot / 64));
    lowest_chunk_ = std::min<size_t>(lowest_chunk_, chunk->index);
  }

 private:
  // Maps a chunk aligned to its size (so the kernel can back it with one huge page and a
  // slot finds its header by masking its address), places it among the chunks by address,
  // and returns its index.
  size_t NewChunk() {
    void* mapped = mmap(nullptr, 2 * kChunkBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mapped == MAP_FAILED) throw std::bad_alloc();
    const uintptr_t begin = reinterpret_cast<uintptr_t>(mapped);
    const uintptr_t aligned = (begin + kChunkBytes - 1) & ~(kChunkBytes - 1);
    if (aligned > begin) munmap(mapped, aligned - begin);
    if (aligned < begin + kChunkBytes) {
      munmap(reinterpret_cast<void*>(aligned + kChunkBytes), begin + kChunkBytes - aligned);
    }
    madvise(reinterpret_cast<void*>(aligned), kChunkBytes, MADV_HUGEPAGE);

    ChunkHeader* chunk = new (reinterpret_cast<void*>(aligned)) ChunkHeader();
    chunk->free_slots = kSlotsPerChunk;
    if (const size_t tail = kSlotsPerChunk % 64; tail != 0) {
      chunk->taken[kWordsPerChunk - 1] = ~uint64_t{0} << tail;
    }
    const auto at = std::upper_bound(chunks_.begin(), chunks_.end(), chunk, std::less<>());
    const size_t index = static_cast<size_t>(at - chunks_.begin());
    chunks_.insert(at, chunk);
    for (size_t i = index; i < chunks_.size(); ++i) chunks_[i]->index = static_cast<uint32_t>(i);
    return index;
  }

  std::mutex mu_;
  std::vector<ChunkHeader*> chunks_;   // by address
  size_t lowest_chunk_ = 0;            // no free slot in the chunks below this one
};

InstructionSlab& Slab() {
  static InstructionSlab* const slab = new InstructionSlab();  // never destroyed
  return *slab;
}

}  // namespace

void* HloInstruction::operator new(std::size_t size, std::align_val_t alignment) {
  if (!kInstructionsFromSlab || size != kSlotBytes) return ::operator new(size, alignment);
  return Slab().Allocate();
}

void HloInstruction::operator delete(void* p, std::size_t size, std::align_val_t alignment) {
  if (!kInstructionsFromSlab || size != kSlotBytes) return ::operator delete(p, size, alignment);
  Slab().Free(p);
}

}  // namespace jx::hlo

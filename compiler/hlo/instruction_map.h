// InstructionMap<T>: a value per instruction of one computation, for walks and passes that
// keep per-instruction state over big programs. A computation's unique ids are nearly
// dense, so values live in a vector indexed by id (one read, no hashing: on a 100k
// instruction module a pointer-keyed hash map is a cache miss per lookup and an allocation
// per insert); ids far outside the computation's range (instructions of other computations)
// go to a hash map. Instructions added to the computation later get the module's next ids
// and extend the vector.
//
//   InstructionMap<HloInstruction*> clone_of(*computation);
//   clone_of[instr] = copy;
//   if (HloInstruction* c = clone_of.Get(operand)) ...   // T{} where never set
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "jx/compiler/hlo/hlo_computation.h"
#include "jx/compiler/hlo/hlo_instruction.h"

namespace jx::hlo {

template <typename T>
class InstructionMap {
 public:
  explicit InstructionMap(const HloComputation& computation) {
    int64_t lo = 0;
    size_t n = 0;
    for (const HloInstruction* instr : computation.instructions()) {
      lo = n == 0 ? instr->unique_id() : std::min(lo, instr->unique_id());
      ++n;
    }
    Init(n == 0 ? -1 : lo, n);
  }
  // For a caller that has found the lowest unique id of its n instructions already.
  InstructionMap(int64_t lowest_id, size_t n) { Init(lowest_id, n); }

  // The value for instr, default-constructed on first access. The common case (an id the
  // table was sized for) is one compare and one index, inlined into the walk's loop.
  T& operator[](const HloInstruction* instr) {
    const uint64_t i = static_cast<uint64_t>(instr->unique_id() - base_);
    if (i < dense_.size()) [[likely]] return dense_[i];
    return OutsideTable(instr);
  }

  // The value for instr, or T{} if it was never set.
  const T& Get(const HloInstruction* instr) const {
    const uint64_t i = static_cast<uint64_t>(instr->unique_id() - base_);
    if (i < dense_.size()) [[likely]] return dense_[i];
    return GetOutsideTable(instr);
  }

 private:
  // An id past the table's size (the vector grows) or outside its range (a hash map).
  [[gnu::noinline]] T& OutsideTable(const HloInstruction* instr) {
    const int64_t i = instr->unique_id() - base_;
    if (i >= 0 && i < limit_) {
      dense_.resize(i + 1);
      return dense_[i];
    }
    return sparse_[instr];
  }

  [[gnu::noinline]] const T& GetOutsideTable(const HloInstruction* instr) const {
    static const T kEmpty{};
    const int64_t i = instr->unique_id() - base_;
    if (i >= 0 && i < limit_) return kEmpty;  // in range, never set: the vector has not grown to it
    auto it = sparse_.find(instr);
    return it == sparse_.end() ? kEmpty : it->second;
  }

  void Init(int64_t lowest_id, size_t n) {
    if (lowest_id < 0) return;  // no instructions (or unnumbered ones): all sparse
    base_ = lowest_id;
    // Room for the computation's ids with gaps left by removed instructions, and for those
    // a pass adds; bounded so a stray far-away id cannot allocate a huge vector.
    limit_ = 4 * static_cast<int64_t>(n) + 1024;
    dense_.resize(n);
  }

  int64_t base_ = 0;
  int64_t limit_ = 0;
  std::vector<T> dense_;
  absl::flat_hash_map<const HloInstruction*, T> sparse_;
};

}  // namespace jx::hlo

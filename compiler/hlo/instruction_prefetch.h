// Prefetching for walks over big computations. A computation of 100k instructions is past the
// last-level cache, and its instructions lie apart in memory: a walk that reads each one in
// turn waits for a cache miss per instruction, which the hardware does not foresee. A walk
// that knows which instruction it reads next can start loading it early.
//
//   ForEachInStorageOrder(c, PrefetchInstruction, [&](const HloInstruction* instr) {
//     ...;
//     return true;  // false stops the walk
//   });
#pragma once

#include <cstddef>

#include "jx/compiler/hlo/hlo_computation.h"
#include "jx/compiler/hlo/hlo_instruction.h"

namespace jx::hlo {

// How many instructions ahead of the one being read a walk starts loading.
inline constexpr int kPrefetchAhead = 16;

// Starts loading all of an instruction's fields.
inline void PrefetchInstruction(const HloInstruction* instr) {
  const char* begin = reinterpret_cast<const char*>(instr);
  for (size_t line = 0; line < sizeof(HloInstruction); line += 64) __builtin_prefetch(begin + line);
}

// Calls fn on each instruction of c in storage order while it returns true; `prefetch` is
// called on the instruction kPrefetchAhead on (their addresses are known from the list).
template <typename Prefetch, typename Fn>
void ForEachInStorageOrder(const HloComputation& c, Prefetch prefetch, Fn fn) {
  const HloComputation::InstructionRange range = c.instructions();
  auto ahead = range.begin();
  for (int i = 0; i < kPrefetchAhead && ahead != range.end(); ++i, ++ahead) prefetch(*ahead);
  for (const HloInstruction* instr : range) {
    if (ahead != range.end()) {
      prefetch(*ahead);
      ++ahead;
    }
    if (!fn(instr)) return;
  }
}

}  // namespace jx::hlo

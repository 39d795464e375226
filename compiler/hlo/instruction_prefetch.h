// Walks over a computation's instructions in storage order, with prefetching. A computation
// of 100k instructions is past the last-level cache: a walk that reads each instruction in
// turn waits for a cache miss per instruction unless the hardware foresees the next one (a
// walk that reads all of each instruction outruns its stream prefetcher). A walk that knows
// which instruction it reads next can start loading it early.
//
//   ForEachInStorageOrder(c, PrefetchInstruction, [&](const HloInstruction* instr) {
//     ...;
//     return true;  // false stops the walk
//   });
#pragma once

#include <cstddef>
#include <cstdint>

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

// Starts loading an instruction's first line: what most walks read (opcode, position, parent,
// id, operands, the users' count and first user). A walk reading a few fields of each
// instruction of a big computation is bound by how many lines it has in flight: one line
// each took 0.65x the time of two in the opcode walks at 100k instructions.
inline void PrefetchInstructionHead(const HloInstruction* instr) { __builtin_prefetch(instr); }

// Starts loading every line of [begin, begin + size).
inline void PrefetchBytes(const void* begin, size_t size) {
  const uintptr_t first = reinterpret_cast<uintptr_t>(begin) & ~uintptr_t{63};
  const uintptr_t end = reinterpret_cast<uintptr_t>(begin) + size;
  for (uintptr_t line = first; line < end; line += 64) __builtin_prefetch(reinterpret_cast<const void*>(line));
}

// Calls fn on each instruction of c in storage order while it returns true; `prefetch` is
// called on the instruction `Ahead` places on (their addresses are known from the list). A
// walk that reads little of each instruction may want a shorter distance (the verifier: 4).
template <int Ahead = kPrefetchAhead, typename Prefetch, typename Fn>
void ForEachInStorageOrder(const HloComputation& c, Prefetch prefetch, Fn fn) {
  const HloComputation::InstructionRange range = c.instructions();
  auto ahead = range.begin();
  for (int i = 0; i < Ahead && ahead != range.end(); ++i, ++ahead) prefetch(*ahead);
  for (HloInstruction* instr : range) {  // mutable, as instructions() hands them out
    if (ahead != range.end()) {
      prefetch(*ahead);
      ++ahead;
    }
    if (!fn(instr)) return;
  }
}

// Whether some instruction of the computation satisfies `pred`, read in storage order. A pass
// that finds nothing to do in most computations asks it (with a test that reads as little of
// each instruction as it can: opcodes) before building the post order it rewrites in: on a
// big computation the post order is a walk and a copy of its own. It prefetches the head of
// each instruction: storage order need not be address order (the slab reuses freed slots),
// and a walk the hardware cannot foresee waits on a miss per instruction.
//   if (!AnyInstruction(*c, [](const HloInstruction& i) { return i.opcode() == HloOpcode::kReduce; })) continue;
template <typename Pred>
bool AnyInstruction(const HloComputation& computation, Pred pred) {
  bool found = false;
  ForEachInStorageOrder(computation, PrefetchInstructionHead, [&](const HloInstruction* instr) {
    found = pred(*instr);
    return !found;
  });
  return found;
}

}  // namespace jx::hlo

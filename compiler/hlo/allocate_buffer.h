// XLA's AllocateBuffer custom-call: a buffer of its (array) shape whose contents are
// unspecified, with no operands and no fill. Passes emit it for a value no element of which is
// read before being written (WhileLoopUnreadInitElimination: the init of a stack a loop fills
// row by row); the CPU backend allocates the buffer and runs nothing; the reference evaluator
// gives zeros.
//
//   %ys = f32[1000,256]{1,0} custom-call(), custom_call_target="AllocateBuffer"
#pragma once

#include <string_view>

#include "jx/compiler/hlo/hlo_instruction.h"

namespace jx::hlo {

inline constexpr std::string_view kAllocateBufferTarget = "AllocateBuffer";

inline bool IsAllocateBuffer(const HloInstruction& instr) {
  return instr.opcode() == HloOpcode::kCustomCall && instr.custom_call_target() == kAllocateBufferTarget;
}

}  // namespace jx::hlo

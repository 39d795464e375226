// WhileLoopUnreadInitElimination: a loop state element whose initial value no trip reads
// starts uninitialized. The element is a stack the loop fills row by row: the condition does
// not read it, the body reads it only as the operand of one dynamic-update-slice writing a
// whole row at an index that takes each row once over the trips (the trip index, or its
// reverse), and that update is the element's next value. After the loop every row holds what
// some trip wrote, so the init (the zero-filled ys stack of a scan, of its residuals, of a
// transposed scan's per-step cotangents) is never observed: it becomes an AllocateBuffer
// custom-call (compiler/hlo/allocate_buffer.h), and the fill goes unless something else reads
// it. On the CPU backend the loop then writes its stack in place from the first trip, with no
// zero fill and no copy of the init into the state.
//
//   %zeros = f32[5,4] broadcast(%c0)          %ys = f32[5,4] custom-call(), custom_call_target="AllocateBuffer"
//   %w = while(tuple(%i0, %h0, %zeros))  ->   %w = while(tuple(%i0, %h0, %ys))
//
// Loops whose state is not built by a tuple the loop alone reads, or without a unit-step trip
// counter against a constant bound, are left alone.
//
//   WhileLoopUnreadInitElimination pass;
//   HLO_ASSIGN_OR_RETURN(bool changed, pass.Run(module));
#pragma once

#include <string_view>

#include "jx/compiler/hlo/hlo_pass.h"

namespace jx::hlo {

class WhileLoopUnreadInitElimination : public HloPass {
 public:
  std::string_view name() const override { return "while-loop-unread-init-elimination"; }
  absl::StatusOr<bool> Run(HloModule* module) override;
};

}  // namespace jx::hlo

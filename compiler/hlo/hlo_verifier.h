// VerifyHloModule: checks a module's structural and shape invariants, as passes rely on:
// operand counts match each opcode's arity; every shape equals (ignoring layout) what
// shape inference computes, which also checks called computations' signatures (a reducer
// takes two scalars, a while condition returns pred[], fusion parameters match operands);
// operand/user edges agree and stay inside one computation; parameters are numbered
// 0..n-1; every computation has a root; names are unique; fusion computations and their
// fusion instructions point at each other. Errors name the computation and instruction:
//   "computation %main, instruction %add.3: add(f32[8], f32[4]): operand dimensions differ..."
#pragma once

#include "absl/status/status.h"
#include "jx/compiler/hlo/hlo_module.h"

namespace jx::hlo {

absl::Status VerifyHloModule(const HloModule& module);

}  // namespace jx::hlo

// HloOpcode: the enum generated from opcode.def, with XLA's text names and arities.
//
//   HloOpcodeString(HloOpcode::kAdd);       // "add"
//   StringToHloOpcode("dynamic-slice");     // HloOpcode::kDynamicSlice
//   HloOpcodeArity(HloOpcode::kSelect);     // 3 (-1 for variadic)
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "absl/status/statusor.h"

namespace jx::hlo {

enum class HloOpcode : uint8_t {
#define HLO_OPCODE(enum_name, text_name, arity) enum_name,
#include "jx/compiler/hlo/opcode.def"
};

inline constexpr int kHloOpcodeCount = 0
#define HLO_OPCODE(enum_name, text_name, arity) +1
#include "jx/compiler/hlo/opcode.def"
    ;

inline constexpr int kVariadic = -1;

std::string_view HloOpcodeString(HloOpcode opcode);
// Operand count, or kVariadic.
int HloOpcodeArity(HloOpcode opcode);
absl::StatusOr<HloOpcode> StringToHloOpcode(std::string_view name);

// Ops applied independently to each element (the loop-fusible ones).
bool IsElementwiseOpcode(HloOpcode opcode);

}  // namespace jx::hlo

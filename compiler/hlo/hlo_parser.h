// Parses the HLO text form (hlo_printer.h) back into a module. Operands may be written with
// their shapes ("f32[8]{0} %x", checked against the definition) or without ("%x"); the '%'
// sigil is optional. A computation must be defined before it is called; without an ENTRY
// marker the last computation is the entry; without ROOT the last instruction is the root.
// Errors name the line and column and quote the line:
//   "line 3, column 26: unknown operand %y
//      %add = f32[8]{0} add(%x, %y)
//                               ^"
// Parsing checks syntax and references only; run VerifyHloModule for shapes.
//
//   HLO_ASSIGN_OR_RETURN(std::unique_ptr<HloModule> module, ParseHloModule(text));
#pragma once

#include <memory>
#include <string_view>

#include "absl/status/statusor.h"
#include "jx/compiler/hlo/hlo_module.h"

namespace jx::hlo {

absl::StatusOr<std::unique_ptr<HloModule>> ParseHloModule(std::string_view text);

}  // namespace jx::hlo

// The attribute table: for each HloAttr its text key and how its value prints and parses.
// The printer walks the keys present on an instruction in HloAttr order; the parser looks
// keys up by name. Adding an attribute = one enum entry + one table row.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "jx/compiler/hlo/hlo_instruction.h"

namespace jx::hlo {

// Resolves "%name" (or "name") to an already-parsed computation.
using ComputationResolver = absl::FunctionRef<absl::StatusOr<HloComputation*>(std::string_view)>;

struct HloAttrInfo {
  std::string_view key;
  std::string (*print)(const HloInstruction& instr);
  absl::Status (*parse)(std::string_view value, HloInstruction* instr,
                        ComputationResolver resolve);
};

const HloAttrInfo& GetHloAttrInfo(HloAttr attr);
std::optional<HloAttr> FindHloAttr(std::string_view key);

}  // namespace jx::hlo

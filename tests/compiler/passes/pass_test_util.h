// Test helpers for HLO passes: parse HLO text, run a pass, check the result verifies and
// that a second run finds nothing to do, and read the result back as short-form lines.
//
//   auto module = ParseAndRun<HloCSE>(text, /*expect_changed=*/true);
//   EXPECT_THAT(EntryLines(*module), ElementsAre("%p = f32[8]{0} parameter(0)", ...));
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "jx/compiler/hlo/hlo_module.h"
#include "jx/compiler/hlo/hlo_parser.h"
#include "jx/compiler/hlo/hlo_verifier.h"

namespace jx::hlo::testing {

// The instruction lines of one computation in the short print form, without indentation.
inline std::vector<std::string> ComputationLines(const HloComputation& computation) {
  std::vector<std::string> lines;
  std::istringstream in(computation.ToString(HloPrintOptions::ShortParsable()));
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("  ", 0) == 0) lines.push_back(line.substr(2));
  }
  return lines;
}

inline std::vector<std::string> EntryLines(const HloModule& module) {
  return ComputationLines(*module.entry_computation());
}

// The opcodes of a computation's instructions in post order ("parameter", "add", ...).
inline std::vector<std::string> Opcodes(const HloComputation& computation) {
  std::vector<std::string> out;
  for (const HloInstruction* instr : computation.MakeInstructionPostOrder()) {
    out.emplace_back(HloOpcodeString(instr->opcode()));
  }
  return out;
}

// Parses text, runs Pass on it, checks Run's result, that the module verifies and that a
// second Run returns false (the pass leaves nothing to do). Returns the module.
template <typename Pass>
std::unique_ptr<HloModule> ParseAndRun(std::string_view text, bool expect_changed,
                                       Pass pass = Pass()) {
  absl::StatusOr<std::unique_ptr<HloModule>> parsed = ParseHloModule(text);
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  if (!parsed.ok()) return nullptr;
  std::unique_ptr<HloModule> module = *std::move(parsed);
  EXPECT_TRUE(VerifyHloModule(*module).ok()) << "input does not verify: "
                                             << VerifyHloModule(*module);
  absl::StatusOr<bool> changed = pass.Run(module.get());
  EXPECT_TRUE(changed.ok()) << changed.status();
  EXPECT_EQ(changed.value_or(!expect_changed), expect_changed) << module->ToString();
  absl::Status verified = VerifyHloModule(*module);
  EXPECT_TRUE(verified.ok()) << verified << "\n" << module->ToString();
  absl::StatusOr<bool> again = pass.Run(module.get());
  EXPECT_TRUE(again.ok()) << again.status();
  EXPECT_FALSE(again.value_or(true)) << "second run changed the module:\n" << module->ToString();
  return module;
}

}  // namespace jx::hlo::testing

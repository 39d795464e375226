// Test helpers for HLO passes: parse HLO text, run a pass, check the result verifies and
// that a second run finds nothing to do, and read the result back as short-form lines.
//
//   auto module = ParseAndRun<HloCSE>(text, /*expect_changed=*/true);
//   EXPECT_THAT(EntryLines(*module), ElementsAre("%p = f32[8]{0} parameter(0)", ...));
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "jx/compiler/hlo/hlo_evaluator.h"
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

// The all-reduces of the entry computation.
inline int64_t CountAllReduces(const HloModule& module) {
  int64_t n = 0;
  for (const HloInstruction* instr : module.entry_computation()->instructions()) {
    n += instr->opcode() == HloOpcode::kAllReduce;
  }
  return n;
}

// Deterministic arguments for the entry computation: floats in [-2, 2), signed integers in
// [-5, 5], unsigned in [0, 10], preds alternating. Empty if a parameter is not an array.
inline std::vector<Literal> MakeArguments(const HloModule& module) {
  std::vector<Literal> args;
  uint64_t state = 12345;
  for (const HloInstruction* p : module.entry_computation()->parameter_instructions()) {
    const Shape& shape = p->shape();
    if (!shape.IsArray()) return {};
    Literal lit(shape);
    for (int64_t i = 0; i < lit.element_count(); ++i) {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      const double u = static_cast<double>(state >> 11) / 9007199254740992.0;  // [0, 1)
      const PrimitiveType t = shape.element_type();
      if (t == PRED) {
        lit.SetFromInt64(i, i % 2);
      } else if (IsFloatingPointType(t)) {
        lit.SetFromDouble(i, 4 * u - 2);
      } else if (IsSignedIntegralType(t)) {
        lit.SetFromInt64(i, static_cast<int64_t>(u * 11) - 5);
      } else {
        lit.SetFromInt64(i, static_cast<int64_t>(u * 11));
      }
    }
    args.push_back(std::move(lit));
  }
  return args;
}

// When the reference evaluator can run `before` (no opaque custom-calls), checks that
// `after` computes bit-identical results on the same arguments: the passes under test
// only make exact rewrites.
inline void ExpectSameValues(const HloModule& before, const HloModule& after) {
  std::vector<Literal> args = MakeArguments(before);
  if (args.size() != static_cast<size_t>(before.entry_computation()->num_parameters())) return;
  std::vector<const Literal*> arg_ptrs;
  for (const Literal& a : args) arg_ptrs.push_back(&a);
  HloEvaluator evaluator;
  absl::StatusOr<Literal> expected = evaluator.Evaluate(before, arg_ptrs);
  if (!expected.ok()) return;  // e.g. a custom-call the evaluator does not know
  HloEvaluator evaluator2;
  absl::StatusOr<Literal> actual = evaluator2.Evaluate(after, arg_ptrs);
  ASSERT_TRUE(actual.ok()) << actual.status() << "\n" << after.ToString();
  EXPECT_TRUE(*actual == *expected) << "values changed: " << expected->ToString() << " vs "
                                    << actual->ToString() << "\n" << after.ToString();
}

// Parses text, runs Pass on it, checks Run's result, that the module verifies, that it
// computes the same values as before (ExpectSameValues) and that a second Run returns false
// (the pass leaves nothing to do). Returns the module.
template <typename Pass>
std::unique_ptr<HloModule> ParseAndRun(std::string_view text, bool expect_changed,
                                       Pass pass = Pass()) {
  absl::StatusOr<std::unique_ptr<HloModule>> parsed = ParseHloModule(text);
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  if (!parsed.ok()) return nullptr;
  std::unique_ptr<HloModule> module = *std::move(parsed);
  std::unique_ptr<HloModule> original = ParseHloModule(text).value();
  EXPECT_TRUE(VerifyHloModule(*module).ok()) << "input does not verify: "
                                             << VerifyHloModule(*module);
  absl::StatusOr<bool> changed = pass.Run(module.get());
  EXPECT_TRUE(changed.ok()) << changed.status();
  EXPECT_EQ(changed.value_or(!expect_changed), expect_changed) << module->ToString();
  absl::Status verified = VerifyHloModule(*module);
  EXPECT_TRUE(verified.ok()) << verified << "\n" << module->ToString();
  if (verified.ok()) ExpectSameValues(*original, *module);
  absl::StatusOr<bool> again = pass.Run(module.get());
  EXPECT_TRUE(again.ok()) << again.status();
  EXPECT_FALSE(again.value_or(true)) << "second run changed the module:\n" << module->ToString();
  return module;
}

}  // namespace jx::hlo::testing

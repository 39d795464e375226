#include "jx/compiler/passes/dce.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "jx/compiler/hlo/hlo_parser.h"
#include "jx/compiler/hlo/hlo_verifier.h"

namespace jx::hlo::dce_test {
namespace {

// Runs DCE on `text` and returns the printed instruction lines (short form).
std::vector<std::string> RunDce(std::string_view text, bool* changed = nullptr) {
  auto module = ParseHloModule(text).value();
  HloDCE dce;
  absl::StatusOr<bool> result = dce.Run(module.get());
  EXPECT_TRUE(result.ok()) << result.status();
  if (changed != nullptr) *changed = result.value_or(false);
  EXPECT_TRUE(VerifyHloModule(*module).ok()) << VerifyHloModule(*module);
  // Idempotent: nothing left to do.
  EXPECT_FALSE(dce.Run(module.get()).value());
  std::vector<std::string> lines;
  std::istringstream in(module->ToString(HloPrintOptions::ShortParsable()));
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("  ", 0) == 0) lines.push_back(line.substr(2));
  }
  return lines;
}

TEST(DceTest, RemovesDeadChains) {
  bool changed = false;
  EXPECT_EQ(RunDce(R"(HloModule m
ENTRY %main {
  %p = f32[8]{0} parameter(0)
  %dead1 = f32[8]{0} exponential(%p)
  %dead2 = f32[8]{0} negate(%dead1)
  %dead3 = f32[8]{0} add(%dead2, %dead1)
  ROOT %s = f32[8]{0} sine(%p)
})",
                   &changed),
            (std::vector<std::string>{"%p = f32[8]{0} parameter(0)",
                                      "ROOT %s = f32[8]{0} sine(%p)"}));
  EXPECT_TRUE(changed);
}

TEST(DceTest, KeepsParametersRootAndSideEffects) {
  EXPECT_EQ(RunDce(R"(HloModule m
ENTRY %main {
  %p = f32[8]{0} parameter(0)
  %q = f32[8]{0} parameter(1)
  %log = f32[8]{0} custom-call(%p), custom_call_target="print", custom_call_has_side_effect=true
  %pure = f32[8]{0} custom-call(%p), custom_call_target="pure"
  ROOT %s = f32[8]{0} sine(%p)
})"),
            (std::vector<std::string>{
                "%q = f32[8]{0} parameter(1)", "%p = f32[8]{0} parameter(0)",
                "%log = f32[8]{0} custom-call(%p), custom_call_target=\"print\", "
                "custom_call_has_side_effect=true",
                "ROOT %s = f32[8]{0} sine(%p)"}));
}

TEST(DceTest, RemovesUnreachableComputationsAndDeadCode) {
  auto module = ParseHloModule(R"(HloModule m
%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %sum = f32[] add(%x, %y)
}
%mul (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  %dead = f32[] negate(%a)
  ROOT %prod = f32[] multiply(%a, %b)
}
%unused_caller (c: f32[8]) -> f32[] {
  %c = f32[8]{0} parameter(0)
  %z = f32[] constant(0)
  ROOT %r = f32[] reduce(%c, %z), dimensions={0}, to_apply=%add
}
ENTRY %main {
  %p = f32[8]{0} parameter(0)
  %z0 = f32[] constant(1)
  %dead_reduce = f32[] reduce(%p, %z0), dimensions={0}, to_apply=%add
  ROOT %out = f32[] reduce(%p, %z0), dimensions={0}, to_apply=%mul
})")
                    .value();
  HloDCE dce;
  EXPECT_TRUE(dce.Run(module.get()).value());
  ASSERT_TRUE(VerifyHloModule(*module).ok()) << VerifyHloModule(*module);
  // %add was used only by dead code and by an unreachable computation: both go.
  EXPECT_EQ(module->computation_count(), 2);
  EXPECT_EQ(module->GetComputationWithName("add"), nullptr);
  EXPECT_EQ(module->GetComputationWithName("unused_caller"), nullptr);
  HloComputation* mul = module->GetComputationWithName("mul");
  ASSERT_NE(mul, nullptr);
  EXPECT_EQ(mul->GetInstructionWithName("dead"), nullptr);  // dead code in callees too
  EXPECT_EQ(module->entry_computation()->instruction_count(), 3);
  EXPECT_FALSE(dce.Run(module.get()).value());
}

// Instructions left unread once their readers go are removed in turn: an operand read
// twice, and a caller whose computation then goes with it.
TEST(DceTest, RemovesOperandsAndCallersTheirDeadReadersLeaveUnread) {
  auto module = ParseHloModule(R"(HloModule m
%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %sum = f32[] add(%x, %y)
}
ENTRY %main {
  %p = f32[8]{0} parameter(0)
  %z = f32[] constant(0)
  %r = f32[] reduce(%p, %z), dimensions={0}, to_apply=%add
  %e = f32[] exponential(%r)
  %sq = f32[] multiply(%e, %e)
  %dead = f32[] negate(%sq)
  ROOT %s = f32[8]{0} sine(%p)
})")
                    .value();
  HloDCE dce;
  EXPECT_TRUE(dce.Run(module.get()).value());
  ASSERT_TRUE(VerifyHloModule(*module).ok()) << VerifyHloModule(*module);
  EXPECT_EQ(module->computation_count(), 1);
  EXPECT_EQ(module->entry_computation()->instruction_count(), 2);
  EXPECT_FALSE(dce.Run(module.get()).value());
}

TEST(DceTest, NothingToDoReturnsFalse) {
  bool changed = true;
  RunDce(R"(HloModule m
ENTRY %main {
  %p = f32[8]{0} parameter(0)
  ROOT %s = f32[8]{0} sine(%p)
})",
         &changed);
  EXPECT_FALSE(changed);
}

TEST(DceTest, DeepChainDoesNotOverflowTheStack) {
  std::string text = "HloModule m\nENTRY %main {\n  %v0 = f32[] parameter(0)\n";
  const int n = 100000;
  for (int i = 1; i <= n; ++i) {
    text += "  %v" + std::to_string(i) + " = f32[] negate(%v" + std::to_string(i - 1) + ")\n";
  }
  text += "  ROOT %r = f32[] sine(%v0)\n}\n";
  auto module = ParseHloModule(text).value();
  HloDCE dce;
  EXPECT_TRUE(dce.Run(module.get()).value());
  EXPECT_EQ(module->entry_computation()->instruction_count(), 2);
}

}  // namespace
}  // namespace jx::hlo::dce_test

#include "jx/compiler/passes/constant_folding.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "jx/compiler/hlo/hlo_parser.h"
#include "jx/compiler/hlo/hlo_verifier.h"

namespace jx::hlo::constant_folding_test {
namespace {

// Runs constant folding on `text`; returns the entry's instruction lines (short form).
std::vector<std::string> Fold(std::string_view text, bool* changed = nullptr) {
  auto module = ParseHloModule(text).value();
  HloConstantFolding folding;
  absl::StatusOr<bool> result = folding.Run(module.get());
  EXPECT_TRUE(result.ok()) << result.status();
  if (changed != nullptr) *changed = result.value_or(false);
  EXPECT_TRUE(VerifyHloModule(*module).ok()) << VerifyHloModule(*module);
  // Idempotent: nothing left to fold.
  EXPECT_FALSE(folding.Run(module.get()).value());
  std::vector<std::string> lines;
  std::istringstream in(module->entry_computation()->ToString(HloPrintOptions::ShortParsable()));
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("  ", 0) == 0) lines.push_back(line.substr(2));
  }
  return lines;
}

TEST(ConstantFoldingTest, FoldsChainsOfConstants) {
  bool changed = false;
  EXPECT_EQ(Fold(R"(HloModule m
ENTRY %main (p: f32[2]) -> f32[2] {
  %p = f32[2]{0} parameter(0)
  %a = f32[2]{0} constant({1, 2})
  %b = f32[2]{0} constant({3, 4})
  %sum = f32[2]{0} add(%a, %b)
  %neg = f32[2]{0} negate(%sum)
  ROOT %out = f32[2]{0} multiply(%p, %neg)
})",
                 &changed),
            (std::vector<std::string>{"%p = f32[2]{0} parameter(0)",
                                      "%constant.8 = f32[2]{0} constant({-4, -6})",
                                      "ROOT %out = f32[2]{0} multiply(%p, %constant.8)"}));
  EXPECT_TRUE(changed);
}

TEST(ConstantFoldingTest, FoldsReduceThroughItsComputation) {
  EXPECT_EQ(Fold(R"(HloModule m
%add (x: s32[], y: s32[]) -> s32[] {
  %x = s32[] parameter(0)
  %y = s32[] parameter(1)
  ROOT %s = s32[] add(%x, %y)
}
ENTRY %main () -> s32[] {
  %c = s32[3]{0} constant({1, 2, 3})
  %z = s32[] constant(0)
  ROOT %r = s32[] reduce(%c, %z), dimensions={0}, to_apply=%add
})"),
            (std::vector<std::string>{"ROOT %constant = s32[] constant(6)"}));
}

TEST(ConstantFoldingTest, LeavesBroadcastIotaTuplesParametersAlone) {
  bool changed = true;
  const std::vector<std::string> lines = Fold(R"(HloModule m
ENTRY %main (p: f32[4]) -> (f32[4], s32[4], f32[4]) {
  %p = f32[4]{0} parameter(0)
  %c = f32[] constant(2)
  %b = f32[4]{0} broadcast(%c), dimensions={}
  %i = s32[4]{0} iota(), iota_dimension=0
  %m = f32[4]{0} multiply(%p, %b)
  ROOT %t = (f32[4]{0}, s32[4]{0}, f32[4]{0}) tuple(%b, %i, %m)
})",
                                              &changed);
  EXPECT_FALSE(changed);
  EXPECT_EQ(lines.size(), 6u);
}

TEST(ConstantFoldingTest, SkipsSideEffectsRngLoopsAndHugeResults) {
  bool changed = true;
  Fold(R"(HloModule m
%cond (s: s32[]) -> pred[] {
  %s = s32[] parameter(0)
  %n = s32[] constant(3)
  ROOT %lt = pred[] compare(%s, %n), direction=LT
}
%body (b: s32[]) -> s32[] {
  %b = s32[] parameter(0)
  %one = s32[] constant(1)
  ROOT %next = s32[] add(%b, %one)
}
ENTRY %main () -> (s32[], f32[2], (u64[2], u32[2]), f32[2000000]) {
  %zero = s32[] constant(0)
  %loop = s32[] while(%zero), condition=%cond, body=%body
  %x = f32[2]{0} constant({1, 2})
  %cc = f32[2]{0} custom-call(%x), custom_call_target="print", custom_call_has_side_effect=true
  %state = u64[2]{0} constant({1, 2})
  %rng = (u64[2]{0}, u32[2]{0}) rng-bit-generator(%state), algorithm=rng_three_fry
  %small = f32[1]{0} constant({1})
  %pad0 = f32[] constant(0)
  %big = f32[2000000]{0} pad(%small, %pad0), padding=0_1999999
  ROOT %t = (s32[], f32[2]{0}, (u64[2]{0}, u32[2]{0}), f32[2000000]{0}) tuple(%loop, %cc, %rng, %big)
})",
       &changed);
  EXPECT_FALSE(changed);
}

TEST(ConstantFoldingTest, FoldsDataMovement) {
  EXPECT_EQ(Fold(R"(HloModule m
ENTRY %main () -> s32[2,2] {
  %c = s32[4]{0} constant({1, 2, 3, 4})
  %r = s32[2,2]{1,0} reshape(%c)
  ROOT %t = s32[2,2]{1,0} transpose(%r), dimensions={1,0}
})"),
            (std::vector<std::string>{"ROOT %constant.5 = s32[2,2]{1,0} constant({{1, 3}, {2, 4}})"}));
}

}  // namespace
}  // namespace jx::hlo::constant_folding_test

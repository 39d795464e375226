// FingerprintHloModule: equal for modules that print the same (a clone, a second parse, a
// second build), different for each kind of change the text would show.
#include "jx/compiler/hlo/hlo_fingerprint.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "jx/compiler/hlo/hlo_builder.h"
#include "jx/compiler/hlo/hlo_module.h"
#include "jx/compiler/hlo/hlo_parser.h"
#include "everything_hlo.h"

namespace jx::hlo::fingerprint_test {
namespace {

constexpr char kModule[] = R"(HloModule m

%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %m = f32[] maximum(f32[] %a, f32[] %b)
}

ENTRY %main (x: f32[4], y: f32[4]) -> f32[] {
  %x = f32[4]{0} parameter(0)
  %y = f32[4]{0} parameter(1)
  %c = f32[4]{0} constant({1, 2, 3, 4})
  %d = f32[4]{0} subtract(f32[4]{0} %x, f32[4]{0} %y)
  %e = f32[4]{0} multiply(f32[4]{0} %d, f32[4]{0} %c), metadata={op_name="jit(f)/mul"}
  %p = pred[4]{0} compare(f32[4]{0} %e, f32[4]{0} %x), direction=GT
  %s = f32[4]{0} select(pred[4]{0} %p, f32[4]{0} %e, f32[4]{0} %x)
  %z = f32[] constant(0)
  ROOT %r = f32[] reduce(f32[4]{0} %s, f32[] %z), dimensions={0}, to_apply=%max
}
)";

HloFingerprint FingerprintOf(const std::string& text) {
  absl::StatusOr<std::unique_ptr<HloModule>> module = ParseHloModule(text);
  EXPECT_TRUE(module.ok()) << module.status() << "\n" << text;
  return module.ok() ? FingerprintHloModule(**module) : HloFingerprint{};
}

std::string Replace(std::string text, std::string_view from, std::string_view to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

TEST(FingerprintTest, EqualForModulesThatPrintTheSame) {
  std::unique_ptr<HloModule> module = ParseHloModule(kModule).value();
  const HloFingerprint fp = FingerprintHloModule(*module);
  EXPECT_EQ(FingerprintOf(kModule), fp);
  EXPECT_EQ(FingerprintHloModule(*module->Clone().value()), fp);
  EXPECT_EQ(FingerprintOf(module->ToString()), fp);  // the printed form, parsed back
  std::unique_ptr<HloModule> everything = ParseHloModule(testing::kEverythingHlo).value();
  EXPECT_EQ(FingerprintHloModule(*everything->Clone().value()), FingerprintHloModule(*everything));
  EXPECT_NE(FingerprintHloModule(*everything), fp);
  EXPECT_EQ(fp.ToString().size(), 32u);
}

TEST(FingerprintTest, EqualForTwoBuildsOfOneProgram) {
  auto build = [] {
    auto module = std::make_unique<HloModule>("built");
    HloBuilder b(module.get(), "main");
    HloInstruction* x = b.Parameter(0, ShapeUtil::MakeShape(F32, {8}), "x").value();
    HloInstruction* y = b.Multiply(b.Sin(x).value(), x).value();
    module->set_entry_computation(b.Build(y).value());
    return module;
  };
  EXPECT_EQ(FingerprintHloModule(*build()), FingerprintHloModule(*build()));
}

// The instructions are fingerprinted as a set (no post order is computed): lines that only
// come in another order are one graph and get one fingerprint.
TEST(FingerprintTest, TheOrderOfLinesLeavesItAlone) {
  const HloFingerprint base = FingerprintOf(kModule);
  std::string moved = Replace(kModule, "  %z = f32[] constant(0)\n", "");
  moved = Replace(moved, "  %x = f32[4]{0} parameter(0)\n",
                  "  %z = f32[] constant(0)\n  %x = f32[4]{0} parameter(0)\n");
  EXPECT_EQ(FingerprintOf(moved), base);
}

TEST(FingerprintTest, EachChangeTheTextShowsChangesIt) {
  const HloFingerprint base = FingerprintOf(kModule);
  const std::vector<std::pair<std::string, std::string>> edits = {
      {"constant({1, 2, 3, 4})", "constant({1, 2, 3, 5})"},                     // a constant
      {"%z = f32[] constant(0)", "%z = f32[] constant(-0)"},                    // a constant's sign bit
      {"subtract(f32[4]{0} %x, f32[4]{0} %y)", "subtract(f32[4]{0} %y, f32[4]{0} %x)"},  // operand order
      {"direction=GT", "direction=GE"},                                         // an attribute
      {"metadata={op_name=\"jit(f)/mul\"}", "metadata={op_name=\"jit(g)/mul\"}"},  // metadata
      {"%d = f32[4]{0} subtract", "%d = f32[4]{0} add"},                         // an opcode
      {"ROOT %r = f32[]", "ROOT %r2 = f32[]"},                                  // a name
      {"HloModule m", "HloModule m2"},                                          // the module's name
      {"ROOT %m = f32[] maximum", "ROOT %m = f32[] minimum"},                   // a called computation
  };
  for (const auto& [from, to] : edits) {
    EXPECT_NE(FingerprintOf(Replace(kModule, from, to)), base) << from << " -> " << to;
  }
}

// Collectives' device lists are fingerprinted as data (not printed): a different grouping of
// the same ids, a different pair, or a swapped pair each change it.
TEST(FingerprintTest, CollectiveDeviceListsChangeIt) {
  const std::string text = R"(HloModule c
%sum (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}
ENTRY %main (x: f32[4]) -> (f32[4], f32[4]) {
  %x = f32[4]{0} parameter(0)
  %ar = f32[4]{0} all-reduce(f32[4]{0} %x), replica_groups={{0,1},{2,3}}, to_apply=%sum
  %cp = f32[4]{0} collective-permute(f32[4]{0} %x), source_target_pairs={{0,1},{1,2},{2,0}}
  ROOT %t = (f32[4]{0}, f32[4]{0}) tuple(f32[4]{0} %ar, f32[4]{0} %cp)
}
)";
  const HloFingerprint base = FingerprintOf(text);
  EXPECT_EQ(FingerprintOf(text), base);
  EXPECT_EQ(FingerprintOf(ParseHloModule(text).value()->ToString()), base);
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"replica_groups={{0,1},{2,3}}", "replica_groups={{0,1,2},{3}}"},
           {"replica_groups={{0,1},{2,3}}", "replica_groups={{0,2},{1,3}}"},
           {"replica_groups={{0,1},{2,3}}", "replica_groups={{0,1,2,3}}"},
           {"source_target_pairs={{0,1},{1,2},{2,0}}", "source_target_pairs={{0,1},{1,2},{2,1}}"},
           {"source_target_pairs={{0,1},{1,2},{2,0}}", "source_target_pairs={{1,0},{1,2},{2,0}}"}}) {
    EXPECT_NE(FingerprintOf(Replace(text, from, to)), base) << from << " -> " << to;
  }
}

TEST(FingerprintTest, ShapesAndLayoutsChangeIt) {
  constexpr char kDot[] = R"(HloModule d

ENTRY %main (a: f32[2,3], b: f32[3,4]) -> f32[2,4] {
  %a = f32[2,3]{1,0} parameter(0)
  %b = f32[3,4]{1,0} parameter(1)
  ROOT %d = f32[2,4]{1,0} dot(f32[2,3]{1,0} %a, f32[3,4]{1,0} %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
)";
  const HloFingerprint base = FingerprintOf(kDot);
  // A layout, a tiled layout, a memory space, an element type, a dimension.
  EXPECT_NE(FingerprintOf(Replace(kDot, "ROOT %d = f32[2,4]{1,0}", "ROOT %d = f32[2,4]{0,1}")), base);
  EXPECT_NE(FingerprintOf(Replace(kDot, "ROOT %d = f32[2,4]{1,0}", "ROOT %d = f32[2,4]{1,0:T(2,128)}")), base);
  EXPECT_NE(FingerprintOf(Replace(kDot, "ROOT %d = f32[2,4]{1,0}", "ROOT %d = f32[2,4]{1,0:S(1)}")), base);
  std::string f64 = Replace(kDot, "(a: f32[2,3]", "(a: f64[2,3]");
  f64 = Replace(f64, "%a = f32[2,3]{1,0} parameter(0)", "%a = f64[2,3]{1,0} parameter(0)");
  f64 = Replace(f64, "dot(f32[2,3]{1,0} %a", "dot(f64[2,3]{1,0} %a");
  EXPECT_NE(FingerprintOf(f64), base);
  std::string wide = Replace(kDot, "b: f32[3,4]) -> f32[2,4]", "b: f32[3,5]) -> f32[2,5]");
  wide = Replace(wide, "%b = f32[3,4]{1,0} parameter(1)", "%b = f32[3,5]{1,0} parameter(1)");
  wide = Replace(wide, "ROOT %d = f32[2,4]{1,0} dot(f32[2,3]{1,0} %a, f32[3,4]{1,0} %b)",
                 "ROOT %d = f32[2,5]{1,0} dot(f32[2,3]{1,0} %a, f32[3,5]{1,0} %b)");
  EXPECT_NE(FingerprintOf(wide), base);
}

TEST(FingerprintTest, AnEditThroughTheApiChangesItAndUndoingRestoresIt) {
  std::unique_ptr<HloModule> module = ParseHloModule(kModule).value();
  const HloFingerprint base = FingerprintHloModule(*module);
  HloComputation* main = module->entry_computation();
  HloInstruction* d = main->GetInstructionWithName("d");
  HloInstruction* x = main->GetInstructionWithName("x");
  HloInstruction* y = main->GetInstructionWithName("y");
  ASSERT_TRUE(d->ReplaceOperandWith(1, x).ok());
  EXPECT_NE(FingerprintHloModule(*module), base);
  ASSERT_TRUE(d->ReplaceOperandWith(1, y).ok());
  EXPECT_EQ(FingerprintHloModule(*module), base);
  HloInstruction* p = main->GetInstructionWithName("p");
  p->set_comparison_direction(ComparisonDirection::kLt);
  EXPECT_NE(FingerprintHloModule(*module), base);
}

}  // namespace
}  // namespace jx::hlo::fingerprint_test

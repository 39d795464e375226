#include "jx/compiler/hlo/hlo_parser.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <sstream>
#include <string>

#include "absl/container/flat_hash_set.h"
#include "everything_hlo.h"
#include "jx/compiler/hlo/hlo_printer.h"
#include "jx/compiler/hlo/hlo_verifier.h"

namespace jx::hlo::parser_test {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string Msg(const absl::Status& s) { return std::string(s.message()); }

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::unique_ptr<HloModule> MustParse(std::string_view text) {
  absl::StatusOr<std::unique_ptr<HloModule>> module = ParseHloModule(text);
  EXPECT_TRUE(module.ok()) << module.status();
  return module.ok() ? *std::move(module) : nullptr;
}

TEST(HloParserTest, RoundTripsEveryOpcodeAndAttribute) {
  auto module = MustParse(testing::kEverythingHlo);
  ASSERT_NE(module, nullptr);
  ASSERT_TRUE(VerifyHloModule(*module).ok()) << VerifyHloModule(*module);
  const std::string printed = module->ToString();
  // Every instruction line of the input prints back exactly (order may differ: the printer
  // emits post order).
  std::multiset<std::string> printed_lines;
  for (const std::string& line : Lines(printed)) printed_lines.insert(line);
  for (const std::string& line : Lines(testing::kEverythingHlo)) {
    if (line.rfind("  ", 0) != 0) continue;
    EXPECT_EQ(printed_lines.count(line), 1u) << "not printed back: " << line << "\n" << printed;
  }
  // print -> parse -> print is a fixed point.
  auto reparsed = MustParse(printed);
  ASSERT_NE(reparsed, nullptr);
  EXPECT_EQ(reparsed->ToString(), printed);
  // Every opcode is exercised.
  absl::flat_hash_set<HloOpcode> seen;
  for (const HloComputation* c : module->computations()) {
    for (const HloInstruction* instr : c->instructions()) seen.insert(instr->opcode());
  }
  for (int i = 0; i < kHloOpcodeCount; ++i) {
    EXPECT_TRUE(seen.contains(static_cast<HloOpcode>(i)))
        << "no test instruction for " << HloOpcodeString(static_cast<HloOpcode>(i));
  }
  // ... and every attribute.
  for (int a = 0; a < kNumHloAttrs; ++a) {
    bool found = false;
    for (const HloComputation* c : module->computations()) {
      for (const HloInstruction* instr : c->instructions()) {
        found |= instr->HasAttr(static_cast<HloAttr>(a));
      }
    }
    EXPECT_TRUE(found) << "no test instruction has attribute " << a;
  }
}

TEST(HloParserTest, ShortFormRoundTrips) {
  auto module = MustParse(testing::kEverythingHlo);
  ASSERT_NE(module, nullptr);
  const std::string short_text = module->ToString(HloPrintOptions::ShortParsable());
  EXPECT_THAT(short_text, HasSubstr("%e_add = f32[4]{0} add(%p0, %c1)\n"));
  auto reparsed = MustParse(short_text);
  ASSERT_NE(reparsed, nullptr);
  EXPECT_EQ(reparsed->ToString(), module->ToString());
  EXPECT_EQ(reparsed->ToString(HloPrintOptions::ShortParsable()), short_text);
}

TEST(HloParserTest, ParsedAttributesAreTyped) {
  auto module = MustParse(testing::kEverythingHlo);
  ASSERT_NE(module, nullptr);
  HloComputation* entry = module->entry_computation();
  EXPECT_EQ(entry->name(), "main");
  EXPECT_EQ(entry->num_parameters(), 13);
  const HloInstruction* conv = entry->GetInstructionWithName("e_conv");
  ASSERT_NE(conv, nullptr);
  EXPECT_EQ(conv->window()[0].stride, 2);
  EXPECT_EQ(conv->window()[1].rhs_dilation, 2);
  EXPECT_EQ(conv->convolution_dimension_numbers().kernel_output_feature_dimension, 3);
  const HloInstruction* dot = entry->GetInstructionWithName("e_bdot");
  EXPECT_EQ(dot->dot_dimension_numbers().rhs_contracting_dims, std::vector<int64_t>{1});
  EXPECT_TRUE(dot->precision_config().IsDefault());
  EXPECT_FALSE(dot->HasAttr(HloAttr::kOperandPrecision));
  const HloInstruction* pdot = entry->GetInstructionWithName("e_pdot");
  EXPECT_EQ(pdot->precision_config().operand_precision[0], Precision::kHighest);
  EXPECT_EQ(pdot->precision_config().operand_precision[1], Precision::kHighest);
  const HloInstruction* pconv = entry->GetInstructionWithName("e_bgconv");
  EXPECT_EQ(pconv->precision_config().operand_precision[0], Precision::kHigh);
  EXPECT_EQ(pconv->precision_config().operand_precision[1], Precision::kDefault);
  const HloInstruction* c1 = entry->GetInstructionWithName("c1");
  EXPECT_EQ(c1->literal().GetAsDouble(1), 2.5);
  const HloInstruction* fusion = entry->GetInstructionWithName("e_fusion");
  EXPECT_EQ(fusion->fusion_kind(), FusionKind::kLoop);
  EXPECT_TRUE(fusion->fused_instructions_computation()->IsFusionComputation());
  const HloInstruction* cc = entry->GetInstructionWithName("e_cc");
  EXPECT_EQ(cc->backend_config(), "{\"k\": 1}");
  EXPECT_TRUE(cc->HasSideEffect());
  const HloInstruction* meta = entry->GetInstructionWithName("e_meta");
  EXPECT_EQ(meta->metadata().source_line, 12);
  EXPECT_EQ(entry->root_instruction()->name(), "e_root");
}

TEST(HloParserTest, GoldenExampleIsIdentical) {
  constexpr char kText[] = R"(HloModule jit_f, entry_computation_layout={(f32[8]{0})->f32[8]{0}}

%fused_computation (param_0: f32[8]) -> f32[8] {
  %param_0 = f32[8]{0} parameter(0)
  %sine.1 = f32[8]{0} sine(f32[8]{0} %param_0)
  ROOT %multiply.2 = f32[8]{0} multiply(f32[8]{0} %sine.1, f32[8]{0} %sine.1)
}

ENTRY %main.4 (Arg_0.1: f32[8]) -> f32[8] {
  %Arg_0.1 = f32[8]{0} parameter(0)
  ROOT %fusion = f32[8]{0} fusion(f32[8]{0} %Arg_0.1), kind=kLoop, calls=%fused_computation
}
)";
  auto module = MustParse(kText);
  ASSERT_NE(module, nullptr);
  EXPECT_EQ(module->ToString(), kText);
  EXPECT_TRUE(VerifyHloModule(*module).ok());
}

TEST(HloParserTest, AcceptsCommentsBareNamesAndDefaults) {
  auto module = MustParse(R"(
// a comment
HloModule m
c {
  p = f32[2] parameter(0)  /* inline */
  n = f32[2] negate(p)
  a = f32[2] abs(n)
})");
  ASSERT_NE(module, nullptr);
  HloComputation* c = module->entry_computation();
  EXPECT_EQ(c->root_instruction()->name(), "a");  // last instruction is the root
  EXPECT_EQ(c->root_instruction()->shape().ToString(), "f32[2]{0}");  // default layout
  // Generated names never collide with parsed ones.
  EXPECT_NE(module->UniqueInstructionName("n"), "n");
}

// Two generated names with one prefix in a row differ (the second once retried forever).
TEST(HloParserTest, GeneratedNamesWithOnePrefixDiffer) {
  auto module = MustParse(R"(
HloModule m
c {
  p = f32[2] parameter(0)
  ROOT n = f32[2] negate(p)
})");
  ASSERT_NE(module, nullptr);
  const std::string a = module->UniqueInstructionName("x", /*exact_if_free=*/false);
  const std::string b = module->UniqueInstructionName("x", /*exact_if_free=*/false);
  EXPECT_NE(a, b);
}

struct ErrorCase {
  const char* text;
  const char* where;    // "line L, column C"
  const char* message;  // substring
};

TEST(HloParserTest, ErrorsNameLineAndColumn) {
  const ErrorCase cases[] = {
      {"HloModule m\nENTRY %c {\n  %p = f32[2]{0} parameter(0)\n  ROOT %s = f32[2]{0} sinus(%p)\n}",
       "line 4, column 23", "unknown opcode \"sinus\""},
      {"HloModule m\nENTRY %c {\n  %p = f32[2]{0} parameter(0)\n  ROOT %s = f32[2]{0} sine(%q)\n}",
       "line 4, column 29", "unknown operand %q"},
      {"HloModule m\nENTRY %c {\n  %p = f33[2]{0} parameter(0)\n}", "line 3, column 8",
       "expected an element type"},
      {"HloModule m\nENTRY %c {\n  %p = f32[2{0} parameter(0)\n}", "line 3, column 13",
       "expected dimensions"},
      {"HloModule m\nENTRY %c {\n  %p = f32[2]{0} parameter(0)\n  ROOT %s = f32[2]{0} sine(%p), "
       "colour=red\n}",
       "line 4, column 33", "unknown attribute \"colour\""},
      {"HloModule m\nENTRY %c {\n  %p = f32[2]{0} parameter(0)\n  ROOT %r = f32[] reduce(%p, %p), "
       "dimensions={0}, to_apply=%nope\n}",
       "line 4, column 60", "unknown computation %nope"},
      {"HloModule m\nENTRY %c {\n  %p = f32[2]{0} parameter(0)\n  %p = f32[2]{0} parameter(1)\n}",
       "line 4, column 4", "\"p\" is taken"},
      {"HloModule m\nENTRY %c {\n  %p f32[2]{0} parameter(0)\n}", "line 3, column 6",
       "expected '='"},
      {"HloModule m\nENTRY %c {\n  %p = f32[2]{0} parameter(0)\n  ROOT %s = f32[2]{0} slice(%p), "
       "slice={[0:x]}\n}",
       "line 4, column 40", "bad slice"},
      {"HloModule m\nENTRY %c {\n  %p = f32[2]{0} parameter(0)\n  ROOT %s = f32[2]{0} sine(f32[3]{0} "
       "%p)\n}",
       "line 4, column 28", "written as f32[3] but defined as f32[2]"},
      {"HloModule m\nENTRY %c (x: f32[3]) -> f32[2] {\n  %p = f32[2]{0} parameter(0)\n}",
       "line 2, column 10", "signature parameter 0 is f32[3]"},
      {"HloModule m\nENTRY %c {\n  %p = f32[2]{0} parameter(1)\n}", "line 2, column 8",
       "has no parameter(0)"},
      {"HloModule m\nENTRY %c {\n  %p = s32[2]{0} constant({1, 2, 3})\n}", "line 3, column 27",
       "expected '}'"},
      {"HloModule m\nENTRY %c {\n  %p = f32[2]{0} parameter(0)\n  ROOT %s = f32[2]{0} sine(%p), "
       "operand_precision={highest,highest}\n}",
       "line 4, column 51", "operand_precision on sine; only dot and convolution have one"},
      {"HloModule m\nENTRY %c {\n  %p = f32[2]{0} parameter(0)\n  ROOT %d = f32[] dot(%p, %p), "
       "lhs_contracting_dims={0}, rhs_contracting_dims={0}, operand_precision={highest}\n}",
       "line 4, column 102", "bad operand_precision (one per operand)"},
      {"HloModule m\nENTRY %c {\n  %p = f32[2]{0} parameter(0)\n  ROOT %d = f32[] dot(%p, %p), "
       "lhs_contracting_dims={0}, rhs_contracting_dims={0}, operand_precision={fast,default}\n}",
       "line 4, column 102", "bad precision \"fast\""},
  };
  for (const ErrorCase& c : cases) {
    absl::StatusOr<std::unique_ptr<HloModule>> module = ParseHloModule(c.text);
    ASSERT_FALSE(module.ok()) << c.text;
    EXPECT_THAT(Msg(module.status()), StartsWith(std::string(c.where) + ": ")) << c.text;
    EXPECT_THAT(Msg(module.status()), HasSubstr(c.message)) << c.text;
  }
}

TEST(HloParserTest, ErrorQuotesTheLineWithACaret) {
  absl::Status st = ParseHloModule("HloModule m\nENTRY %c {\n  %p = f32[2]{0} bogus()\n}").status();
  EXPECT_THAT(Msg(st), HasSubstr("\n    %p = f32[2]{0} bogus()\n                   ^"));
}

}  // namespace
}  // namespace jx::hlo::parser_test

// Collectives of several operands, as XLA writes them: all-reduce(a, b) gives (A, B), and
// likewise all-gather and reduce-scatter, each operand by its opcode's rule; all-to-all of
// several operands is XLA's tuple form (no dimensions=, one operand per group member, one
// shape); their starts are all-reduce-start -> (A, B) and ((a, b), (A, B)) for the others. Text round trip,
// verifier errors naming the operand, the evaluator (one partition) and async pairs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "jx/compiler/hlo/hlo_evaluator.h"
#include "jx/compiler/hlo/hlo_module.h"
#include "jx/compiler/hlo/hlo_parser.h"
#include "jx/compiler/hlo/hlo_verifier.h"
#include "jx/compiler/hlo/literal.h"

namespace jx::hlo {
namespace {

using ::testing::HasSubstr;

std::string Entry(std::string_view body) {
  return std::string(R"(HloModule m
%sum (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %x, f32[] %y)
}
ENTRY %main {
  %p = f32[8,4]{1,0} parameter(0)
  %q = f32[2]{0} parameter(1)
  )") + std::string(body) + "\n}\n";
}

absl::Status ParseAndVerify(std::string_view text) {
  absl::StatusOr<std::unique_ptr<HloModule>> module = ParseHloModule(text);
  if (!module.ok()) return module.status();
  return VerifyHloModule(**module);
}

TEST(HloVariadicCollectivesTest, EachOperandGetsItsResultInATuple) {
  const std::string text = Entry(
      "%ar = (f32[8,4]{1,0}, f32[2]{0}) all-reduce(f32[8,4]{1,0} %p, f32[2]{0} %q), channel_id=1, "
      "replica_groups={{0,1}}, use_global_device_ids=true, to_apply=%sum\n"
      "  %ag = (f32[16,4]{1,0}, f32[4]{0}) all-gather(f32[8,4]{1,0} %p, f32[2]{0} %q), channel_id=2, "
      "replica_groups={{0,1}}, dimensions={0}, use_global_device_ids=true\n"
      "  %rs = (f32[4,4]{1,0}, f32[1]{0}) reduce-scatter(f32[8,4]{1,0} %p, f32[2]{0} %q), channel_id=3, "
      "replica_groups={{0,1}}, dimensions={0}, use_global_device_ids=true, to_apply=%sum\n"
      "  %a2a = (f32[2]{0}, f32[2]{0}) all-to-all(f32[2]{0} %q, f32[2]{0} %q), channel_id=4, "
      "replica_groups={{0,1}}\n"
      "  ROOT %t = ((f32[8,4]{1,0}, f32[2]{0}), (f32[16,4]{1,0}, f32[4]{0}), (f32[4,4]{1,0}, f32[1]{0}), "
      "(f32[2]{0}, f32[2]{0})) tuple(%ar, %ag, %rs, %a2a)");
  absl::StatusOr<std::unique_ptr<HloModule>> module = ParseHloModule(text);
  ASSERT_TRUE(module.ok()) << module.status();
  ASSERT_TRUE(VerifyHloModule(**module).ok()) << VerifyHloModule(**module);
  // Printed as XLA prints them, and read back.
  const std::string printed = (*module)->ToString();
  EXPECT_THAT(printed, HasSubstr("all-reduce(f32[8,4]{1,0} %p, f32[2]{0} %q)"));
  absl::StatusOr<std::unique_ptr<HloModule>> reparsed = ParseHloModule(printed);
  ASSERT_TRUE(reparsed.ok()) << reparsed.status();
  EXPECT_EQ((*reparsed)->ToString(), printed);
}

TEST(HloVariadicCollectivesTest, VerifierNamesTheOperandThatDoesNotFit) {
  struct Case {
    std::string body, message;
  };
  for (const Case& c : std::vector<Case>{
           {"ROOT %ar = (f32[8,4]{1,0}, f32[3]{0}) all-reduce(f32[8,4]{1,0} %p, f32[2]{0} %q), "
            "replica_groups={{0,1}}, to_apply=%sum",
            "shape is (f32[8,4], f32[3]) but shape inference gives (f32[8,4], f32[2])"},
           {"%i = s32[2]{0} convert(f32[2]{0} %q)\n  ROOT %ar = (f32[8,4]{1,0}, s32[2]{0}) "
            "all-reduce(f32[8,4]{1,0} %p, s32[2]{0} %i), replica_groups={{0,1}}, to_apply=%sum",
            "operand 1 (of 2): to_apply must be (s32[], s32[]) -> s32[]"},
           {"ROOT %rs = (f32[4,4]{1,0}, f32[1]{0}) reduce-scatter(f32[8,4]{1,0} %p, f32[2]{0} %q), "
            "replica_groups={{0,1,2}}, dimensions={0}, to_apply=%sum",
            "operand 0 (of 2): dimension 0 of f32[8,4] does not split into 3 equal blocks"},
           {"ROOT %ar = f32[8,4]{1,0} all-reduce(), replica_groups={{0,1}}, to_apply=%sum",
            "takes at least one operand"},
           {"ROOT %a2a = (f32[8,4]{1,0}, f32[2]{0}) all-to-all(f32[8,4]{1,0} %p, f32[2]{0} %q), "
            "replica_groups={{0,1}}, dimensions={0}",
            "with dimensions= (its split dimension) takes one operand, got 2"},
           {"ROOT %a2a = (f32[2]{0}, f32[2]{0}) all-to-all(f32[2]{0} %q, f32[2]{0} %q), replica_groups={{0,1,2,3}}",
            "an all-to-all of 2 operands without dimensions= sends operand i to member i of its group, but "
            "replica_groups={{0,1,2,3}} has groups of 4"},
           {"ROOT %a2a = (f32[8,4]{1,0}, f32[2]{0}) all-to-all(f32[8,4]{1,0} %p, f32[2]{0} %q), replica_groups={{0,1}}",
            "the operands of a tuple all-to-all must have one shape: operand 0 is f32[8,4], operand 1 is f32[2]"},
       }) {
    absl::Status st = ParseAndVerify(Entry(c.body));
    EXPECT_FALSE(st.ok()) << c.body;
    EXPECT_THAT(std::string(st.message()), HasSubstr(c.message)) << c.body;
  }
}

TEST(HloVariadicCollectivesTest, AsyncPairsCarryEveryOperandAndResult) {
  EXPECT_TRUE(ParseAndVerify(Entry(
                  "%ars = (f32[8,4]{1,0}, f32[2]{0}) all-reduce-start(f32[8,4]{1,0} %p, f32[2]{0} %q), "
                  "replica_groups={{0,1}}, to_apply=%sum\n"
                  "  %ard = (f32[8,4]{1,0}, f32[2]{0}) all-reduce-done((f32[8,4]{1,0}, f32[2]{0}) %ars)\n"
                  "  %ags = ((f32[8,4]{1,0}, f32[2]{0}), (f32[16,4]{1,0}, f32[4]{0})) "
                  "all-gather-start(f32[8,4]{1,0} %p, f32[2]{0} %q), replica_groups={{0,1}}, dimensions={0}\n"
                  "  %agd = (f32[16,4]{1,0}, f32[4]{0}) all-gather-done(((f32[8,4]{1,0}, f32[2]{0}), "
                  "(f32[16,4]{1,0}, f32[4]{0})) %ags)\n"
                  "  ROOT %t = ((f32[8,4]{1,0}, f32[2]{0}), (f32[16,4]{1,0}, f32[4]{0})) tuple(%ard, %agd)"))
                  .ok());
  // A single operand keeps the one-operand form: ((operand), R) for reduce-scatter-start.
  absl::Status st = ParseAndVerify(Entry(
      "%rss = ((f32[8,4]{1,0}, f32[2]{0}), (f32[8,4]{1,0}, f32[2]{0})) reduce-scatter-start(f32[8,4]{1,0} %p), "
      "replica_groups={{0}}, dimensions={0}, to_apply=%sum\n"
      "  ROOT %rsd = f32[8,4]{1,0} reduce-scatter-done(((f32[8,4]{1,0}, f32[2]{0}), (f32[8,4]{1,0}, f32[2]{0})) %rss)"));
  EXPECT_FALSE(st.ok());
}

TEST(HloVariadicCollectivesTest, EvaluatorGivesEachOperandItsResult) {
  // One partition: each result is its operand, through the sync op and an async pair.
  absl::StatusOr<std::unique_ptr<HloModule>> module = ParseHloModule(Entry(
      "%ar = (f32[8,4]{1,0}, f32[2]{0}) all-reduce(f32[8,4]{1,0} %p, f32[2]{0} %q), replica_groups={{0}}, "
      "to_apply=%sum\n"
      "  %a = f32[8,4]{1,0} get-tuple-element(%ar), index=0\n"
      "  %b = f32[2]{0} get-tuple-element(%ar), index=1\n"
      "  %rss = ((f32[8,4]{1,0}, f32[2]{0}), (f32[8,4]{1,0}, f32[2]{0})) reduce-scatter-start(f32[8,4]{1,0} %a, "
      "f32[2]{0} %b), replica_groups={{0}}, dimensions={0}, to_apply=%sum\n"
      "  ROOT %rsd = (f32[8,4]{1,0}, f32[2]{0}) reduce-scatter-done(((f32[8,4]{1,0}, f32[2]{0}), "
      "(f32[8,4]{1,0}, f32[2]{0})) %rss)"));
  ASSERT_TRUE(module.ok()) << module.status();
  ASSERT_TRUE(VerifyHloModule(**module).ok()) << VerifyHloModule(**module);
  Literal x(Shape(F32, {8, 4})), y(Shape(F32, {2}));
  for (int i = 0; i < 32; ++i) x.SetFromDouble(i, i * 0.5);
  y.SetFromDouble(0, -1);
  y.SetFromDouble(1, 7);
  HloEvaluator evaluator;
  absl::StatusOr<Literal> out = evaluator.Evaluate(**module, {&x, &y});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, Literal::CreateTuple({x, y}));
}

}  // namespace
}  // namespace jx::hlo

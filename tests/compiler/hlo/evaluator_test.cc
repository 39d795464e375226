// HloEvaluator: control flow (while, conditional, call, fusion), tuples, custom-calls,
// rng-bit-generator known answers, errors, and a check that every opcode in opcode.def
// evaluates.
#include "jx/compiler/hlo/hlo_evaluator.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <string_view>

#include "everything_hlo.h"
#include "jx/compiler/hlo/hlo_parser.h"
#include "jx/compiler/hlo/hlo_verifier.h"

namespace jx::hlo::evaluator_test {
namespace {

std::unique_ptr<HloModule> Parse(std::string_view text) {
  absl::StatusOr<std::unique_ptr<HloModule>> module = ParseHloModule(text);
  EXPECT_TRUE(module.ok()) << module.status();
  if (!module.ok()) return nullptr;
  EXPECT_TRUE(VerifyHloModule(**module).ok()) << VerifyHloModule(**module);
  return *std::move(module);
}

absl::StatusOr<Literal> RunHlo(std::string_view text, std::vector<Literal> args = {},
                            int64_t max_loop_iterations = -1) {
  std::unique_ptr<HloModule> module = Parse(text);
  if (module == nullptr) return absl::InvalidArgumentError("parse failed");
  std::vector<const Literal*> ptrs;
  for (const Literal& a : args) ptrs.push_back(&a);
  HloEvaluator evaluator(max_loop_iterations);
  return evaluator.Evaluate(*module, ptrs);
}

std::string RunStr(std::string_view text, std::vector<Literal> args = {}) {
  absl::StatusOr<Literal> r = RunHlo(text, std::move(args));
  return r.ok() ? r->ToString() : "error: " + std::string(r.status().message());
}

constexpr char kFactorial[] = R"(HloModule factorial
%cond (s: (s32[], s32[])) -> pred[] {
  %s = (s32[], s32[]) parameter(0)
  %ci = s32[] get-tuple-element(%s), index=0
  %n = s32[] constant(5)
  ROOT %le = pred[] compare(%ci, %n), direction=LE
}
%body (t: (s32[], s32[])) -> (s32[], s32[]) {
  %t = (s32[], s32[]) parameter(0)
  %i = s32[] get-tuple-element(%t), index=0
  %acc = s32[] get-tuple-element(%t), index=1
  %bone = s32[] constant(1)
  %next = s32[] add(%i, %bone)
  %prod = s32[] multiply(%acc, %i)
  ROOT %r = (s32[], s32[]) tuple(%next, %prod)
}
ENTRY %main (start: s32[]) -> s32[] {
  %start = s32[] parameter(0)
  %one = s32[] constant(1)
  %init = (s32[], s32[]) tuple(%start, %one)
  %loop = (s32[], s32[]) while(%init), condition=%cond, body=%body
  ROOT %result = s32[] get-tuple-element(%loop), index=1
})";

TEST(EvaluatorTest, WhileComputesFactorial) {
  EXPECT_EQ(RunStr(kFactorial, {Literal::CreateR0<int32_t>(1)}), "120");
  // The condition is false at once: the init value comes back.
  EXPECT_EQ(RunStr(kFactorial, {Literal::CreateR0<int32_t>(9)}), "1");
}

TEST(EvaluatorTest, WhileHonoursMaxLoopIterations) {
  absl::StatusOr<Literal> r = RunHlo(kFactorial, {Literal::CreateR0<int32_t>(1)}, 3);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(r.status().message().find("%loop"), std::string_view::npos) << r.status();
  EXPECT_TRUE(RunHlo(kFactorial, {Literal::CreateR0<int32_t>(9)}, 0).ok());
}

constexpr char kConditional[] = R"(HloModule cond
%b0 (x0: f32[]) -> f32[] {
  %x0 = f32[] parameter(0)
  ROOT %n = f32[] negate(%x0)
}
%b1 (x1: f32[]) -> f32[] {
  %x1 = f32[] parameter(0)
  ROOT %a = f32[] add(%x1, %x1)
}
%b2 (x2: f32[]) -> f32[] {
  %x2 = f32[] parameter(0)
  ROOT %m = f32[] multiply(%x2, %x2)
}
ENTRY %main (i: s32[]) -> f32[] {
  %i = s32[] parameter(0)
  %c = f32[] constant(3)
  ROOT %r = f32[] conditional(%i, %c, %c, %c), branch_computations={%b0, %b1, %b2}
})";

TEST(EvaluatorTest, ConditionalIndexFormOutOfRangeRunsLastBranch) {
  EXPECT_EQ(RunStr(kConditional, {Literal::CreateR0<int32_t>(0)}), "-3");
  EXPECT_EQ(RunStr(kConditional, {Literal::CreateR0<int32_t>(1)}), "6");
  EXPECT_EQ(RunStr(kConditional, {Literal::CreateR0<int32_t>(2)}), "9");
  EXPECT_EQ(RunStr(kConditional, {Literal::CreateR0<int32_t>(7)}), "9");
  EXPECT_EQ(RunStr(kConditional, {Literal::CreateR0<int32_t>(-1)}), "9");
}

TEST(EvaluatorTest, ConditionalPredForm) {
  constexpr char kPred[] = R"(HloModule cond
%t (x0: f32[]) -> f32[] {
  %x0 = f32[] parameter(0)
  ROOT %n = f32[] negate(%x0)
}
%f (x1: s32[]) -> f32[] {
  %x1 = s32[] parameter(0)
  ROOT %c = f32[] convert(%x1)
}
ENTRY %main (p: pred[]) -> f32[] {
  %p = pred[] parameter(0)
  %a = f32[] constant(2)
  %b = s32[] constant(5)
  ROOT %r = f32[] conditional(%p, %a, %b), branch_computations={%t, %f}
})";
  EXPECT_EQ(RunStr(kPred, {Literal::CreateR0<bool>(true)}), "-2");
  EXPECT_EQ(RunStr(kPred, {Literal::CreateR0<bool>(false)}), "5");
}

TEST(EvaluatorTest, CallFusionTuplesBarrierCopy) {
  EXPECT_EQ(RunStr(R"(HloModule m
%callee (a: f32[2]) -> f32[2] {
  %a = f32[2] parameter(0)
  ROOT %n = f32[2] negate(%a)
}
%fused (p0: f32[2], p1: f32[2]) -> f32[2] {
  %p0 = f32[2] parameter(0)
  %p1 = f32[2] parameter(1)
  ROOT %m = f32[2] multiply(%p0, %p1)
}
ENTRY %main (x: f32[2]) -> (f32[2], f32[2]) {
  %x = f32[2] parameter(0)
  %c = f32[2] call(%x), to_apply=%callee
  %f = f32[2] fusion(%c, %x), kind=kLoop, calls=%fused
  %t = (f32[2], f32[2]) tuple(%f, %c)
  %b = (f32[2], f32[2]) opt-barrier(%t)
  %g = f32[2] get-tuple-element(%b), index=0
  %cp = f32[2] copy(%g)
  ROOT %r = (f32[2], f32[2]) tuple(%cp, %x)
})",
                   {Literal::CreateR1<float>({2, -3})}),
            "({-4, -9}, {2, -3})");
}

TEST(EvaluatorTest, CustomCallRegistry) {
  constexpr char kText[] = R"(HloModule m
ENTRY %main (x: f32[3]) -> f32[3] {
  %x = f32[3] parameter(0)
  ROOT %cc = f32[3] custom-call(%x), custom_call_target="eval_test_double"
})";
  absl::StatusOr<Literal> missing = RunHlo(kText, {Literal::CreateR1<float>({1, 2, 3})});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("eval_test_double"), std::string_view::npos);
  EXPECT_NE(missing.status().message().find("%cc"), std::string_view::npos);

  HloEvaluator::RegisterCustomCallTarget(
      "eval_test_double",
      [](const HloInstruction& instr,
         absl::Span<const Literal* const> ops) -> absl::StatusOr<Literal> {
        Literal out(instr.shape());
        for (int64_t i = 0; i < out.element_count(); ++i) {
          out.SetFromDouble(i, 2 * ops[0]->GetAsDouble(i));
        }
        return out;
      });
  EXPECT_EQ(RunStr(kText, {Literal::CreateR1<float>({1, 2, 3})}), "{2, 4, 6}");
  EXPECT_TRUE(HloEvaluator::UnregisterCustomCallTarget("eval_test_double"));
}

TEST(EvaluatorTest, RngBitGeneratorKnownAnswers) {
  // Threefry2x32-20 with key 0, counter 0 (Random123 known answer 6b200159 99ba4efe).
  auto rng = [](std::string_view algorithm, std::string_view bits_shape,
                std::vector<uint64_t> state) {
    std::string text = std::string("HloModule m\nENTRY %main (s: u64[") +
                       std::to_string(state.size()) + "]) -> (u64[" +
                       std::to_string(state.size()) + "], " + std::string(bits_shape) +
                       ") {\n  %s = u64[" + std::to_string(state.size()) +
                       "] parameter(0)\n  ROOT %r = (u64[" + std::to_string(state.size()) +
                       "], " + std::string(bits_shape) + ") rng-bit-generator(%s), algorithm=" +
                       std::string(algorithm) + "\n}";
    return RunStr(text, {Literal::CreateR1<uint64_t>(absl::MakeConstSpan(state))});
  };
  EXPECT_EQ(rng("rng_three_fry", "u32[2]", {0, 0}), "({0, 1}, {1797259609, 2579123966})");
  EXPECT_EQ(rng("rng_three_fry", "u64[1]", {0, 0}), "({0, 1}, {11077253088097075545})");
  // Random123 known answer with key (13198a2e, 03707344), counter (243f6a88, 85a308d3):
  // c4923a9c 483df7a0.
  EXPECT_EQ(rng("rng_three_fry", "u32[2]", {0x0370734413198a2eULL, 0x85a308d3243f6a88ULL}),
            "({247824715720788526, 9629550131187509897}, {3297917596, 1212020640})");
  // Philox4x32-10 with key 0, counter 0: 6627e8d5 e169c58d bc57ac4c 9b00dbd8.
  EXPECT_EQ(rng("rng_philox", "u32[4]", {0, 0}),
            "({0, 1}, {1713891541, 3781805453, 3159862348, 2600524760})");
  EXPECT_EQ(rng("rng_default", "u32[4]", {0, 0, 0}),
            "({0, 1, 0}, {1713891541, 3781805453, 3159862348, 2600524760})");
  // Odd sizes: the 32-bit threefry pairs neighbours along the split dimension.
  EXPECT_EQ(rng("rng_three_fry", "u32[3]", {0, 0}).substr(0, 34),
            "({0, 2}, {1797259609, 2579123966, ");
}

TEST(EvaluatorTest, ErrorsNameTheInstruction) {
  constexpr char kText[] = R"(HloModule m
ENTRY %main (x: f32[2]) -> f32[2] {
  %x = f32[2] parameter(0)
  ROOT %n = f32[2] negate(%x)
})";
  absl::StatusOr<Literal> r = RunHlo(kText, {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("takes 1 argument"), std::string_view::npos);
  r = RunHlo(kText, {Literal::CreateR1<float>({1, 2, 3})});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("f32[3]"), std::string_view::npos) << r.status();

  std::unique_ptr<HloModule> module = Parse(kText);
  HloEvaluator evaluator;
  Literal x = Literal::CreateR1<float>({1, 2});
  absl::StatusOr<Literal> param =
      evaluator.EvaluateInstruction(*module->entry_computation()->parameter_instruction(0), {});
  ASSERT_FALSE(param.ok());
  EXPECT_NE(param.status().message().find("%x = parameter"), std::string_view::npos)
      << param.status();
  absl::StatusOr<Literal> neg =
      evaluator.EvaluateInstruction(*module->entry_computation()->root_instruction(), {&x});
  ASSERT_TRUE(neg.ok()) << neg.status();
  EXPECT_EQ(neg->ToString(), "{-1, -2}");
}

// Every opcode in opcode.def must evaluate: walk the module that uses every opcode,
// evaluating each instruction on its operands' values, and fail on any opcode that is
// missing from the module or does not evaluate.
TEST(EvaluatorTest, EveryOpcodeEvaluates) {
  std::unique_ptr<HloModule> module = Parse(testing::kEverythingHlo);
  ASSERT_NE(module, nullptr);
  HloEvaluator::RegisterCustomCallTarget(
      "lgamma", [](const HloInstruction& instr, absl::Span<const Literal* const> ops) {
        return absl::StatusOr<Literal>(*ops[0]);
      });
  HloEvaluator evaluator;
  std::set<HloOpcode> evaluated;
  const HloComputation* entry = module->entry_computation();
  // Parameters: small positive values (so log/sqrt stay finite), u64 rng state.
  std::map<const HloInstruction*, Literal> values;
  for (const HloInstruction* p : entry->parameter_instructions()) {
    Literal lit(p->shape());
    for (int64_t i = 0; i < lit.element_count(); ++i) lit.SetFromDouble(i, (i % 3) * 0.5);
    values[p] = std::move(lit);
    evaluated.insert(HloOpcode::kParameter);
  }
  for (const HloInstruction* instr : entry->MakeInstructionPostOrder()) {
    if (instr->opcode() == HloOpcode::kParameter) continue;
    std::vector<const Literal*> ops;
    for (const HloInstruction* operand : instr->operands()) ops.push_back(&values.at(operand));
    absl::StatusOr<Literal> value = evaluator.EvaluateInstruction(*instr, ops);
    ASSERT_TRUE(value.ok()) << instr->ToString() << ": " << value.status();
    values[instr] = *std::move(value);
    evaluated.insert(instr->opcode());
  }
#define HLO_OPCODE(enum_name, text_name, arity, properties)                          \
  EXPECT_TRUE(evaluated.count(HloOpcode::enum_name))                                 \
      << text_name << " is in opcode.def but was not evaluated: add it to the "      \
      << "evaluator and to everything_hlo.h";
#include "jx/compiler/hlo/opcode.def"
  EXPECT_EQ(static_cast<int>(evaluated.size()), kHloOpcodeCount);
  HloEvaluator::UnregisterCustomCallTarget("lgamma");

  // And the dispatcher has no fallback: an opcode value past the table is reported.
  auto bogus = HloInstruction::Create(static_cast<HloOpcode>(kHloOpcodeCount),
                                      ShapeUtil::MakeShape(F32, {}), {});
  absl::StatusOr<Literal> r = evaluator.EvaluateInstruction(*bogus, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace jx::hlo::evaluator_test

#include "jx/compiler/hlo/hlo_verifier.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "everything_hlo.h"
#include "jx/compiler/hlo/hlo_builder.h"
#include "jx/compiler/hlo/hlo_parser.h"
#include "jx/compiler/hlo/shape_inference.h"

namespace jx::hlo::verifier_test {
namespace {

using ::testing::HasSubstr;

std::string Msg(const absl::Status& s) { return std::string(s.message()); }

// Parses (which checks syntax only) and verifies.
absl::Status ParseAndVerify(std::string_view text) {
  absl::StatusOr<std::unique_ptr<HloModule>> module = ParseHloModule(text);
  if (!module.ok()) return module.status();
  return VerifyHloModule(**module);
}

TEST(HloVerifierTest, AcceptsValidModules) {
  EXPECT_TRUE(ParseAndVerify(testing::kEverythingHlo).ok()) << ParseAndVerify(testing::kEverythingHlo);
}

TEST(HloVerifierTest, CatchesWrongShape) {
  absl::Status st = ParseAndVerify(R"(HloModule m
ENTRY %main {
  %p = f32[8]{0} parameter(0)
  ROOT %s = f32[4]{0} sine(f32[8]{0} %p)
})");
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(Msg(st), HasSubstr("computation %main, instruction %s: shape is f32[4] but shape "
                                 "inference gives f32[8]"));
}

TEST(HloVerifierTest, CatchesShapeRuleViolations) {
  EXPECT_THAT(Msg(ParseAndVerify(R"(HloModule m
ENTRY %main {
  %a = f32[2,3]{1,0} parameter(0)
  ROOT %d = f32[2,2]{1,0} dot(%a, %a), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})")),
              HasSubstr("instruction %d: %d = dot(f32[2,3], f32[2,3]): lhs_contracting_dims={1} "
                        "(size 3) does not match rhs_contracting_dims={0} (size 2)"));
}

TEST(HloVerifierTest, CatchesWrongOperandCount) {
  EXPECT_THAT(Msg(ParseAndVerify(R"(HloModule m
ENTRY %main {
  %p = f32[8]{0} parameter(0)
  ROOT %s = f32[8]{0} add(%p)
})")),
              HasSubstr("instruction %s: add expects 2 operand(s), got 1"));
}

TEST(HloVerifierTest, CatchesBadReducerSignature) {
  EXPECT_THAT(Msg(ParseAndVerify(R"(HloModule m
%add (x: f32[], y: f32[2]) -> f32[2] {
  %x = f32[] parameter(0)
  %y = f32[2]{0} parameter(1)
  ROOT %b = f32[2]{0} broadcast(%x), dimensions={}
}
ENTRY %main {
  %p = f32[8]{0} parameter(0)
  %z = f32[] constant(0)
  ROOT %r = f32[] reduce(%p, %z), dimensions={0}, to_apply=%add
})")),
              HasSubstr("to_apply parameter 1 is f32[2], expected f32[]"));
}

TEST(HloVerifierTest, CatchesWhileConditionNotPred) {
  EXPECT_THAT(Msg(ParseAndVerify(R"(HloModule m
%cond (c: s32[]) -> s32[] {
  ROOT %c = s32[] parameter(0)
}
%body (b: s32[]) -> s32[] {
  ROOT %b = s32[] parameter(0)
}
ENTRY %main {
  %p = s32[] parameter(0)
  ROOT %w = s32[] while(%p), condition=%cond, body=%body
})")),
              HasSubstr("instruction %w: %w = while(s32[]): condition must return pred[], got s32[]"));
}

TEST(HloVerifierTest, CatchesFusionParameterMismatch) {
  EXPECT_THAT(Msg(ParseAndVerify(R"(HloModule m
%fused (q: f32[4]) -> f32[4] {
  %q = f32[4]{0} parameter(0)
  ROOT %n = f32[4]{0} negate(%q)
}
ENTRY %main {
  %p = f32[8]{0} parameter(0)
  ROOT %f = f32[4]{0} fusion(%p), kind=kLoop, calls=%fused
})")),
              HasSubstr("operand 0 f32[8] does not match calls parameter 0 f32[4]"));
}

std::unique_ptr<HloModule> SmallModule() {
  return ParseHloModule(R"(HloModule m
ENTRY %main {
  %p = f32[8]{0} parameter(0)
  %n = f32[8]{0} negate(%p)
  ROOT %s = f32[8]{0} sine(%n)
})")
      .value();
}

TEST(HloVerifierTest, CatchesBrokenUserEdges) {
  auto module = SmallModule();
  HloComputation* c = module->entry_computation();
  HloInstruction* p = c->parameter_instruction(0);
  HloInstruction* n = c->GetInstructionWithName("n");
  // Corrupt the graph behind the API's back: make the operand forget its user.
  const_cast<InstructionVector&>(p->users()).clear();
  EXPECT_THAT(Msg(VerifyHloModule(*module)),
              HasSubstr("instruction %n: is missing from the users of its operand %p"));
  const_cast<InstructionVector&>(p->users()).push_back(n);
  const_cast<InstructionVector&>(p->users()).push_back(c->root_instruction());
  EXPECT_THAT(Msg(VerifyHloModule(*module)),
              HasSubstr("instruction %p: lists %s as a user, but it does not use it"));
  const_cast<InstructionVector&>(p->users()).back() = n;
  EXPECT_THAT(Msg(VerifyHloModule(*module)), HasSubstr("instruction %p: lists user %n twice"));
}

// The users lists are checked by counting (operand, user) pairs: an instruction reading one
// operand twice counts it once.
TEST(HloVerifierTest, AcceptsAnOperandReadTwice) {
  EXPECT_TRUE(ParseAndVerify(R"(HloModule m
ENTRY %main {
  %p = f32[8]{0} parameter(0)
  %m = f32[8]{0} multiply(%p, %p)
  ROOT %a = f32[8]{0} add(%m, %p)
})").ok());
}

// A value read by many instructions keeps a set of its users beside the list; a user missing
// from the list alone is caught by the count.
TEST(HloVerifierTest, CatchesAUserMissingFromAWidelyReadValuesList) {
  HloModule module("m");
  HloBuilder b(&module, "main");
  HloInstruction* p = b.Parameter(0, ShapeUtil::MakeScalarShape(F32)).value();
  std::vector<HloInstruction*> negates;
  for (int i = 0; i < 20; ++i) negates.push_back(b.Negate(p).value());
  module.set_entry_computation(b.Build(b.Tuple(negates).value()).value());
  ASSERT_TRUE(VerifyHloModule(module).ok());
  const_cast<InstructionVector&>(p->users()).pop_back();
  EXPECT_THAT(Msg(VerifyHloModule(module)),
              HasSubstr("computation %main: reads 40 distinct operands but lists 39 users"));
}

TEST(HloVerifierTest, CatchesParameterNumbering) {
  auto module = SmallModule();
  module->entry_computation()->parameter_instruction(0)->set_parameter_number(3);
  EXPECT_THAT(Msg(VerifyHloModule(*module)),
              HasSubstr("computation %main, instruction %p: sits in parameter slot 0 but is "
                        "parameter(3)"));
}

TEST(HloVerifierTest, CatchesMissingRootAndEntry) {
  auto module = SmallModule();
  module->entry_computation()->set_root_instruction(nullptr);
  EXPECT_THAT(Msg(VerifyHloModule(*module)), HasSubstr("computation %main: has no root"));
  HloModule empty("e");
  EXPECT_THAT(Msg(VerifyHloModule(empty)), HasSubstr("no entry computation"));
}

TEST(HloVerifierTest, CatchesOperandFromAnotherComputation) {
  HloModule module("m");
  HloBuilder a(&module, "a");
  auto* x = a.Parameter(0, ShapeUtil::MakeScalarShape(F32)).value();
  module.set_entry_computation(a.Build(a.Negate(x).value()).value());
  HloBuilder b(&module, "b");
  auto* y = b.Parameter(0, ShapeUtil::MakeScalarShape(F32)).value();
  auto* neg = b.Negate(y).value();
  b.Build(neg).value();
  // ReplaceOperandWith checks only shapes; the verifier catches the cross-computation edge.
  ASSERT_TRUE(neg->ReplaceOperandWith(0, x).ok());
  EXPECT_THAT(Msg(VerifyHloModule(module)),
              HasSubstr("instruction %" + x->name() + ": lists %" + neg->name() +
                        " as a user, but it belongs to another computation"));
}

TEST(HloVerifierTest, CatchesACallOfTheEntry) {
  EXPECT_THAT(Msg(ParseAndVerify(R"(HloModule m
ENTRY %main (p: f32[]) -> f32[] {
  %p = f32[] parameter(0)
  ROOT %n = f32[] negate(%p)
}
%f (a: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  ROOT %c = f32[] call(%a), to_apply=%main
})")),
              HasSubstr("instruction %c: calls the entry computation"));
}

TEST(HloVerifierTest, CatchesAFusionComputationCalledByAnotherInstruction) {
  EXPECT_THAT(Msg(ParseAndVerify(R"(HloModule m
%fused (q: f32[4]) -> f32[4] {
  %q = f32[4]{0} parameter(0)
  ROOT %n = f32[4]{0} negate(%q)
}
ENTRY %main {
  %p = f32[4]{0} parameter(0)
  %f = f32[4]{0} fusion(%p), kind=kLoop, calls=%fused
  %c = f32[4]{0} call(%p), to_apply=%fused
  ROOT %t = (f32[4]{0}, f32[4]{0}) tuple(%f, %c)
})")),
              HasSubstr("instruction %c: calls %fused, the fusion computation of %f"));
}

TEST(HloVerifierTest, CatchesFusionMarkMismatch) {
  auto module = ParseHloModule(R"(HloModule m
%fused (q: f32[4]) -> f32[4] {
  %q = f32[4]{0} parameter(0)
  ROOT %n = f32[4]{0} negate(%q)
}
ENTRY %main {
  %p = f32[4]{0} parameter(0)
  ROOT %f = f32[4]{0} fusion(%p), kind=kLoop, calls=%fused
})").value();
  module->GetComputationWithName("fused")->SetFusionInstruction(
      module->entry_computation()->parameter_instruction(0));
  EXPECT_THAT(Msg(VerifyHloModule(*module)), HasSubstr("marked as a fusion computation"));
}

// Names are checked module-wide by their hashes: a repeat is found in another computation
// and named exactly.
TEST(HloVerifierTest, CatchesAnInstructionNameUsedTwice) {
  auto module = ParseHloModule(R"(HloModule m
%sum (q: f32[], y: f32[]) -> f32[] {
  %q = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(%q, %y)
}
ENTRY %main {
  %p = f32[8]{0} parameter(0)
  %z = f32[] constant(0)
  ROOT %r = f32[] reduce(%p, %z), dimensions={0}, to_apply=%sum
})").value();
  ASSERT_TRUE(VerifyHloModule(*module).ok());
  // The parser and the builder keep names unique: rename behind the API's back.
  const_cast<std::string&>(module->GetComputationWithName("sum")->GetInstructionWithName("q")->name()) = "p";
  EXPECT_THAT(Msg(VerifyHloModule(*module)), HasSubstr("instruction name %p is used twice in the module"));
}

// The verifier checks the elementwise ops of one or two operands by their result type
// (ShapeInference::InferredShapeMatches, building no shape): it must accept exactly what
// shape inference accepts and gives, for every such op, over operand types and dimensions
// that break each rule.
TEST(HloVerifierTest, ElementwiseShapesAreCheckedAsShapeInferenceGives) {
  const std::vector<PrimitiveType> types = {PRED, S32, F32};
  const std::vector<std::vector<int64_t>> dims = {{8}, {4}};
  auto param = [](PrimitiveType t, const std::vector<int64_t>& d) {
    auto p = HloInstruction::Create(HloOpcode::kParameter, Shape(t, d), {});
    p->set_parameter_number(0);
    return p;
  };
  int matches = 0, cases = 0;
  for (int i = 0; i < kHloOpcodeCount; ++i) {
    const HloOpcode op = static_cast<HloOpcode>(i);
    const int arity = HloOpcodeArity(op);
    if (!IsElementwiseOpcode(op) || (arity != 1 && arity != 2)) continue;
    for (PrimitiveType t0 : types) {
      for (PrimitiveType t1 : types) {
        for (const std::vector<int64_t>& d1 : dims) {
          if (arity == 1 && (t1 != t0 || d1 != dims[0])) continue;
          const auto lhs = param(t0, dims[0]);
          const auto rhs = param(t1, d1);
          std::vector<HloInstruction*> operands = {lhs.get()};
          if (arity == 2) operands.push_back(rhs.get());
          for (PrimitiveType declared_type : types) {
            for (const std::vector<int64_t>& declared_dims : dims) {
              auto instr = HloInstruction::Create(op, Shape(declared_type, declared_dims), operands);
              if (op == HloOpcode::kCompare) instr->set_comparison_direction(ComparisonDirection::kLt);
              const absl::StatusOr<Shape> inferred = ShapeInference::InferInstructionShape(*instr);
              const bool expected = inferred.ok() && ShapeUtil::Compatible(*inferred, instr->shape());
              EXPECT_EQ(ShapeInference::InferredShapeMatches(*instr), expected)
                  << HloOpcodeString(op) << " of " << lhs->shape() << (arity == 2 ? ", " : "")
                  << (arity == 2 ? rhs->shape().ToString() : "") << " declared " << instr->shape();
              matches += expected;
              ++cases;
            }
          }
        }
      }
    }
  }
  // Both answers occur for most ops (each op accepts some operand type at the first dims).
  EXPECT_GT(matches, 30);
  EXPECT_GT(cases - matches, 30 * 6);
}

}  // namespace
}  // namespace jx::hlo::verifier_test

#include "jx/compiler/passes/instruction_fusion.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "jx/compiler/hlo/hlo_parser.h"
#include "jx/compiler/hlo/hlo_pass.h"
#include "jx/compiler/hlo/hlo_verifier.h"
#include "jx/compiler/hlo/pattern_matcher.h"
#include "jx/compiler/passes/algebraic_simplifier.h"
#include "jx/compiler/passes/canonicalize_shapes.h"
#include "jx/compiler/passes/cse.h"
#include "pass_test_util.h"

namespace jx::hlo::instruction_fusion_test {
namespace {

namespace m = ::jx::hlo::match;
using ::jx::hlo::testing::ComputationLines;
using ::jx::hlo::testing::EntryLines;
using ::jx::hlo::testing::Opcodes;
using ::jx::hlo::testing::ParseAndRun;
using ::testing::ElementsAre;

std::unique_ptr<HloModule> Fuse(std::string_view text, bool expect_changed = true) {
  return ParseAndRun<InstructionFusion>(text, expect_changed);
}

// How many instructions of the module (all computations) have this opcode.
int CountOpcode(const HloModule& module, HloOpcode opcode) {
  int n = 0;
  for (const HloComputation* c : module.computations()) {
    for (const HloInstruction* instr : c->instructions()) n += instr->opcode() == opcode;
  }
  return n;
}

TEST(InstructionFusionTest, ElementwiseChainIsOneLoopFusion) {
  // tanh(x * 1.5 + 0.5) * x - exp(-x * x): 8 ops, 2 broadcasts of scalar constants.
  auto module = Fuse(R"(HloModule m
ENTRY %main {
  %x = f32[1024]{0} parameter(0)
  %c15 = f32[] constant(1.5)
  %c05 = f32[] constant(0.5)
  %b15 = f32[1024]{0} broadcast(%c15), dimensions={}
  %b05 = f32[1024]{0} broadcast(%c05), dimensions={}
  %mul1 = f32[1024]{0} multiply(%x, %b15)
  %add = f32[1024]{0} add(%mul1, %b05)
  %tanh = f32[1024]{0} tanh(%add)
  %mul2 = f32[1024]{0} multiply(%tanh, %x)
  %neg = f32[1024]{0} negate(%x)
  %mul3 = f32[1024]{0} multiply(%neg, %x)
  %exp = f32[1024]{0} exponential(%mul3)
  ROOT %sub = f32[1024]{0} subtract(%mul2, %exp)
})");
  EXPECT_THAT(EntryLines(*module),
              ElementsAre("%x = f32[1024]{0} parameter(0)",
                          "ROOT %fusion = f32[1024]{0} fusion(%x), kind=kLoop, "
                          "calls=%fused_computation"));
  const HloComputation* fused = module->GetComputationWithName("fused_computation");
  ASSERT_NE(fused, nullptr);
  EXPECT_TRUE(fused->IsFusionComputation());
  EXPECT_EQ(fused->num_parameters(), 1);
  EXPECT_EQ(fused->parameter_instruction(0)->name(), "param_0");
  // The scalar constants were cloned in, not passed as parameters.
  std::vector<std::string> opcodes = Opcodes(*fused);
  std::sort(opcodes.begin(), opcodes.end());
  EXPECT_THAT(opcodes, ElementsAre("add", "broadcast", "broadcast", "constant", "constant",
                                   "exponential", "multiply", "multiply", "multiply", "negate",
                                   "parameter", "subtract", "tanh"));
  EXPECT_EQ(fused->root_instruction()->opcode(), HloOpcode::kSubtract);
  EXPECT_EQ(module->computation_count(), 2);
}

TEST(InstructionFusionTest, ReduceOfElementwiseIsOneInputFusion) {
  auto module = Fuse(R"(HloModule m
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
ENTRY %main {
  %x = f32[4,8]{1,0} parameter(0)
  %mx = f32[4]{0} parameter(1)
  %bm = f32[4,8]{1,0} broadcast(%mx), dimensions={0}
  %d = f32[4,8]{1,0} subtract(%x, %bm)
  %e = f32[4,8]{1,0} exponential(%d)
  %zero = f32[] constant(0)
  ROOT %sum = f32[4]{0} reduce(%e, %zero), dimensions={1}, to_apply=%add
})");
  EXPECT_THAT(EntryLines(*module),
              ElementsAre("%x = f32[4,8]{1,0} parameter(0)", "%mx = f32[4]{0} parameter(1)",
                          "ROOT %fusion = f32[4]{0} fusion(%x, %mx), kind=kInput, "
                          "calls=%fused_computation"));
  const HloComputation* fused = module->GetComputationWithName("fused_computation");
  ASSERT_NE(fused, nullptr);
  EXPECT_TRUE(Match(fused->root_instruction(),
                    m::Reduce().WithOperands(
                        {m::Exp(m::Subtract(m::Parameter(), m::Broadcast(m::Parameter()))),
                         m::ConstantScalar(0)})));
  // The reducer is shared, not copied, and not fused itself.
  EXPECT_EQ(fused->root_instruction()->to_apply(), module->GetComputationWithName("add"));
  EXPECT_THAT(ComputationLines(*module->GetComputationWithName("add")),
              ElementsAre("%a = f32[] parameter(0)", "%b = f32[] parameter(1)",
                          "ROOT %s = f32[] add(%a, %b)"));
}

TEST(InstructionFusionTest, ArgmaxIotaFusesIntoItsVariadicReduce) {
  // argmax lowers to a (value, iota) reduce: the iota is computed inside the reduce's kernel
  // rather than written to memory; the init values stay constants.
  auto module = Fuse(R"(HloModule m
%arg (av: f32[], ai: s32[], xv: f32[], xi: s32[]) -> (f32[], s32[]) {
  %av = f32[] parameter(0)
  %ai = s32[] parameter(1)
  %xv = f32[] parameter(2)
  %xi = s32[] parameter(3)
  %gt = pred[] compare(%xv, %av), direction=GT
  %sv = f32[] select(%gt, %xv, %av)
  %si = s32[] select(%gt, %xi, %ai)
  ROOT %t = (f32[], s32[]) tuple(%sv, %si)
}
ENTRY %main {
  %x = f32[4,8]{1,0} parameter(0)
  %io = s32[4,8]{1,0} iota(), iota_dimension=1
  %v0 = f32[] constant(-inf)
  %i0 = s32[] constant(0)
  %r = (f32[4]{0}, s32[4]{0}) reduce(%x, %io, %v0, %i0), dimensions={1}, to_apply=%arg
  ROOT %i = s32[4]{0} get-tuple-element(%r), index=1
})");
  EXPECT_EQ(CountOpcode(*module, HloOpcode::kFusion), 1);
  const HloComputation* fused = module->GetComputationWithName("fused_computation");
  ASSERT_NE(fused, nullptr);
  EXPECT_TRUE(Match(fused->root_instruction(),
                    m::Reduce().WithOperands({m::Parameter(), m::Iota(), m::ConstantScalar(), m::ConstantScalar()})));
}

TEST(InstructionFusionTest, SoftmaxKeepsTheSharedExponentialInOneKernel) {
  auto module = Fuse(R"(HloModule m
%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %mx = f32[] maximum(%a, %b)
}
%add (c: f32[], d: f32[]) -> f32[] {
  %c = f32[] parameter(0)
  %d = f32[] parameter(1)
  ROOT %s = f32[] add(%c, %d)
}
ENTRY %main {
  %x = f32[4,8]{1,0} parameter(0)
  %ninf = f32[] constant(-inf)
  %m = f32[4]{0} reduce(%x, %ninf), dimensions={1}, to_apply=%max
  %bm = f32[4,8]{1,0} broadcast(%m), dimensions={0}
  %sub = f32[4,8]{1,0} subtract(%x, %bm)
  %e = f32[4,8]{1,0} exponential(%sub)
  %zero = f32[] constant(0)
  %sum = f32[4]{0} reduce(%e, %zero), dimensions={1}, to_apply=%add
  %bs = f32[4,8]{1,0} broadcast(%sum), dimensions={0}
  ROOT %div = f32[4,8]{1,0} divide(%e, %bs)
})");
  // exp has two consumers (the sum and the divide): it is computed once, in its own loop
  // fusion, and both consumers read it.
  EXPECT_EQ(CountOpcode(*module, HloOpcode::kExp), 1);
  const HloInstruction* root = module->entry_computation()->root_instruction();
  HloInstruction* exp_fusion = nullptr;
  ASSERT_TRUE(Match(const_cast<HloInstruction*>(root),
                    m::Fusion().WithOperands(
                        {m::Fusion().CaptureInto(&exp_fusion), m::Reduce()})))
      << module->ToString();
  EXPECT_EQ(root->fusion_kind(), FusionKind::kLoop);
  EXPECT_EQ(exp_fusion->fusion_kind(), FusionKind::kLoop);
  EXPECT_TRUE(Match(exp_fusion->fused_instructions_computation()->root_instruction(),
                    m::Exp(m::Subtract(m::Parameter(), m::Broadcast(m::Parameter())))));
  EXPECT_TRUE(Match(root->fused_instructions_computation()->root_instruction(),
                    m::Divide(m::Parameter(), m::Broadcast(m::Parameter()))));
  // A reduce alone (its input is a fusion or a parameter) is left as a plain reduce.
  EXPECT_EQ(CountOpcode(*module, HloOpcode::kFusion), 2);
  // Names as XLA gives them: the first fusion built (the consumer) is %fusion.
  EXPECT_EQ(root->name(), "fusion");
  EXPECT_EQ(exp_fusion->name(), "fusion.1");
  const HloComputation* exp_fused = exp_fusion->fused_instructions_computation();
  EXPECT_EQ(exp_fused->name(), "fused_computation.1");
  EXPECT_EQ(exp_fused->parameter_instruction(0)->name(), "param_0.1");
  EXPECT_EQ(exp_fused->parameter_instruction(1)->name(), "param_1.1");
}

TEST(InstructionFusionTest, DotWithBiasAndTanhIsOneOutputFusion) {
  auto module = Fuse(R"(HloModule m
ENTRY %main {
  %x = f32[2,3]{1,0} parameter(0)
  %w = f32[3,4]{1,0} parameter(1)
  %b = f32[4]{0} parameter(2)
  %dot = f32[2,4]{1,0} dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %bb = f32[2,4]{1,0} broadcast(%b), dimensions={1}
  %add = f32[2,4]{1,0} add(%dot, %bb)
  ROOT %t = f32[2,4]{1,0} tanh(%add)
})");
  EXPECT_THAT(EntryLines(*module),
              ElementsAre("%x = f32[2,3]{1,0} parameter(0)", "%w = f32[3,4]{1,0} parameter(1)",
                          "%b = f32[4]{0} parameter(2)",
                          "ROOT %fusion = f32[2,4]{1,0} fusion(%x, %w, %b), kind=kOutput, "
                          "calls=%fused_computation"));
  const HloComputation* fused = module->GetComputationWithName("fused_computation");
  EXPECT_TRUE(Match(fused->root_instruction(),
                    m::Tanh(m::Add(m::Dot(m::Parameter(), m::Parameter()),
                                   m::Broadcast(m::Parameter())))));
}

// A bf16 dot as TpuNumerics writes it (f32 accumulation, then a rounding convert) read by
// two consumers. By default the cheap convert is duplicated into both, which then read the
// dot's f32 result from memory; with prefer_output_fusion (the TPU's) the convert stays
// with the dot as its epilogue, the output fusion writes bf16 and both consumers read that.
constexpr char kRoundedDotWithTwoConsumers[] = R"(HloModule m
ENTRY %main {
  %x = bf16[8,16]{1,0} parameter(0)
  %w = bf16[16,32]{1,0} parameter(1)
  %y = bf16[8,32]{1,0} parameter(2)
  %xf = f32[8,16]{1,0} convert(%x)
  %wf = f32[16,32]{1,0} convert(%w)
  %dot = f32[8,32]{1,0} dot(%xf, %wf), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %round = bf16[8,32]{1,0} convert(%dot)
  %mul = bf16[8,32]{1,0} multiply(%round, %y)
  %neg = bf16[8,32]{1,0} negate(%mul)
  %add = bf16[8,32]{1,0} add(%round, %y)
  %abs = bf16[8,32]{1,0} abs(%add)
  ROOT %t = (bf16[8,32]{1,0}, bf16[8,32]{1,0}) tuple(%neg, %abs)
})";

TEST(InstructionFusionTest, SharedRoundingConvertIsDuplicatedByDefault) {
  auto module = Fuse(kRoundedDotWithTwoConsumers);
  EXPECT_EQ(CountOpcode(*module, HloOpcode::kConvert), 4);  // %round cloned into both
  const HloInstruction* dot = module->entry_computation()->GetInstructionWithName("dot");
  ASSERT_NE(dot, nullptr);  // unfused: its f32 result goes to memory
  EXPECT_EQ(dot->shape().element_type(), PrimitiveType::F32);
  EXPECT_EQ(dot->user_count(), 2);
}

TEST(InstructionFusionTest, PreferOutputFusionKeepsTheSoleEpilogueWithTheDot) {
  auto module = ParseAndRun<InstructionFusion>(kRoundedDotWithTwoConsumers, true,
                                               InstructionFusion({.prefer_output_fusion = true}));
  EXPECT_EQ(CountOpcode(*module, HloOpcode::kConvert), 3);  // %round once
  const HloComputation* entry = module->entry_computation();
  EXPECT_EQ(entry->GetInstructionWithName("dot"), nullptr);
  const HloInstruction* output = nullptr;
  int loops = 0;
  for (const HloInstruction* instr : entry->instructions()) {
    if (instr->opcode() != HloOpcode::kFusion) continue;
    if (instr->fusion_kind() == FusionKind::kOutput) output = instr;
    loops += instr->fusion_kind() == FusionKind::kLoop;
  }
  ASSERT_NE(output, nullptr);
  EXPECT_EQ(loops, 2);
  EXPECT_EQ(output->shape().element_type(), PrimitiveType::BF16);  // written as bf16
  EXPECT_TRUE(Match(output->fused_instructions_computation()->root_instruction(),
                    m::Convert(m::Dot(m::Parameter(), m::Parameter()))));
  EXPECT_EQ(output->user_count(), 2);
  for (const HloInstruction* user : output->users()) EXPECT_EQ(user->fusion_kind(), FusionKind::kLoop);
}

// The preference is for a contraction's only user: a convert of a dot that something else
// also reads is duplicated as before (the dot's result is written anyway).
TEST(InstructionFusionTest, PreferOutputFusionLeavesAnEpilogueOfASharedDotAlone) {
  auto module = ParseAndRun<InstructionFusion>(R"(HloModule m
ENTRY %main {
  %x = f32[8,16]{1,0} parameter(0)
  %w = f32[16,32]{1,0} parameter(1)
  %y = bf16[8,32]{1,0} parameter(2)
  %dot = f32[8,32]{1,0} dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %round = bf16[8,32]{1,0} convert(%dot)
  %mul = bf16[8,32]{1,0} multiply(%round, %y)
  %add = bf16[8,32]{1,0} add(%round, %y)
  ROOT %t = (bf16[8,32]{1,0}, bf16[8,32]{1,0}, f32[8,32]{1,0}) tuple(%mul, %add, %dot)
})", true, InstructionFusion({.prefer_output_fusion = true}));
  EXPECT_EQ(CountOpcode(*module, HloOpcode::kConvert), 2);
  EXPECT_NE(module->entry_computation()->GetInstructionWithName("dot"), nullptr);
}

// A collective matmul's reduce-scatter step (a loop body): the sum a ring shift brings is
// added to this step's partial product. The dot and its rounding convert are one kernel that
// does not read the shift, so the scheduler can run it while the shift is in flight; the add
// that reads the shift is a kernel of its own. (Fused as the dot's epilogue, the dot
// waited for the shift once it ran asynchronously: PaLM's reduce-scatter loops exposed ~95% of
// their shifts.) A collective the dot reads itself does not keep its epilogue out.
TEST(InstructionFusionTest, AnEpilogueReadingACollectiveLeavesTheDotFree) {
  auto module = ParseAndRun<InstructionFusion>(R"(HloModule m
ENTRY %main {
  %acc = bf16[8,32]{1,0} parameter(0)
  %x = f32[8,16]{1,0} parameter(1)
  %w = f32[16,32]{1,0} parameter(2)
  %shifted = bf16[8,32]{1,0} collective-permute(bf16[8,32]{1,0} %acc), channel_id=1, source_target_pairs={{0,1},{1,0}}
  %dot = f32[8,32]{1,0} dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %round = bf16[8,32]{1,0} convert(%dot)
  ROOT %add = bf16[8,32]{1,0} add(%shifted, %round)
})", true, InstructionFusion({.prefer_output_fusion = true}));
  HloInstruction* root = module->entry_computation()->root_instruction();
  ASSERT_TRUE(Match(root, m::Add(m::Op(HloOpcode::kCollectivePermute), m::Fusion()))) << module->ToString();
  const HloInstruction* output = root->operand(1);
  EXPECT_EQ(output->fusion_kind(), FusionKind::kOutput);
  EXPECT_TRUE(Match(output->fused_instructions_computation()->root_instruction(),
                    m::Convert(m::Dot(m::Parameter(), m::Parameter()))));

  // The dot reads the shifted value itself: the add is its epilogue as before.
  auto reads = ParseAndRun<InstructionFusion>(R"(HloModule m
ENTRY %main {
  %acc = f32[8,16]{1,0} parameter(0)
  %w = f32[16,16]{1,0} parameter(1)
  %shifted = f32[8,16]{1,0} collective-permute(f32[8,16]{1,0} %acc), channel_id=1, source_target_pairs={{0,1},{1,0}}
  %dot = f32[8,16]{1,0} dot(%shifted, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT %add = f32[8,16]{1,0} add(%shifted, %dot)
})", true, InstructionFusion({.prefer_output_fusion = true}));
  const HloInstruction* fused = reads->entry_computation()->root_instruction();
  ASSERT_EQ(fused->opcode(), HloOpcode::kFusion);
  EXPECT_EQ(fused->fusion_kind(), FusionKind::kOutput);
}

TEST(InstructionFusionTest, FusedDotKeepsItsOperandPrecision) {
  auto module = Fuse(R"(HloModule m
ENTRY %main {
  %x = f32[2,3]{1,0} parameter(0)
  %w = f32[3,4]{1,0} parameter(1)
  %dot = f32[2,4]{1,0} dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}, operand_precision={highest,highest}
  ROOT %t = f32[2,4]{1,0} tanh(%dot)
})");
  const HloComputation* fused = module->GetComputationWithName("fused_computation");
  ASSERT_NE(fused, nullptr);
  const HloInstruction* dot = fused->root_instruction()->operand(0);
  ASSERT_EQ(dot->opcode(), HloOpcode::kDot);
  EXPECT_EQ(dot->precision_config(),
            (PrecisionConfig{{Precision::kHighest, Precision::kHighest}}));
}

TEST(InstructionFusionTest, ReluEpilogueOfConvolutionFusesButItsInputsStayOutside) {
  auto module = Fuse(R"(HloModule m
ENTRY %main {
  %in = f32[1,5,5,2]{3,2,1,0} parameter(0)
  %k = f32[3,3,2,4]{3,2,1,0} parameter(1)
  %neg = f32[1,5,5,2]{3,2,1,0} negate(%in)
  %conv = f32[1,3,3,4]{3,2,1,0} convolution(%neg, %k), window={size=3x3}, dim_labels=b01f_01io->b01f
  %zero = f32[] constant(0)
  %z = f32[1,3,3,4]{3,2,1,0} broadcast(%zero), dimensions={}
  ROOT %relu = f32[1,3,3,4]{3,2,1,0} maximum(%conv, %z)
})");
  const HloInstruction* root = module->entry_computation()->root_instruction();
  ASSERT_EQ(root->opcode(), HloOpcode::kFusion);
  EXPECT_EQ(root->fusion_kind(), FusionKind::kOutput);
  EXPECT_TRUE(Match(root->fused_instructions_computation()->root_instruction(),
                    m::Maximum(m::Op(HloOpcode::kConvolution),
                               m::Broadcast(m::ConstantScalar(0)))));
  // The convolution's input is a GEMM operand: the negate stays a separate (unfused) op.
  EXPECT_EQ(root->operand(0)->opcode(), HloOpcode::kNegate);
}

TEST(InstructionFusionTest, ConvolutionWithBiasAndReluIsOneOutputFusion) {
  // NCHW: the bias broadcasts along dim 1; both the broadcast and the relu join the conv.
  auto module = Fuse(R"(HloModule m
ENTRY %main {
  %in = f32[2,3,6,6]{3,2,1,0} parameter(0)
  %k = f32[4,3,3,3]{3,2,1,0} parameter(1)
  %b = f32[4]{0} parameter(2)
  %conv = f32[2,4,6,6]{3,2,1,0} convolution(%in, %k), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01
  %bb = f32[2,4,6,6]{3,2,1,0} broadcast(%b), dimensions={1}
  %add = f32[2,4,6,6]{3,2,1,0} add(%conv, %bb)
  %zero = f32[] constant(0)
  %z = f32[2,4,6,6]{3,2,1,0} broadcast(%zero), dimensions={}
  ROOT %relu = f32[2,4,6,6]{3,2,1,0} maximum(%add, %z)
})");
  EXPECT_THAT(EntryLines(*module),
              ElementsAre("%in = f32[2,3,6,6]{3,2,1,0} parameter(0)", "%k = f32[4,3,3,3]{3,2,1,0} parameter(1)",
                          "%b = f32[4]{0} parameter(2)",
                          "ROOT %fusion = f32[2,4,6,6]{3,2,1,0} fusion(%in, %k, %b), kind=kOutput, "
                          "calls=%fused_computation"));
  const HloComputation* fused = module->GetComputationWithName("fused_computation");
  EXPECT_TRUE(Match(fused->root_instruction(),
                    m::Maximum(m::Add(m::Op(HloOpcode::kConvolution), m::Broadcast(m::Parameter())),
                               m::Broadcast(m::ConstantScalar(0)))));
}

TEST(InstructionFusionTest, ContractionWithNonElementwiseConsumerIsNotOutputFused) {
  auto module = Fuse(R"(HloModule m
ENTRY %main {
  %x = f32[2,3]{1,0} parameter(0)
  %w = f32[3,4]{1,0} parameter(1)
  %dot = f32[2,4]{1,0} dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %t = f32[4,2]{1,0} transpose(%dot), dimensions={1,0}
  ROOT %n = f32[4,2]{1,0} negate(%t)
})");
  const HloInstruction* root = module->entry_computation()->root_instruction();
  ASSERT_EQ(root->opcode(), HloOpcode::kFusion);
  EXPECT_EQ(root->fusion_kind(), FusionKind::kLoop);
  EXPECT_EQ(root->operand(0)->opcode(), HloOpcode::kDot);
}

TEST(InstructionFusionTest, ExpensiveSharedProducerIsNotDuplicatedCheapOneIs) {
  auto module = Fuse(R"(HloModule m
ENTRY %main {
  %p = f32[16]{0} parameter(0)
  %e = f32[16]{0} exponential(%p)
  %n = f32[16]{0} negate(%p)
  %a1 = f32[16]{0} add(%e, %n)
  %s1 = f32[16]{0} sine(%a1)
  %a2 = f32[16]{0} multiply(%e, %n)
  %s2 = f32[16]{0} cosine(%a2)
  ROOT %t = (f32[16]{0}, f32[16]{0}) tuple(%s1, %s2)
})");
  EXPECT_EQ(CountOpcode(*module, HloOpcode::kExp), 1);
  EXPECT_EQ(CountOpcode(*module, HloOpcode::kNegate), 2);  // cloned into both fusions
  const HloComputation* entry = module->entry_computation();
  EXPECT_THAT(Opcodes(*entry),
              ElementsAre("parameter", "exponential", "fusion", "fusion", "tuple"));
  const HloInstruction* e = entry->GetInstructionWithName("e");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->user_count(), 2);
  for (const HloInstruction* user : e->users()) {
    EXPECT_EQ(user->opcode(), HloOpcode::kFusion);
    EXPECT_EQ(user->fusion_kind(), FusionKind::kLoop);
  }
}

// Members only the group reads move into the fused computation as they are (their names
// and ids stay: fusing a big program copies nothing); a member another group still reads is
// copied under a new name, and the last group to read it takes the original.
TEST(InstructionFusionTest, MembersMoveIntoTheFusionSharedOnesAreCopied) {
  auto parsed = ParseHloModule(R"(HloModule m
ENTRY %main {
  %p = f32[16]{0} parameter(0)
  %n = f32[16]{0} negate(%p)
  %a1 = f32[16]{0} add(%n, %p)
  %s1 = f32[16]{0} sine(%a1)
  %a2 = f32[16]{0} multiply(%n, %p)
  %s2 = f32[16]{0} cosine(%a2)
  ROOT %t = (f32[16]{0}, f32[16]{0}) tuple(%s1, %s2)
})");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  std::unique_ptr<HloModule> module = std::move(*parsed);
  const HloComputation* entry = module->entry_computation();
  const int64_t s1_id = entry->GetInstructionWithName("s1")->unique_id();
  ASSERT_TRUE(InstructionFusion().Run(module.get()).value());
  EXPECT_THAT(Opcodes(*entry), ElementsAre("parameter", "fusion", "fusion", "tuple"));
  std::vector<std::string> negates;
  for (const HloInstruction* fusion : entry->root_instruction()->operands()) {
    const HloComputation* fused = fusion->fused_instructions_computation();
    for (const HloInstruction* instr : fused->instructions()) {
      if (instr->opcode() == HloOpcode::kNegate) negates.push_back(instr->name());
    }
  }
  const HloComputation* first = entry->root_instruction()->operand(0)->fused_instructions_computation();
  const HloInstruction* s1 = first->root_instruction();
  EXPECT_EQ(s1->name(), "s1");
  EXPECT_EQ(s1->unique_id(), s1_id);
  EXPECT_EQ(s1->operand(0)->name(), "a1");
  EXPECT_EQ(entry->GetInstructionWithName("s1"), nullptr);
  ASSERT_EQ(negates.size(), 2u);
  EXPECT_EQ(std::count(negates.begin(), negates.end(), "n"), 1) << module->ToString();
  // Consumers first: the planner meets %s2 before %s1, so %s2's group is built first and
  // copies %n; %s1's, the last to read it, takes the original.
  const HloComputation* second = entry->root_instruction()->operand(1)->fused_instructions_computation();
  EXPECT_NE(first->GetInstructionWithName("n"), nullptr);
  EXPECT_EQ(second->GetInstructionWithName("n"), nullptr);
  EXPECT_TRUE(VerifyHloModule(*module).ok());
}

// Groups are built in the order the planner started them (consumers first: %s3's, %s2's,
// %s1's). %n, read by all three, is copied into the first two and moved into the last.
TEST(InstructionFusionTest, AMemberReadByThreeGroupsMovesIntoTheLastOneBuilt) {
  auto module = Fuse(R"(HloModule m
ENTRY %main {
  %p = f32[16]{0} parameter(0)
  %n = f32[16]{0} negate(%p)
  %a1 = f32[16]{0} add(%n, %p)
  %s1 = f32[16]{0} sine(%a1)
  %a2 = f32[16]{0} multiply(%n, %p)
  %s2 = f32[16]{0} cosine(%a2)
  %a3 = f32[16]{0} subtract(%n, %p)
  %s3 = f32[16]{0} exponential(%a3)
  ROOT %t = (f32[16]{0}, f32[16]{0}, f32[16]{0}) tuple(%s1, %s2, %s3)
})");
  const HloInstruction* root = module->entry_computation()->root_instruction();
  ASSERT_EQ(root->operand_count(), 3);
  std::vector<std::string> negates;
  for (const HloInstruction* fusion : root->operands()) {
    ASSERT_EQ(fusion->opcode(), HloOpcode::kFusion);
    for (const HloInstruction* instr : fusion->fused_instructions_computation()->instructions()) {
      if (instr->opcode() == HloOpcode::kNegate) negates.push_back(instr->name());
    }
  }
  ASSERT_EQ(negates.size(), 3u);
  EXPECT_EQ(negates[0], "n");
  EXPECT_NE(negates[1], "n");
  EXPECT_NE(negates[2], "n");
  EXPECT_EQ(module->entry_computation()->GetInstructionWithName("n"), nullptr);
}

// A scan RNN's backward body (issue 16): the [256] update m = (p1 + p2) * p3 feeds both a
// [256] consumer and an outer product through broadcasts. Fused into the outer product it
// would be recomputed for each of 65536 elements; it is computed once instead, in its own
// fusion, and the outer product reads it through the broadcast.
// A residual stream: r_i = r_(i-1) + r_(i-1), each read by its own reduction too. Duplicating
// the cheap adds into every consumer would copy the whole chain into each later reduction
// (n^2 / 2 adds); a duplicated add's producer stays out, so the fused adds stay linear.
TEST(InstructionFusionTest, ChainOfSharedCheapOpsIsNotCopiedIntoEveryConsumer) {
  constexpr int kDepth = 16;
  std::string text = "HloModule m\n%sum {\n  %a = f32[] parameter(0)\n  %b = f32[] parameter(1)\n"
                     "  ROOT %s = f32[] add(%a, %b)\n}\nENTRY %main {\n  %r0 = f32[64]{0} parameter(0)\n"
                     "  %zero = f32[] constant(0)\n";
  std::string outs;
  for (int i = 1; i <= kDepth; ++i) {
    const std::string r = "%r" + std::to_string(i), prev = "%r" + std::to_string(i - 1);
    text += "  " + r + " = f32[64]{0} add(" + prev + ", " + prev + ")\n";
    text += "  %s" + std::to_string(i) + " = f32[] reduce(" + r + ", %zero), dimensions={0}, to_apply=%sum\n";
    outs += "f32[], ";
  }
  text += "  ROOT %t = (" + outs + "f32[64]{0}) tuple(";
  for (int i = 1; i <= kDepth; ++i) text += "%s" + std::to_string(i) + ", ";
  text += "%r" + std::to_string(kDepth) + ")\n}\n";
  auto module = Fuse(text);
  const int adds = CountOpcode(*module, HloOpcode::kAdd) - 1;  // the reducer's add
  EXPECT_LE(adds, 2 * kDepth) << module->ToString();
  EXPECT_GE(adds, kDepth);
}

// A tree reduction by halving (round k adds the two halves of round k-1's value): fused
// whole, the first round would be emitted once per leaf of the tree (2^depth times; a generic
// reduce of 270000 elements took seconds to compile as a tile program). As XLA's
// FusionNodeIndexingEvaluation, a value emitted more than 15 times stays outside: rounds
// r1..r4 (r4 emitted 16 times by r8) form one fusion and r5..r8 another.
TEST(InstructionFusionTest, HalvingTreeSplitsWhereCodeDuplicationPassesFifteen) {
  constexpr int kDepth = 8;
  std::string text = "HloModule m\nENTRY %main {\n  %r0 = f32[256]{0} parameter(0)\n";
  for (int i = 1, n = 128; i <= kDepth; ++i, n /= 2) {
    const std::string r = "%r" + std::to_string(i), prev = "%r" + std::to_string(i - 1), t = "f32[" + std::to_string(n) + "]{0}";
    text += "  %a" + std::to_string(i) + " = " + t + " slice(" + prev + "), slice={[0:" + std::to_string(n) + "]}\n";
    text += "  %b" + std::to_string(i) + " = " + t + " slice(" + prev + "), slice={[" + std::to_string(n) + ":" +
            std::to_string(2 * n) + "]}\n";
    text += std::string("  ") + (i == kDepth ? "ROOT " : "") + r + " = " + t + " add(%a" + std::to_string(i) + ", %b" +
            std::to_string(i) + ")\n";
  }
  text += "}\n";
  auto module = Fuse(text);
  EXPECT_EQ(CountOpcode(*module, HloOpcode::kFusion), 2) << module->ToString();
  EXPECT_EQ(CountOpcode(*module, HloOpcode::kAdd), kDepth) << module->ToString();  // no copies
}

TEST(InstructionFusionTest, SharedProducerOfAnExpandingBroadcastIsComputedOnce) {
  auto module = Fuse(R"(HloModule m
ENTRY %main {
  %w = f32[256,256]{1,0} parameter(0)
  %p1 = f32[256]{0} parameter(1)
  %p2 = f32[256]{0} parameter(2)
  %p3 = f32[256]{0} parameter(3)
  %x = f32[256]{0} parameter(4)
  %a = f32[256]{0} add(%p1, %p2)
  %m = f32[256]{0} multiply(%a, %p3)
  %bm = f32[256,256]{1,0} broadcast(%m), dimensions={1}
  %bx = f32[256,256]{1,0} broadcast(%x), dimensions={0}
  %o = f32[256,256]{1,0} multiply(%bm, %bx)
  %u = f32[256,256]{1,0} add(%w, %o)
  %n = f32[256]{0} negate(%m)
  %e = f32[256]{0} exponential(%n)
  ROOT %t = (f32[256,256]{1,0}, f32[256]{0}) tuple(%u, %e)
})");
  EXPECT_EQ(CountOpcode(*module, HloOpcode::kAdd), 2);       // once for m, once for u
  EXPECT_EQ(CountOpcode(*module, HloOpcode::kMultiply), 2);  // once for m, once for o
  const HloInstruction* root = module->entry_computation()->root_instruction();
  const HloInstruction* update = root->operand(0);
  ASSERT_EQ(update->opcode(), HloOpcode::kFusion) << module->ToString();
  EXPECT_TRUE(Match(update->fused_instructions_computation()->root_instruction(),
                    m::Add(m::Parameter(), m::Multiply(m::Broadcast(m::Parameter()),
                                                       m::Broadcast(m::Parameter())))))
      << module->ToString();
  // A producer read only through the broadcast still fuses (it is computed nowhere else).
  auto single = Fuse(R"(HloModule m
ENTRY %main {
  %p1 = f32[256]{0} parameter(0)
  %p2 = f32[256]{0} parameter(1)
  %a = f32[256]{0} add(%p1, %p2)
  %b = f32[256,256]{1,0} broadcast(%a), dimensions={1}
  ROOT %e = f32[256,256]{1,0} exponential(%b)
})");
  EXPECT_EQ(CountOpcode(*single, HloOpcode::kFusion), 1);
}

TEST(InstructionFusionTest, DoesNotFuseAcrossOpaqueOrControlOps) {
  Fuse(R"(HloModule m
%cmp (a: f32[], b: f32[]) -> pred[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %lt = pred[] compare(%a, %b), direction=LT
}
ENTRY %main {
  %p = f32[8]{0} parameter(0)
  %n = f32[8]{0} negate(%p)
  %cc = f32[8]{0} custom-call(%n), custom_call_target="opaque"
  %e = f32[8]{0} exponential(%cc)
  %srt = f32[8]{0} sort(%e), dimensions={0}, to_apply=%cmp
  %s = f32[8]{0} sine(%srt)
  %t = (f32[8]{0}, f32[8]{0}) tuple(%s, %n)
  %g = f32[8]{0} get-tuple-element(%t), index=0
  ROOT %c = f32[8]{0} cosine(%g)
})",
       false);
}

TEST(InstructionFusionTest, FusesInsideWhileBodiesNotInReducers) {
  auto module = Fuse(R"(HloModule m
%cond (s: f32[8]) -> pred[] {
  %s = f32[8]{0} parameter(0)
  ROOT %f = pred[] constant(false)
}
%body (v: f32[8]) -> f32[8] {
  %v = f32[8]{0} parameter(0)
  %nv = f32[8]{0} negate(%v)
  ROOT %ev = f32[8]{0} exponential(%nv)
}
%sum (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  %na = f32[] negate(%a)
  ROOT %r = f32[] add(%na, %b)
}
ENTRY %main {
  %p = f32[8]{0} parameter(0)
  %w = f32[8]{0} while(%p), condition=%cond, body=%body
  %zero = f32[] constant(0)
  ROOT %red = f32[] reduce(%w, %zero), dimensions={0}, to_apply=%sum
})");
  const HloComputation* body = module->GetComputationWithName("body");
  EXPECT_THAT(ComputationLines(*body),
              ElementsAre("%v = f32[8]{0} parameter(0)",
                          "ROOT %fusion = f32[8]{0} fusion(%v), kind=kLoop, "
                          "calls=%fused_computation"));
  EXPECT_EQ(module->GetComputationWithName("sum")->instruction_count(), 4);
  // The reduce's input is a while result: nothing fuses into it.
  EXPECT_EQ(module->entry_computation()->root_instruction()->opcode(), HloOpcode::kReduce);
}

TEST(InstructionFusionTest, NonScalarConstantsArePassedAsParameters) {
  auto module = Fuse(R"(HloModule m
ENTRY %main {
  %p = f32[3]{0} parameter(0)
  %c = f32[3]{0} constant({1, 2, 3})
  %m = f32[3]{0} multiply(%p, %c)
  %i = s32[3]{0} iota(), iota_dimension=0
  %fi = f32[3]{0} convert(%i)
  ROOT %a = f32[3]{0} add(%m, %fi)
})");
  EXPECT_THAT(EntryLines(*module),
              ElementsAre("%p = f32[3]{0} parameter(0)", "%c = f32[3]{0} constant({1, 2, 3})",
                          "ROOT %fusion = f32[3]{0} fusion(%p, %c), kind=kLoop, "
                          "calls=%fused_computation"));
  const HloComputation* fused = module->GetComputationWithName("fused_computation");
  EXPECT_EQ(fused->parameter_instruction(1)->name(), "param_1");
  EXPECT_TRUE(Match(fused->root_instruction(),
                    m::Add(m::Multiply(m::Parameter(), m::Parameter()),
                           m::Convert(m::Iota()))));
}

TEST(InstructionFusionTest, LoneOpsStayUnfused) {
  Fuse(R"(HloModule m
ENTRY %main {
  %p = f32[8]{0} parameter(0)
  ROOT %n = f32[8]{0} negate(%p)
})",
       false);
}

TEST(InstructionFusionTest, DeepChainIsOneFusionWithoutRecursion) {
  std::string text = "HloModule m\nENTRY %main {\n  %v0 = f32[4]{0} parameter(0)\n";
  const int n = 20000;
  for (int i = 1; i <= n; ++i) {
    text += "  %v" + std::to_string(i) + " = f32[4]{0} " + (i % 2 ? "negate" : "sine") +
            "(%v" + std::to_string(i - 1) + ")\n";
  }
  text += "}\n";
  auto module = ParseAndRun<InstructionFusion>(text, true);
  EXPECT_EQ(module->entry_computation()->instruction_count(), 2);
  EXPECT_EQ(module->GetComputationWithName("fused_computation")->instruction_count(), n + 1);
}

// An input only the group's moving members read (%p, read by a whole chain) is rewired to
// its fused parameter in one edit of both user lists; one also read outside (%q, read by the
// tuple) is rewired member by member. Both leave the same edges: the verifier checks every
// operand is listed as a user and the reverse, and the values are the same.
TEST(InstructionFusionTest, InputsReadOnlyInsideAndAlsoOutsideAreBothRewired) {
  std::string text =
      "HloModule m\nENTRY %main {\n  %p = f32[8]{0} parameter(0)\n"
      "  %q = f32[8]{0} parameter(1)\n  %v0 = f32[8]{0} sine(%p)\n";
  const int n = 40;  // 20 multiplies read %p: past the users' hash-set threshold
  for (int i = 1; i <= n; ++i) {
    const std::string prev = "%v" + std::to_string(i - 1);
    text += "  %v" + std::to_string(i) + " = f32[8]{0} " +
            (i % 2 ? "multiply(" + prev + ", %p)" : "sine(" + prev + ")") + "\n";
  }
  text += "  %w = f32[8]{0} add(%v" + std::to_string(n) + ", %q)\n" +
          "  ROOT %t = (f32[8]{0}, f32[8]{0}) tuple(%w, %q)\n}\n";
  auto module = ParseAndRun<InstructionFusion>(text, true);
  const HloComputation* entry = module->entry_computation();
  const HloInstruction* fusion = entry->root_instruction()->operand(0);
  ASSERT_EQ(fusion->opcode(), HloOpcode::kFusion);
  const HloInstruction* p = entry->GetInstructionWithName("p");
  const HloInstruction* q = entry->GetInstructionWithName("q");
  EXPECT_THAT(p->users(), ElementsAre(fusion));
  EXPECT_EQ(q->user_count(), 2);
  const HloComputation* fused = fusion->fused_instructions_computation();
  EXPECT_EQ(fused->instruction_count(), n + 4);  // %v0..%v40, %w and two parameters
  ASSERT_EQ(fusion->operand_count(), 2);
  for (int64_t k = 0; k < 2; ++k) {
    const HloInstruction* param = fused->parameter_instruction(k);
    const HloInstruction* outside = fusion->operand(k);
    EXPECT_EQ(param->user_count(), outside == p ? n / 2 + 1 : 1) << param->name();
    for (const HloInstruction* user : param->users()) {
      EXPECT_EQ(user->parent(), fused);
      EXPECT_TRUE(user->IsUserOf(param)) << user->name();
      EXPECT_TRUE(param->HasUser(user)) << user->name();
      EXPECT_FALSE(outside->HasUser(user)) << user->name();
    }
  }
}

TEST(InstructionFusionTest, SimplifyCanonicalizeCseThenFuseIsOneKernel) {
  auto module = ParseHloModule(R"(HloModule m
ENTRY %main {
  %a = f32[2,3]{1,0} parameter(0)
  %b = f32[2,3]{1,0} parameter(1)
  %ta = f32[3,2]{1,0} transpose(%a), dimensions={1,0}
  %tb = f32[3,2]{1,0} transpose(%b), dimensions={1,0}
  %one = f32[] constant(1)
  %ob = f32[3,2]{1,0} broadcast(%one), dimensions={}
  %m = f32[3,2]{1,0} multiply(%ta, %ob)
  %e1 = f32[3,2]{1,0} exponential(%m)
  %e2 = f32[3,2]{1,0} exponential(%ta)
  %s = f32[3,2]{1,0} add(%e1, %e2)
  ROOT %r = f32[3,2]{1,0} subtract(%s, %tb)
})")
                    .value();
  auto original = module->Clone().value();
  HloPassPipeline pipeline("simplify-and-fuse");
  pipeline.AddPass<AlgebraicSimplifier>();
  pipeline.AddPass<HloCSE>();
  pipeline.AddPass<CanonicalizeShapes>();
  pipeline.AddPass<InstructionFusion>();
  ASSERT_TRUE(pipeline.Run(module.get()).value());  // verifies after every pass
  EXPECT_THAT(EntryLines(*module),
              ElementsAre("%a = f32[2,3]{1,0} parameter(0)", "%b = f32[2,3]{1,0} parameter(1)",
                          "ROOT %fusion = f32[3,2]{1,0} fusion(%a, %b), kind=kLoop, "
                          "calls=%fused_computation"));
  // x * 1 folded, the two exps merged, the transposes sunk into one at the output.
  const HloComputation* fused = module->GetComputationWithName("fused_computation");
  EXPECT_TRUE(Match(fused->root_instruction(),
                    m::Transpose(m::Subtract(m::Add(m::Exp(m::Parameter()),
                                                    m::Exp(m::Parameter())),
                                             m::Parameter()))))
      << module->ToString();
  EXPECT_EQ(CountOpcode(*module, HloOpcode::kExp), 1);
  ::jx::hlo::testing::ExpectSameValues(*original, *module);
}

}  // namespace
}  // namespace jx::hlo::instruction_fusion_test

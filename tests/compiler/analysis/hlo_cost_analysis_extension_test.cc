// HloCostAnalysis as an extensible analysis: a target subclass appends per-opcode hooks that
// fill TargetCost, and callee totals, trip counts and conditional maxima aggregate them; each
// instruction is costed in its role (kernel, fused, per-element); the walk is linear.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "jx/compiler/analysis/hlo_cost_analysis.h"
#include "jx/compiler/hlo/hlo_parser.h"

namespace jx::hlo::hlo_cost_analysis_extension_test {
namespace {

std::unique_ptr<HloModule> Parse(std::string_view text) {
  absl::StatusOr<std::unique_ptr<HloModule>> module = ParseHloModule(text);
  EXPECT_TRUE(module.ok()) << module.status();
  return module.ok() ? *std::move(module) : nullptr;
}

// A toy target: 1 second per vector-unit flop, 10 per transcendental; a kernel's `seconds`
// is its vector time plus 100 of launch overhead. Records the role of every costed op.
class ToyTarget : public HloCostAnalysis {
 public:
  ToyTarget() {
    for (int i = 0; i < kHloOpcodeCount; ++i) {
      const HloOpcode opcode = static_cast<HloOpcode>(i);
      if (OpcodeUnit(opcode) == ExecutionUnit::kVector) {
        AppendHandler(opcode, [](const HloInstruction& instr, HloCost* cost) {
          if (!instr.called_computations().empty()) return;  // reducers carry the time
          cost->target.unit(ExecutionUnit::kVector) += cost->flops + 10 * cost->transcendentals;
        });
      }
      AppendHandler(opcode, [this](const HloInstruction& instr, HloCost* cost) {
        roles.emplace_back(instr.name(), current_role());
        const ExecutionUnit unit = OpcodeUnit(instr.opcode());
        if (current_role() != Role::kKernel || unit == ExecutionUnit::kNone ||
            unit == ExecutionUnit::kControlFlow) {
          return;
        }
        cost->target.seconds = cost->target.unit(ExecutionUnit::kVector) + 100;
      });
    }
  }
  std::vector<std::pair<std::string, Role>> roles;

  Role RoleOf(std::string_view name) const {
    for (const auto& [n, r] : roles) {
      if (n == name) return r;
    }
    ADD_FAILURE() << "not costed: " << name;
    return Role::kKernel;
  }
};

TEST(HloCostAnalysisExtensionTest, HooksFillTargetCostAndCalleesAggregateIt) {
  std::unique_ptr<HloModule> module = Parse(R"(HloModule m
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
%fused (p: f32[8]) -> f32[8] {
  %p = f32[8] parameter(0)
  %e = f32[8] exponential(%p)
  ROOT %m = f32[8] multiply(%e, %p)
}
%cond (c: (s32[], f32[8])) -> pred[] {
  %c = (s32[], f32[8]) parameter(0)
  %ci = s32[] get-tuple-element(%c), index=0
  %n = s32[] constant(3)
  ROOT %lt = pred[] compare(%ci, %n), direction=LT
}
%body (t: (s32[], f32[8])) -> (s32[], f32[8]) {
  %t = (s32[], f32[8]) parameter(0)
  %bi = s32[] get-tuple-element(%t), index=0
  %v = f32[8] get-tuple-element(%t), index=1
  %one = s32[] constant(1)
  %next = s32[] add(%bi, %one)
  %f = f32[8] fusion(%v), kind=kLoop, calls=%fused
  ROOT %r = (s32[], f32[8]) tuple(%next, %f)
}
ENTRY %main (x: f32[8]) -> f32[] {
  %x = f32[8] parameter(0)
  %zero = s32[] constant(0)
  %init = (s32[], f32[8]) tuple(%zero, %x)
  %loop = (s32[], f32[8]) while(%init), condition=%cond, body=%body
  %out = f32[8] get-tuple-element(%loop), index=1
  %z = f32[] constant(0)
  ROOT %sum = f32[] reduce(%out, %z), dimensions={0}, to_apply=%add
})");
  ASSERT_NE(module, nullptr);
  ToyTarget target;
  absl::StatusOr<ModuleCost> cost = target.Analyze(*module);
  ASSERT_TRUE(cost.ok()) << cost.status();

  // Roles: the fusion's body is fused, the reducer per element, loop bodies are kernels.
  EXPECT_EQ(target.RoleOf("e"), HloCostAnalysis::Role::kFused);
  EXPECT_EQ(target.RoleOf("s"), HloCostAnalysis::Role::kPerElement);
  EXPECT_EQ(target.RoleOf("f"), HloCostAnalysis::Role::kKernel);
  EXPECT_EQ(target.RoleOf("next"), HloCostAnalysis::Role::kKernel);
  EXPECT_EQ(target.RoleOf("sum"), HloCostAnalysis::Role::kKernel);

  auto instr = [&](std::string_view name) -> const HloCost& {
    for (const auto& [n, c] : cost->per_instruction) {
      if (n == name) return c;
    }
    ADD_FAILURE() << "no " << name;
    static const HloCost kNone;
    return kNone;
  };
  // The fusion's vector time is its fused instructions': 8 exps (80) + 8 multiplies (8).
  // One loop iteration: the fusion kernel (88 + 100) and the add kernel (1 + 100); the
  // condition's compare kernel (1 + 100) runs 4 times; 3 iterations.
  const HloCost& loop = instr("loop");
  EXPECT_DOUBLE_EQ(loop.target.unit(ExecutionUnit::kVector), 3 * (88 + 1) + 4 * 1);
  EXPECT_DOUBLE_EQ(loop.target.seconds, 3 * (188 + 101) + 4 * 101);
  // The reduce's time comes from its reducer: 7 adds; plus its launch.
  EXPECT_DOUBLE_EQ(instr("sum").target.unit(ExecutionUnit::kVector), 7);
  EXPECT_DOUBLE_EQ(instr("sum").target.seconds, 107);
  // Module totals sum the entry's instructions.
  EXPECT_DOUBLE_EQ(cost->target.seconds, loop.target.seconds + 107);
  // The generic fields are unchanged by the hooks.
  EXPECT_DOUBLE_EQ(cost->flops, AnalyzeCost(*module)->flops);
  EXPECT_DOUBLE_EQ(AnalyzeCost(*module)->target.seconds, 0);  // no target: no time
}

TEST(HloCostAnalysisExtensionTest, ConditionalTakesTheMaximumTargetCost) {
  std::unique_ptr<HloModule> module = Parse(R"(HloModule m
%cheap (a: f32[4]) -> f32[4] {
  %a = f32[4] parameter(0)
  ROOT %n = f32[4] negate(%a)
}
%dear (b: f32[4]) -> f32[4] {
  %b = f32[4] parameter(0)
  ROOT %e = f32[4] exponential(%b)
}
ENTRY %main (i: s32[], x: f32[4]) -> f32[4] {
  %i = s32[] parameter(0)
  %x = f32[4] parameter(1)
  ROOT %c = f32[4] conditional(%i, %x, %x), branch_computations={%cheap, %dear}
})");
  ASSERT_NE(module, nullptr);
  ToyTarget target;
  absl::StatusOr<ModuleCost> cost = target.Analyze(*module);
  ASSERT_TRUE(cost.ok()) << cost.status();
  EXPECT_DOUBLE_EQ(cost->target.seconds, 40 + 100);
}

// A subclass may replace a handler outright: here dots cost nothing.
class FreeDots : public HloCostAnalysis {
 public:
  FreeDots() {
    SetHandler(HloOpcode::kDot, [](const HloInstruction& instr, HloCost* cost) {
      FinishBoundaryBytes(instr, cost);
    });
  }
};

TEST(HloCostAnalysisExtensionTest, SetHandlerReplacesTheDefault) {
  std::unique_ptr<HloModule> module = Parse(R"(HloModule m
ENTRY %main (a: f32[2,3], b: f32[3,4]) -> f32[2,4] {
  %a = f32[2,3] parameter(0)
  %b = f32[3,4] parameter(1)
  ROOT %d = f32[2,4] dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})");
  ASSERT_NE(module, nullptr);
  EXPECT_EQ(AnalyzeCost(*module)->flops, 48);
  FreeDots free_dots;
  absl::StatusOr<ModuleCost> cost = free_dots.Analyze(*module);
  ASSERT_TRUE(cost.ok());
  EXPECT_EQ(cost->flops, 0);
  EXPECT_EQ(cost->bytes_accessed, (6 + 12 + 8) * 4);
}

// Seconds by instruction name, in the called computation of PostOrderModule: fractions whose
// sum rounds differently in storage order (a, b, c) and in post order (c, b, a).
class FractionalSeconds : public HloCostAnalysis {
 public:
  FractionalSeconds() {
    for (int i = 0; i < kHloOpcodeCount; ++i) {
      AppendHandler(static_cast<HloOpcode>(i), [](const HloInstruction& instr, HloCost* cost) {
        const std::string& name = instr.name();
        cost->target.seconds += name == "a" ? 0.1 : name == "b" ? 0.2 : name == "c" ? 0.3 : 0.0;
      });
    }
  }
};

TEST(HloCostAnalysisExtensionTest, FractionalTargetCostsAreSummedInPostOrder) {
  // Stored a, b, c; the root's post order visits c, b (through s), then a.
  std::unique_ptr<HloModule> module = Parse(R"(HloModule m
%fused (p: f32[8]) -> f32[8] {
  %p = f32[8] parameter(0)
  %a = f32[8] negate(%p)
  %b = f32[8] exponential(%p)
  %c = f32[8] sqrt(%p)
  %s = f32[8] add(%c, %b)
  ROOT %r = f32[8] add(%s, %a)
}
ENTRY %main (x: f32[8]) -> f32[8] {
  %x = f32[8] parameter(0)
  ROOT %f = f32[8] fusion(%x), kind=kLoop, calls=%fused
})");
  ASSERT_NE(module, nullptr);
  const double post_order = 0.3 + 0.2 + 0.1;
  ASSERT_NE(post_order, 0.1 + 0.2 + 0.3);  // the order shows in the last bit
  FractionalSeconds analysis;
  absl::StatusOr<ModuleCost> cost = analysis.Analyze(*module);
  ASSERT_TRUE(cost.ok());
  EXPECT_EQ(cost->target.seconds, post_order);
  EXPECT_EQ(cost->transcendentals, 2 * 8);  // exponential, sqrt
  EXPECT_EQ(cost->flops, 3 * 8);            // negate, two adds
}

// A chain of 40,000 adds is analysed in full (the walks are iterative: no recursion as deep as
// the chain). How its time grows with the chain is compile_bench's business (the cost-analysis
// phase of JX_LOG_COMPILES=2), not a test's.
TEST(HloCostAnalysisExtensionTest, AnalysisOfALongChainCountsEveryInstruction) {
  constexpr int kLength = 40000;
  std::string text = "HloModule m\nENTRY %main (x: f32[4]) -> f32[4] {\n  %x = f32[4] parameter(0)\n"
                     "  %a0 = f32[4] add(%x, %x)\n";
  for (int i = 1; i < kLength; ++i) {
    text += "  %a" + std::to_string(i) + " = f32[4] add(%a" + std::to_string(i - 1) + ", %x)\n";
  }
  text += "  ROOT %r = f32[4] negate(%a" + std::to_string(kLength - 1) + ")\n}\n";
  std::unique_ptr<HloModule> module = Parse(text);
  ASSERT_NE(module, nullptr);
  absl::StatusOr<ModuleCost> cost = AnalyzeCost(*module);
  ASSERT_TRUE(cost.ok());
  EXPECT_EQ(cost->flops, 4.0 * (kLength + 1));
}

}  // namespace
}  // namespace jx::hlo::hlo_cost_analysis_extension_test

namespace jx::hlo::hlo_cost_analysis_extension_test {
namespace {

// What the fusion pass asks before computing a producer once per consumer: opcode.def's
// expensive ops, and anything whose costed work is more than one flop per element or has
// transcendentals (a map over exp), while data movement and plain arithmetic are cheap.
TEST(HloCostAnalysisExtensionTest, ExpensiveToDuplicateReadsTheCost) {
  const std::unique_ptr<HloModule> module = Parse(R"(HloModule m
%exp_body (a: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  ROOT %e = f32[] exponential(%a)
}
%poly (p0: f32[]) -> f32[] {
  %p0 = f32[] parameter(0)
  %sq = f32[] multiply(%p0, %p0)
  ROOT %p = f32[] add(%sq, %p0)
}
ENTRY %main (x: f32[64], y: f32[64]) -> (f32[64], f32[64], f32[64], f32[64], f32[64], f32[64]) {
  %x = f32[64] parameter(0)
  %y = f32[64] parameter(1)
  %add = f32[64] add(%x, %y)
  %div = f32[64] divide(%x, %y)
  %exp = f32[64] exponential(%x)
  %map_exp = f32[64] map(%x), dimensions={0}, to_apply=%exp_body
  %map_poly = f32[64] map(%x), dimensions={0}, to_apply=%poly
  %rev = f32[64] reverse(%x), dimensions={0}
  ROOT %t = (f32[64], f32[64], f32[64], f32[64], f32[64], f32[64]) tuple(%add, %div, %exp, %map_exp, %map_poly, %rev)
}
)");
  ASSERT_NE(module, nullptr);
  HloCostAnalysis analysis;
  const HloInstruction* root = module->entry_computation()->root_instruction();
  EXPECT_FALSE(analysis.IsExpensiveToDuplicate(*root->operand(0)));  // add: 1 flop/element
  EXPECT_TRUE(analysis.IsExpensiveToDuplicate(*root->operand(1)));   // divide: opcode.def
  EXPECT_TRUE(analysis.IsExpensiveToDuplicate(*root->operand(2)));   // exp: opcode.def
  EXPECT_TRUE(analysis.IsExpensiveToDuplicate(*root->operand(3)));   // map: a transcendental
  EXPECT_TRUE(analysis.IsExpensiveToDuplicate(*root->operand(4)));   // map: 2 flops/element
  EXPECT_FALSE(analysis.IsExpensiveToDuplicate(*root->operand(5)));  // reverse: moves data
}

}  // namespace
}  // namespace jx::hlo::hlo_cost_analysis_extension_test

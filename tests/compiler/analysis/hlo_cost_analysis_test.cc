// HloCostAnalysis: exact flops, transcendentals and bytes for parsed HLO (XLA's semantics).
#include "jx/compiler/analysis/hlo_cost_analysis.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "jx/compiler/hlo/hlo_parser.h"
#include "jx/compiler/hlo/hlo_verifier.h"

namespace jx::hlo::hlo_cost_analysis_test {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;

std::unique_ptr<HloModule> Parse(std::string_view text) {
  absl::StatusOr<std::unique_ptr<HloModule>> module = ParseHloModule(text);
  EXPECT_TRUE(module.ok()) << module.status();
  if (!module.ok()) return nullptr;
  const absl::Status verified = VerifyHloModule(**module);
  EXPECT_TRUE(verified.ok()) << verified;
  return *std::move(module);
}

ModuleCost Analyze(std::string_view text) {
  std::unique_ptr<HloModule> module = Parse(text);
  if (module == nullptr) return {};
  absl::StatusOr<ModuleCost> cost = AnalyzeCost(*module);
  EXPECT_TRUE(cost.ok()) << cost.status();
  return cost.ok() ? *cost : ModuleCost{};
}

// The cost of the entry instruction named `name`.
HloCost Instr(const ModuleCost& cost, std::string_view name) {
  for (const auto& [n, c] : cost.per_instruction) {
    if (n == name) return c;
  }
  ADD_FAILURE() << "no instruction " << name;
  return {};
}

constexpr char kAdd[] = R"(%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
)";

TEST(HloCostAnalysisTest, ElementwiseAddIsOneFlopPerElement) {
  const ModuleCost cost = Analyze(R"(HloModule m
ENTRY %main (x: f32[2,3], y: f32[2,3]) -> f32[2,3] {
  %x = f32[2,3] parameter(0)
  %y = f32[2,3] parameter(1)
  ROOT %a = f32[2,3] add(%x, %y)
})");
  EXPECT_EQ(cost.flops, 6);
  EXPECT_EQ(cost.transcendentals, 0);
  EXPECT_EQ(cost.bytes_accessed, 72);  // two 24-byte reads, one 24-byte write
  EXPECT_THAT(cost.bytes_accessed_per_parameter, ElementsAre(24, 24));
  EXPECT_EQ(cost.bytes_accessed_output, 24);
  const HloCost add = Instr(cost, "a");
  EXPECT_THAT(add.operand_bytes, ElementsAre(24, 24));
  EXPECT_EQ(add.output_bytes, 24);
  // Parameters run no code.
  EXPECT_EQ(Instr(cost, "x").bytes_accessed, 0);
  EXPECT_EQ(cost.per_instruction.size(), 3u);
}

TEST(HloCostAnalysisTest, RepeatedOperandIsReadOnce) {
  const ModuleCost cost = Analyze(R"(HloModule m
ENTRY %main (x: f32[2,3]) -> f32[2,3] {
  %x = f32[2,3] parameter(0)
  ROOT %m = f32[2,3] multiply(%x, %x)
})");
  EXPECT_EQ(cost.flops, 6);
  EXPECT_EQ(cost.bytes_accessed, 48);
  EXPECT_THAT(Instr(cost, "m").operand_bytes, ElementsAre(24, 0));
  EXPECT_THAT(cost.bytes_accessed_per_parameter, ElementsAre(24));
}

TEST(HloCostAnalysisTest, TranscendentalsAreNotFlops) {
  const ModuleCost cost = Analyze(R"(HloModule m
ENTRY %main (x: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  %e = f32[4] exponential(%x)
  %t = f32[4] tanh(%e)
  %n = f32[4] negate(%t)
  ROOT %c = f32[4] copy(%n)
})");
  EXPECT_EQ(cost.transcendentals, 8);  // exp and tanh
  EXPECT_EQ(cost.flops, 4);            // negate; copy moves data only
  EXPECT_EQ(Instr(cost, "e").transcendentals, 4);
  EXPECT_EQ(Instr(cost, "e").flops, 0);
  EXPECT_EQ(Instr(cost, "c").flops, 0);
  EXPECT_EQ(Instr(cost, "c").bytes_accessed, 32);
  EXPECT_EQ(cost.bytes_accessed, 4 * 32);
}

TEST(HloCostAnalysisTest, CompareAndSelectCountAsFlops) {
  const ModuleCost cost = Analyze(R"(HloModule m
ENTRY %main (x: f32[5], y: f32[5]) -> f32[5] {
  %x = f32[5] parameter(0)
  %y = f32[5] parameter(1)
  %lt = pred[5] compare(%x, %y), direction=LT
  ROOT %s = f32[5] select(%lt, %x, %y)
})");
  EXPECT_EQ(Instr(cost, "lt").flops, 5);
  EXPECT_EQ(Instr(cost, "lt").bytes_accessed, 20 + 20 + 5);  // pred is one byte
  EXPECT_EQ(Instr(cost, "s").flops, 5);
  EXPECT_EQ(cost.flops, 10);
}

TEST(HloCostAnalysisTest, DotIsTwoFlopsPerMultiplyAdd) {
  const ModuleCost cost = Analyze(R"(HloModule m
ENTRY %main (a: f32[2,3], b: f32[3,4]) -> f32[2,4] {
  %a = f32[2,3] parameter(0)
  %b = f32[3,4] parameter(1)
  ROOT %d = f32[2,4] dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})");
  EXPECT_EQ(cost.flops, 48);  // 2 * 8 outputs * 3
  EXPECT_EQ(cost.bytes_accessed, 24 + 48 + 32);
  EXPECT_THAT(cost.bytes_accessed_per_parameter, ElementsAre(24, 48));
}

TEST(HloCostAnalysisTest, BatchedDot) {
  const ModuleCost cost = Analyze(R"(HloModule m
ENTRY %main (a: f32[5,2,3], b: f32[5,3,7]) -> f32[5,2,7] {
  %a = f32[5,2,3] parameter(0)
  %b = f32[5,3,7] parameter(1)
  ROOT %d = f32[5,2,7] dot(%a, %b), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
})");
  EXPECT_EQ(cost.flops, 2 * 70 * 3);
}

TEST(HloCostAnalysisTest, Convolution) {
  // 3x3 kernel, 2 input and 4 output features, valid padding: every tap does work.
  const ModuleCost cost = Analyze(R"(HloModule m
ENTRY %main (x: f32[1,5,5,2], k: f32[3,3,2,4]) -> f32[1,3,3,4] {
  %x = f32[1,5,5,2] parameter(0)
  %k = f32[3,3,2,4] parameter(1)
  ROOT %c = f32[1,3,3,4] convolution(%x, %k), window={size=3x3}, dim_labels=b01f_01io->b01f
})");
  EXPECT_EQ(cost.flops, 2 * 36 * 9 * 2);  // 2 * output elements * kernel taps * input features
  EXPECT_EQ(cost.bytes_accessed, 200 + 288 + 144);
}

TEST(HloCostAnalysisTest, ConvolutionTapsOnPaddingOrHolesDoNoWork) {
  // Padded: 13 of the 15 (output, tap) pairs read real input (as XLA counts).
  ModuleCost cost = Analyze(R"(HloModule m
ENTRY %main (x: f32[1,1,5], k: f32[1,1,3]) -> f32[1,1,5] {
  %x = f32[1,1,5] parameter(0)
  %k = f32[1,1,3] parameter(1)
  ROOT %c = f32[1,1,5] convolution(%x, %k), window={size=3 pad=1_1}, dim_labels=bf0_oi0->bf0
})");
  EXPECT_EQ(cost.flops, 2 * 13);
  // Strided and padded: outputs 0, 2, 4 of the padded row; taps 0..2 -> 2 + 3 + 2 valid.
  cost = Analyze(R"(HloModule m
ENTRY %main (x: f32[1,1,5], k: f32[1,1,3]) -> f32[1,1,3] {
  %x = f32[1,1,5] parameter(0)
  %k = f32[1,1,3] parameter(1)
  ROOT %c = f32[1,1,3] convolution(%x, %k), window={size=3 stride=2 pad=1_1}, dim_labels=bf0_oi0->bf0
})");
  EXPECT_EQ(cost.flops, 2 * 7);
  // lhs dilation [x0, 0, x1, 0, x2]: each of the 4 outputs has one real tap of two.
  cost = Analyze(R"(HloModule m
ENTRY %main (x: f32[1,1,3], k: f32[1,1,2]) -> f32[1,1,4] {
  %x = f32[1,1,3] parameter(0)
  %k = f32[1,1,2] parameter(1)
  ROOT %c = f32[1,1,4] convolution(%x, %k), window={size=2 lhs_dilate=2}, dim_labels=bf0_oi0->bf0
})");
  EXPECT_EQ(cost.flops, 2 * 4);
}

TEST(HloCostAnalysisTest, GroupedConvolutionCountsInputFeaturesPerGroup) {
  const ModuleCost cost = Analyze(R"(HloModule m
ENTRY %main (x: f32[1,4,3], k: f32[2,2,1]) -> f32[1,2,3] {
  %x = f32[1,4,3] parameter(0)
  %k = f32[2,2,1] parameter(1)
  ROOT %c = f32[1,2,3] convolution(%x, %k), window={size=1}, dim_labels=bf0_oi0->bf0, feature_group_count=2
})");
  EXPECT_EQ(cost.flops, 2 * 6 * 1 * 2);  // 6 outputs, 1 tap, 2 input features per group
}

TEST(HloCostAnalysisTest, ReduceCountsReducerApplications) {
  const ModuleCost cost = Analyze(std::string("HloModule m\n") + kAdd + R"(
ENTRY %main (x: f32[4,8]) -> f32[4] {
  %x = f32[4,8] parameter(0)
  %z = f32[] constant(0)
  ROOT %r = f32[4] reduce(%x, %z), dimensions={1}, to_apply=%add
})");
  EXPECT_EQ(cost.flops, 32 - 4);
  EXPECT_EQ(cost.bytes_accessed, 128 + 4 + 16);
  EXPECT_THAT(cost.bytes_accessed_per_parameter, ElementsAre(128));
}

TEST(HloCostAnalysisTest, ReduceWindowCountsWindowSizeMinusOnePerOutput) {
  const ModuleCost cost = Analyze(std::string("HloModule m\n") + kAdd + R"(
ENTRY %main (x: f32[8]) -> f32[6] {
  %x = f32[8] parameter(0)
  %z = f32[] constant(0)
  ROOT %r = f32[6] reduce-window(%x, %z), window={size=3}, to_apply=%add
})");
  EXPECT_EQ(cost.flops, 6 * 2);
}

TEST(HloCostAnalysisTest, RunningScanWindowIsOneApplicationPerElement) {
  // cumsum along axis 1 of [4,100] lowers to a window of 100 padded by 99: O(n), not O(n^2).
  const ModuleCost cost = Analyze(std::string("HloModule m\n") + kAdd + R"(
ENTRY %main (x: f32[4,100]) -> f32[4,100] {
  %x = f32[4,100] parameter(0)
  %z = f32[] constant(0)
  ROOT %r = f32[4,100] reduce-window(%x, %z), window={size=1x100 pad=0_0x99_0}, to_apply=%add
})");
  EXPECT_EQ(cost.flops, 4 * 100);
}

TEST(HloCostAnalysisTest, ShapeOpsAreFreeButMoveBytes) {
  const ModuleCost cost = Analyze(R"(HloModule m
ENTRY %main (x: f32[2,3], s: f32[]) -> f32[3,4] {
  %x = f32[2,3] parameter(0)
  %s = f32[] parameter(1)
  %b = f32[2,3] broadcast(%s), dimensions={}
  %r = f32[3,2] reshape(%x)
  %t = f32[2,3] transpose(%r), dimensions={1,0}
  %c = f32[4,3] concatenate(%t, %b), dimensions={0}
  ROOT %p = f32[3,4] transpose(%c), dimensions={1,0}
})");
  EXPECT_EQ(cost.flops, 0);
  EXPECT_EQ(cost.transcendentals, 0);
  EXPECT_EQ(Instr(cost, "b").bytes_accessed, 4 + 24);
  EXPECT_EQ(Instr(cost, "c").bytes_accessed, 24 + 24 + 48);
}

TEST(HloCostAnalysisTest, SlicesReadOnlyWhatTheyKeep) {
  const ModuleCost cost = Analyze(R"(HloModule m
ENTRY %main (a: f32[16], b: f32[4,4], c: f32[8], i: s32[]) -> (f32[4], f32[16], f32[4,4], f32[4,4], f32[2]) {
  %a = f32[16] parameter(0)
  %b = f32[4,4] parameter(1)
  %c = f32[8] parameter(2)
  %i = s32[] parameter(3)
  %s = f32[4] slice(%a), slice={[0:4]}
  %n = f32[16] negate(%a)
  %t = f32[4,4] transpose(%b), dimensions={1,0}
  %d = f32[4,4] dot(%b, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %ds = f32[2] dynamic-slice(%c, %i), dynamic_slice_sizes={2}
  ROOT %r = (f32[4], f32[16], f32[4,4], f32[4,4], f32[2]) tuple(%s, %n, %t, %d, %ds)
})");
  EXPECT_EQ(Instr(cost, "s").bytes_accessed, 16 + 16);
  EXPECT_EQ(Instr(cost, "ds").bytes_accessed, 8 + 4 + 8);
  EXPECT_EQ(Instr(cost, "d").flops, 2 * 16 * 4);
  EXPECT_EQ(Instr(cost, "r").bytes_accessed, 0);  // tuples forward references
  // a: slice 16 + negate 64; b: transpose 64 + dot 64 (reads b once); c: the slice.
  EXPECT_THAT(cost.bytes_accessed_per_parameter, ElementsAre(80, 128, 8, 4));
  EXPECT_EQ(cost.bytes_accessed_output, 16 + 64 + 64 + 64 + 8);
}

TEST(HloCostAnalysisTest, DynamicUpdateSliceWritesInPlace) {
  const ModuleCost cost = Analyze(R"(HloModule m
ENTRY %main (buf: f32[100], u: f32[10], i: s32[]) -> f32[100] {
  %buf = f32[100] parameter(0)
  %u = f32[10] parameter(1)
  %i = s32[] parameter(2)
  ROOT %d = f32[100] dynamic-update-slice(%buf, %u, %i)
})");
  EXPECT_EQ(cost.bytes_accessed, 40 + 4 + 40);
  EXPECT_THAT(Instr(cost, "d").operand_bytes, ElementsAre(0, 40, 4));
  EXPECT_EQ(cost.bytes_accessed_output, 400);
}

TEST(HloCostAnalysisTest, ReadsThroughGetTupleElementCountForTheParameter) {
  const ModuleCost cost = Analyze(R"(HloModule m
ENTRY %main (p: (f32[4], f32[8])) -> f32[8] {
  %p = (f32[4], f32[8]) parameter(0)
  %g = f32[8] get-tuple-element(%p), index=1
  ROOT %n = f32[8] negate(%g)
})");
  EXPECT_EQ(Instr(cost, "g").bytes_accessed, 0);
  EXPECT_THAT(cost.bytes_accessed_per_parameter, ElementsAre(32));
}

TEST(HloCostAnalysisTest, SortIsNLogN) {
  const ModuleCost cost = Analyze(R"(HloModule m
%lt (a: f32[], b: f32[]) -> pred[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %c = pred[] compare(%a, %b), direction=LT
}
ENTRY %main (x: f32[8]) -> f32[8] {
  %x = f32[8] parameter(0)
  ROOT %s = f32[8] sort(%x), dimensions={0}, to_apply=%lt
})");
  EXPECT_EQ(cost.flops, 8 * 3);
}

// exp(x * y) + 2 as one kLoop fusion, and the same ops unfused.
constexpr char kFused[] = R"(HloModule m
%fused (p0: f32[128], p1: f32[128]) -> f32[128] {
  %p0 = f32[128] parameter(0)
  %p1 = f32[128] parameter(1)
  %m = f32[128] multiply(%p0, %p1)
  %e = f32[128] exponential(%m)
  %c = f32[] constant(2)
  %b = f32[128] broadcast(%c), dimensions={}
  ROOT %a = f32[128] add(%e, %b)
}
ENTRY %main (x: f32[128], y: f32[128]) -> f32[128] {
  %x = f32[128] parameter(0)
  %y = f32[128] parameter(1)
  ROOT %fusion = f32[128] fusion(%x, %y), kind=kLoop, calls=%fused
})";
constexpr char kUnfused[] = R"(HloModule m
ENTRY %main (x: f32[128], y: f32[128]) -> f32[128] {
  %x = f32[128] parameter(0)
  %y = f32[128] parameter(1)
  %m = f32[128] multiply(%x, %y)
  %e = f32[128] exponential(%m)
  %c = f32[] constant(2)
  %b = f32[128] broadcast(%c), dimensions={}
  ROOT %a = f32[128] add(%e, %b)
})";

TEST(HloCostAnalysisTest, LoopFusionSumsFlopsAndMovesBytesOnlyAtItsBoundary) {
  const ModuleCost fused = Analyze(kFused);
  const ModuleCost unfused = Analyze(kUnfused);
  EXPECT_EQ(fused.flops, 256);  // multiply + add
  EXPECT_EQ(fused.transcendentals, 128);
  EXPECT_EQ(fused.flops, unfused.flops);
  EXPECT_EQ(fused.transcendentals, unfused.transcendentals);
  // Two 512-byte inputs and one 512-byte output; the intermediates stay in registers.
  EXPECT_EQ(fused.bytes_accessed, 3 * 512);
  const HloCost fusion = Instr(fused, "fusion");
  EXPECT_THAT(fusion.operand_bytes, ElementsAre(512, 512));
  EXPECT_EQ(fusion.output_bytes, 512);
  EXPECT_THAT(fused.bytes_accessed_per_parameter, ElementsAre(512, 512));
  // Unfused, every intermediate is written and read back: multiply 1536 + exp 1024 +
  // broadcast 516 + add 1536.
  EXPECT_EQ(unfused.bytes_accessed, 4612);
  EXPECT_EQ(fused.per_instruction.size(), 3u);  // fused instructions are not entry entries
  // CostOf on the fusion alone agrees with the module walk.
  std::unique_ptr<HloModule> module = Parse(kFused);
  ASSERT_NE(module, nullptr);
  const HloCost direct = CostOf(*module->entry_computation()->root_instruction());
  EXPECT_EQ(direct.flops, 256);
  EXPECT_EQ(direct.bytes_accessed, 1536);
}

TEST(HloCostAnalysisTest, FusionReadsOnlySlicedPartsAndCountsConstantArrays) {
  const ModuleCost cost = Analyze(R"(HloModule m
%fused (p0: f32[100], p1: f32[10]) -> f32[10] {
  %p0 = f32[100] parameter(0)
  %p1 = f32[10] parameter(1)
  %s = f32[10] slice(%p0), slice={[20:30]}
  %k = f32[10] constant({0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
  %a = f32[10] add(%s, %k)
  ROOT %m = f32[10] multiply(%a, %p1)
}
ENTRY %main (x: f32[100], y: f32[10]) -> f32[10] {
  %x = f32[100] parameter(0)
  %y = f32[10] parameter(1)
  ROOT %fusion = f32[10] fusion(%x, %y), kind=kLoop, calls=%fused
})");
  EXPECT_EQ(cost.flops, 20);
  const HloCost fusion = Instr(cost, "fusion");
  EXPECT_THAT(fusion.operand_bytes, ElementsAre(40, 40));
  EXPECT_EQ(fusion.bytes_accessed, 40 + 40 + 40 /*constant*/ + 40);
  EXPECT_THAT(cost.bytes_accessed_per_parameter, ElementsAre(40, 40));
}

TEST(HloCostAnalysisTest, FusionWithInPlaceUpdateWritesOnlyTheUpdate) {
  const ModuleCost cost = Analyze(R"(HloModule m
%fused (p0: f32[100], p1: f32[10], p2: s32[]) -> f32[100] {
  %p0 = f32[100] parameter(0)
  %p1 = f32[10] parameter(1)
  %p2 = s32[] parameter(2)
  %n = f32[10] negate(%p1)
  ROOT %d = f32[100] dynamic-update-slice(%p0, %n, %p2)
}
ENTRY %main (x: f32[100], u: f32[10], i: s32[]) -> f32[100] {
  %x = f32[100] parameter(0)
  %u = f32[10] parameter(1)
  %i = s32[] parameter(2)
  ROOT %fusion = f32[100] fusion(%x, %u, %i), kind=kLoop, calls=%fused
})");
  EXPECT_THAT(Instr(cost, "fusion").operand_bytes, ElementsAre(0, 40, 4));
  EXPECT_EQ(Instr(cost, "fusion").output_bytes, 40);
  EXPECT_EQ(cost.flops, 10);
}

// for (i = 0; i < 10; ++i) v = exp(v)
constexpr char kLoop10[] = R"(HloModule m
%cond (s: (s32[], f32[4])) -> pred[] {
  %s = (s32[], f32[4]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] constant(10)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}
%body (t: (s32[], f32[4])) -> (s32[], f32[4]) {
  %t = (s32[], f32[4]) parameter(0)
  %bi = s32[] get-tuple-element(%t), index=0
  %v = f32[4] get-tuple-element(%t), index=1
  %one = s32[] constant(1)
  %next = s32[] add(%bi, %one)
  %e = f32[4] exponential(%v)
  ROOT %r = (s32[], f32[4]) tuple(%next, %e)
}
ENTRY %main (x: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  %zero = s32[] constant(0)
  %init = (s32[], f32[4]) tuple(%zero, %x)
  %loop = (s32[], f32[4]) while(%init), condition=%cond, body=%body
  ROOT %out = f32[4] get-tuple-element(%loop), index=1
})";

TEST(HloCostAnalysisTest, WhileWithConstantTripCountRunsBodyTripCountTimes) {
  std::unique_ptr<HloModule> module = Parse(kLoop10);
  ASSERT_NE(module, nullptr);
  const HloInstruction* loop = module->entry_computation()->GetInstructionWithName("loop");
  ASSERT_NE(loop, nullptr);
  EXPECT_EQ(ConstantWhileTripCount(*loop), 10);

  const ModuleCost cost = Analyze(kLoop10);
  // Body: add (1 flop, 12 bytes) + exp (4 transcendentals, 32 bytes), 10 times.
  // Condition: compare (1 flop, 4 + 4 + 1 bytes), 11 times (the last test exits).
  EXPECT_EQ(cost.flops, 10 * 1 + 11 * 1);
  EXPECT_EQ(cost.transcendentals, 10 * 4);
  EXPECT_EQ(cost.bytes_accessed, 10 * 44 + 11 * 9);
  // What the loop reads from its state: i and v in the body, i in the condition.
  EXPECT_THAT(Instr(cost, "loop").operand_bytes, ElementsAre(10 * (4 + 16) + 11 * 4));
}

TEST(HloCostAnalysisTest, WhileWithUnknownTripCountCountsOneIteration) {
  std::string text = kLoop10;
  const std::string from = "%zero = s32[] constant(0)";
  text.replace(text.find(from), from.size(), "%zero = s32[] parameter(1)");
  const std::string sig = "(x: f32[4])";
  text.replace(text.find(sig), sig.size(), "(x: f32[4], start: s32[])");
  const ModuleCost cost = Analyze(text);
  EXPECT_EQ(cost.flops, 2);
  EXPECT_EQ(cost.transcendentals, 4);
  EXPECT_EQ(cost.bytes_accessed, 44 + 9);
}

// A loop state (i, hi, v) with condition `compare` over %i, %hi (and the constant %k = 7) and
// update `update` over %bi (the body's i) and %step = 3, as fori_loop lowers.
std::string Loop(std::string_view start, std::string_view hi, std::string_view compare,
                 std::string_view update) {
  return std::string(R"(HloModule m
%cond (s: (s32[], s32[], f32[])) -> pred[] {
  %s = (s32[], s32[], f32[]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %hi = s32[] get-tuple-element(%s), index=1
  %k = s32[] constant(7)
  ROOT %c = pred[] )") + std::string(compare) + R"(
}
%body (t: (s32[], s32[], f32[])) -> (s32[], s32[], f32[]) {
  %t = (s32[], s32[], f32[]) parameter(0)
  %bi = s32[] get-tuple-element(%t), index=0
  %bhi = s32[] get-tuple-element(%t), index=1
  %v = f32[] get-tuple-element(%t), index=2
  %step = s32[] constant(3)
  %next = s32[] )" + std::string(update) + R"(
  %w = f32[] sine(%v)
  ROOT %r = (s32[], s32[], f32[]) tuple(%next, %bhi, %w)
}
ENTRY %main (x: f32[]) -> (s32[], s32[], f32[]) {
  %x = f32[] parameter(0)
  %lo = s32[] constant()" + std::string(start) + R"()
  %h = s32[] constant()" + std::string(hi) + R"()
  %init = (s32[], s32[], f32[]) tuple(%lo, %h, %x)
  ROOT %loop = (s32[], s32[], f32[]) while(%init), condition=%cond, body=%body
})";
}

std::optional<int64_t> TripCount(const std::string& text) {
  std::unique_ptr<HloModule> module = Parse(text);
  if (module == nullptr) return -1;
  return ConstantWhileTripCount(*module->entry_computation()->root_instruction());
}

TEST(HloCostAnalysisTest, TripCountPatterns) {
  // i in [2, 20) step 3 against the loop-invariant bound: 2, 5, ..., 17.
  EXPECT_EQ(TripCount(Loop("2", "20", "compare(%i, %hi), direction=LT", "add(%bi, %step)")), 6);
  EXPECT_EQ(TripCount(Loop("2", "20", "compare(%hi, %i), direction=GT", "add(%step, %bi)")), 6);
  EXPECT_EQ(TripCount(Loop("2", "20", "compare(%i, %hi), direction=LE", "add(%bi, %step)")), 7);
  // Against a constant: i <= 7 from 1 step 3: 1, 4, 7.
  EXPECT_EQ(TripCount(Loop("1", "0", "compare(%i, %k), direction=LE", "add(%bi, %step)")), 3);
  // Counting down: i > 7 from 20 step -3: 20, 17, 14, 11, 8.
  EXPECT_EQ(TripCount(Loop("20", "0", "compare(%i, %k), direction=GT", "subtract(%bi, %step)")), 5);
  // Never entered.
  EXPECT_EQ(TripCount(Loop("9", "0", "compare(%i, %k), direction=LT", "add(%bi, %step)")), 0);
  // Would never end (or has no recognizable step): unknown.
  EXPECT_EQ(TripCount(Loop("0", "0", "compare(%i, %k), direction=LT", "subtract(%bi, %step)")),
            std::nullopt);
  EXPECT_EQ(TripCount(Loop("0", "0", "compare(%i, %k), direction=LT", "multiply(%bi, %step)")),
            std::nullopt);
  // i != 9 from 0 step 3: 0, 3, 6.
  EXPECT_EQ(TripCount(Loop("0", "9", "compare(%i, %hi), direction=NE", "add(%bi, %step)")), 3);

  // The costs follow: 6 sines, the compare 7 times, the add 6 times.
  const ModuleCost cost =
      Analyze(Loop("2", "20", "compare(%i, %hi), direction=LT", "add(%bi, %step)"));
  EXPECT_EQ(cost.transcendentals, 6);
  EXPECT_EQ(cost.flops, 6 + 7);
}

TEST(HloCostAnalysisTest, ConditionalTakesTheMaximumOverBranches) {
  const ModuleCost cost = Analyze(R"(HloModule m
%cheap (a: f32[8]) -> f32[8] {
  %a = f32[8] parameter(0)
  ROOT %n = f32[8] negate(%a)
}
%costly (b: f32[8]) -> f32[8] {
  %b = f32[8] parameter(0)
  %e = f32[8] exponential(%b)
  %m = f32[8] multiply(%e, %e)
  ROOT %s = f32[8] add(%m, %b)
}
ENTRY %main (p: pred[], x: f32[8]) -> f32[8] {
  %p = pred[] parameter(0)
  %x = f32[8] parameter(1)
  ROOT %c = f32[8] conditional(%p, %x, %x), branch_computations={%cheap, %costly}
})");
  EXPECT_EQ(cost.flops, 16);
  EXPECT_EQ(cost.transcendentals, 8);
  // costly: exp 64 + multiply 64 + add 96; plus the 1-byte predicate.
  EXPECT_EQ(cost.bytes_accessed, 224 + 1);
}

TEST(HloCostAnalysisTest, CallCostsItsCallee) {
  const ModuleCost cost = Analyze(R"(HloModule m
%callee (a: f32[8]) -> f32[8] {
  %a = f32[8] parameter(0)
  %e = f32[8] exponential(%a)
  ROOT %n = f32[8] negate(%e)
}
ENTRY %main (x: f32[8]) -> f32[8] {
  %x = f32[8] parameter(0)
  ROOT %c = f32[8] call(%x), to_apply=%callee
})");
  EXPECT_EQ(cost.flops, 8);
  EXPECT_EQ(cost.transcendentals, 8);
  EXPECT_EQ(cost.bytes_accessed, 64 + 64);
  EXPECT_THAT(Instr(cost, "c").operand_bytes, ElementsAre(32));
  EXPECT_THAT(cost.bytes_accessed_per_parameter, ElementsAre(32));
}

TEST(HloCostAnalysisTest, NestedCallsDeeperThanAnyStack) {
  // 3000 nested calls, each adding one negate: the walk is iterative.
  constexpr int kDepth = 3000;
  std::string text = "HloModule m\n%c0 (a0: f32[2]) -> f32[2] {\n  %a0 = f32[2] parameter(0)\n"
                     "  ROOT %n0 = f32[2] negate(%a0)\n}\n";
  for (int i = 1; i < kDepth; ++i) {
    const std::string n = std::to_string(i);
    text += "%c" + n + " (a" + n + ": f32[2]) -> f32[2] {\n  %a" + n + " = f32[2] parameter(0)\n" +
            "  %k" + n + " = f32[2] call(%a" + n + "), to_apply=%c" + std::to_string(i - 1) +
            "\n  ROOT %n" + n + " = f32[2] negate(%k" + n + ")\n}\n";
  }
  text += "ENTRY %main (x: f32[2]) -> f32[2] {\n  %x = f32[2] parameter(0)\n"
          "  ROOT %r = f32[2] call(%x), to_apply=%c" + std::to_string(kDepth - 1) + "\n}";
  absl::StatusOr<std::unique_ptr<HloModule>> module = ParseHloModule(text);
  ASSERT_TRUE(module.ok()) << module.status();
  absl::StatusOr<ModuleCost> cost = AnalyzeCost(**module);
  ASSERT_TRUE(cost.ok());
  EXPECT_EQ(cost->flops, 2.0 * kDepth);
}

TEST(HloCostAnalysisTest, PropertiesUseXlaNames) {
  const ModuleCost cost = Analyze(kFused);
  EXPECT_THAT(cost.ToProperties(),
              ElementsAre(Pair("flops", 256), Pair("transcendentals", 128),
                          Pair("bytes accessed", 1536), Pair("bytes accessed0{}", 512),
                          Pair("bytes accessed1{}", 512), Pair("bytes accessedout{}", 512)));
}

TEST(HloCostAnalysisTest, ModuleWithoutEntryIsAnError) {
  HloModule empty("empty");
  EXPECT_FALSE(AnalyzeCost(empty).ok());
}

}  // namespace
}  // namespace jx::hlo::hlo_cost_analysis_test

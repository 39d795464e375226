// HloEvaluator: reduce (incl. variadic argmax), reduce-window (strides, padding, base and
// window dilation), select-and-scatter, sort (stable, variadic), map, dot and convolution.
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "jx/compiler/hlo/hlo_evaluator.h"
#include "jx/compiler/hlo/hlo_parser.h"
#include "jx/compiler/hlo/hlo_verifier.h"

namespace jx::hlo::evaluator_reduce_test {
namespace {

std::string EvalModule(std::string_view text) {
  absl::StatusOr<std::unique_ptr<HloModule>> module = ParseHloModule(text);
  if (!module.ok()) return "error: " + std::string(module.status().message());
  if (absl::Status st = VerifyHloModule(**module); !st.ok()) {
    return "error: " + std::string(st.message());
  }
  HloEvaluator evaluator;
  absl::StatusOr<Literal> result = evaluator.Evaluate(**module, {});
  if (!result.ok()) return "error: " + std::string(result.status().message());
  return result->ToString();
}

constexpr char kComputations[] = R"(HloModule m
%add (add_x: f32[], add_y: f32[]) -> f32[] {
  %add_x = f32[] parameter(0)
  %add_y = f32[] parameter(1)
  ROOT %add_sum = f32[] add(%add_x, %add_y)
}
%max (max_x_1: f32[], max_y_1: f32[]) -> f32[] {
  %max_x_1 = f32[] parameter(0)
  %max_y_1 = f32[] parameter(1)
  ROOT %max_m = f32[] maximum(%max_x_1, %max_y_1)
}
%ge (ge_a: f32[], ge_b: f32[]) -> pred[] {
  %ge_a = f32[] parameter(0)
  %ge_b = f32[] parameter(1)
  ROOT %ge_c = pred[] compare(%ge_a, %ge_b), direction=GE
}
%argmax (am_v0: f32[], am_i0: s32[], am_v1: f32[], am_i1: s32[]) -> (f32[], s32[]) {
  %am_v0 = f32[] parameter(0)
  %am_i0 = s32[] parameter(1)
  %am_v1 = f32[] parameter(2)
  %am_i1 = s32[] parameter(3)
  %am_gt = pred[] compare(%am_v0, %am_v1), direction=GT
  %am_eq = pred[] compare(%am_v0, %am_v1), direction=EQ
  %am_lti = pred[] compare(%am_i0, %am_i1), direction=LT
  %am_tie = pred[] and(%am_eq, %am_lti)
  %am_keep = pred[] or(%am_gt, %am_tie)
  %am_v = f32[] select(%am_keep, %am_v0, %am_v1)
  %am_i = s32[] select(%am_keep, %am_i0, %am_i1)
  ROOT %am_t = (f32[], s32[]) tuple(%am_v, %am_i)
}
%key_lt (kl_k0: s32[], kl_k1: s32[], kl_p0: s32[], kl_p1: s32[]) -> pred[] {
  %kl_k0 = s32[] parameter(0)
  %kl_k1 = s32[] parameter(1)
  %kl_p0 = s32[] parameter(2)
  %kl_p1 = s32[] parameter(3)
  ROOT %kl_lt = pred[] compare(%kl_k0, %kl_k1), direction=LT
}
%total_lt (tl_f0: f32[], tl_f1: f32[]) -> pred[] {
  %tl_f0 = f32[] parameter(0)
  %tl_f1 = f32[] parameter(1)
  ROOT %tl_lt = pred[] compare(%tl_f0, %tl_f1), direction=LT, type=TOTALORDER
}
%sq (sq_s: f32[]) -> f32[] {
  %sq_s = f32[] parameter(0)
  ROOT %sq_m = f32[] multiply(%sq_s, %sq_s)
}
)";

std::string Eval(std::string_view entry_body) {
  return EvalModule(std::string(kComputations) + "ENTRY %main {\n" + std::string(entry_body) +
                    "\n}\n");
}

TEST(EvaluatorReduceTest, Reduce) {
  EXPECT_EQ(Eval(R"(  %x = f32[2,3] constant({{1, 2, 3}, {4, 5, 6}})
  %z = f32[] constant(0)
  ROOT %r = f32[2] reduce(%x, %z), dimensions={1}, to_apply=%add)"),
            "{6, 15}");
  EXPECT_EQ(Eval(R"(  %x = f32[2,3] constant({{1, 2, 3}, {4, 5, 6}})
  %z = f32[] constant(0)
  ROOT %r = f32[3] reduce(%x, %z), dimensions={0}, to_apply=%add)"),
            "{5, 7, 9}");
  EXPECT_EQ(Eval(R"(  %x = f32[2,3] constant({{1, 2, 3}, {4, 5, 6}})
  %z = f32[] constant(10)
  ROOT %r = f32[] reduce(%x, %z), dimensions={0,1}, to_apply=%add)"),
            "31");
  // Empty input: the init value.
  EXPECT_EQ(Eval(R"(  %x = f32[0] constant({})
  %z = f32[] constant(-inf)
  ROOT %r = f32[] reduce(%x, %z), dimensions={0}, to_apply=%max)"),
            "-inf");
}

TEST(EvaluatorReduceTest, VariadicReduceArgmax) {
  EXPECT_EQ(Eval(R"(  %x = f32[2,4] constant({{1, 5, 5, 2}, {7, -1, 7, nan}})
  %i = s32[2,4] iota(), iota_dimension=1
  %v0 = f32[] constant(-inf)
  %i0 = s32[] constant(-1)
  ROOT %r = (f32[2], s32[2]) reduce(%x, %i, %v0, %i0), dimensions={1}, to_apply=%argmax)"),
            "({5, nan}, {1, 3})");
}

// Reducers run as a list of scalar steps when they are element-wise ops, constants and a root
// tuple; the rest go through Evaluate. Both give the evaluator's results and errors.
TEST(EvaluatorReduceTest, ReducersOfEveryFormGiveTheSameResults) {
  const std::string computations = R"(
%add_in_f64 (w_x: f32[], w_y: f32[]) -> f32[] {
  %w_x = f32[] parameter(0)
  %w_y = f32[] parameter(1)
  %w_xd = f64[] convert(%w_x)
  %w_yd = f64[] convert(%w_y)
  %w_s = f64[] add(%w_xd, %w_yd)
  ROOT %w_r = f32[] convert(%w_s)
}
%count (c_a: s32[], c_b: s32[]) -> s32[] {
  %c_a = s32[] parameter(0)
  %c_b = s32[] parameter(1)
  %c_one = s32[] constant(1)
  ROOT %c_r = s32[] add(%c_a, %c_one)
}
%keep_and_sum (k_a0: s32[], k_a1: f32[], k_x0: s32[], k_x1: f32[]) -> (s32[], f32[]) {
  %k_a0 = s32[] parameter(0)
  %k_a1 = f32[] parameter(1)
  %k_x0 = s32[] parameter(2)
  %k_x1 = f32[] parameter(3)
  %k_s = f32[] add(%k_a1, %k_x1)
  ROOT %k_t = (s32[], f32[]) tuple(%k_a0, %k_s)
}
%called_add (ca_x: f32[], ca_y: f32[]) -> f32[] {
  %ca_x = f32[] parameter(0)
  %ca_y = f32[] parameter(1)
  ROOT %ca_r = f32[] call(%ca_x, %ca_y), to_apply=%add
}
)";
  auto eval = [&](std::string_view body) {
    return EvalModule(std::string(kComputations) + computations + "ENTRY %main {\n" + std::string(body) + "\n}\n");
  };
  EXPECT_EQ(eval(R"(  %x = f32[2,3] constant({{1, 2, 3}, {4, 5, 6}})
  %z = f32[] constant(0)
  ROOT %r = f32[2] reduce(%x, %z), dimensions={1}, to_apply=%add_in_f64)"),
            "{6, 15}");
  EXPECT_EQ(eval(R"(  %x = f32[2,3] constant({{1, 2, 3}, {4, 5, 6}})
  %z = f32[] constant(0.5)
  ROOT %r = f32[3] reduce(%x, %z), dimensions={0}, to_apply=%called_add)"),
            "{5.5, 7.5, 9.5}");
  EXPECT_EQ(eval(R"(  %x = s32[2,3] constant({{9, 9, 9}, {9, 9, 9}})
  %z = s32[] constant(10)
  ROOT %r = s32[] reduce(%x, %z), dimensions={0,1}, to_apply=%count)"),
            "16");
  EXPECT_EQ(eval(R"(  %x = s32[4] constant({1, 2, 3, 4})
  %y = f32[4] constant({1, 2, 3, 3})
  %z0 = s32[] constant(-7)
  %z1 = f32[] constant(0)
  ROOT %r = (s32[], f32[]) reduce(%x, %y, %z0, %z1), dimensions={0}, to_apply=%keep_and_sum)"),
            "(-7, 9)");
}

TEST(EvaluatorReduceTest, AFailingReducerStepReportsTheEvaluatorsError) {
  // not(f32) passes the parser but no element-wise kernel takes it: the error names the
  // reducer's instruction, as Evaluate reports it (the verifier is skipped on purpose).
  absl::StatusOr<std::unique_ptr<HloModule>> module = ParseHloModule(R"(HloModule m
%bad (b_x: f32[], b_y: f32[]) -> f32[] {
  %b_x = f32[] parameter(0)
  %b_y = f32[] parameter(1)
  %b_s = f32[] add(%b_x, %b_y)
  ROOT %b_n = f32[] not(%b_s)
}
ENTRY %main {
  %x = f32[3] constant({1, 2, 3})
  %z = f32[] constant(0)
  ROOT %r = f32[] reduce(%x, %z), dimensions={0}, to_apply=%bad
}
)");
  ASSERT_TRUE(module.ok()) << module.status();
  HloEvaluator evaluator;
  absl::StatusOr<Literal> result = evaluator.Evaluate(**module, {});
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().message(), "%r = reduce: %b_n = not: not does not accept f32");
}

TEST(EvaluatorReduceTest, ReduceWindow) {
  EXPECT_EQ(Eval(R"(  %x = f32[4] constant({1, 2, 3, 4})
  %z = f32[] constant(0)
  ROOT %r = f32[3] reduce-window(%x, %z), window={size=2}, to_apply=%add)"),
            "{3, 5, 7}");
  // Padding and stride: padded [p,1,2,3,4,p], windows at 0 and 2.
  EXPECT_EQ(Eval(R"(  %x = f32[4] constant({1, 2, 3, 4})
  %z = f32[] constant(0)
  ROOT %r = f32[2] reduce-window(%x, %z), window={size=3 stride=2 pad=1_1}, to_apply=%add)"),
            "{3, 9}");
  // Base dilation: [1,_,2,_,3] with holes skipped.
  EXPECT_EQ(Eval(R"(  %x = f32[3] constant({1, 2, 3})
  %z = f32[] constant(0)
  ROOT %r = f32[4] reduce-window(%x, %z), window={size=2 lhs_dilate=2}, to_apply=%add)"),
            "{1, 2, 2, 3}");
  // Window dilation: taps 2 apart.
  EXPECT_EQ(Eval(R"(  %x = f32[4] constant({1, 2, 3, 4})
  %z = f32[] constant(0)
  ROOT %r = f32[2] reduce-window(%x, %z), window={size=2 rhs_dilate=2}, to_apply=%add)"),
            "{4, 6}");
  EXPECT_EQ(Eval(R"(  %x = f32[3,3] constant({{1, 2, 3}, {4, 9, 6}, {7, 8, 5}})
  %z = f32[] constant(-inf)
  ROOT %r = f32[2,2] reduce-window(%x, %z), window={size=2x2}, to_apply=%max)"),
            "{{9, 9}, {9, 9}}");
}

// Full-axis prefix and suffix windows (how cumulative ops lower) fold as running scans.
TEST(EvaluatorReduceTest, ReduceWindowPrefixAndSuffixScans) {
  EXPECT_EQ(Eval(R"(  %x = f32[4] constant({1, 2, 3, 4})
  %z = f32[] constant(0)
  ROOT %r = f32[4] reduce-window(%x, %z), window={size=4 pad=3_0}, to_apply=%add)"),
            "{1, 3, 6, 1e+01}");
  EXPECT_EQ(Eval(R"(  %x = f32[4] constant({1, 2, 3, 4})
  %z = f32[] constant(0)
  ROOT %r = f32[4] reduce-window(%x, %z), window={size=4 pad=0_3}, to_apply=%add)"),
            "{1e+01, 9, 7, 4}");
  EXPECT_EQ(Eval(R"(  %x = f32[2,3] constant({{1, 5, 2}, {7, 3, 9}})
  %z = f32[] constant(-inf)
  ROOT %r = f32[2,3] reduce-window(%x, %z), window={size=1x3 pad=0_0x2_0}, to_apply=%max)"),
            "{{1, 5, 5}, {7, 7, 9}}");
  EXPECT_EQ(Eval(R"(  %x = f32[2,3] constant({{1, 5, 2}, {7, 3, 9}})
  %z = f32[] constant(0)
  ROOT %r = f32[2,3] reduce-window(%x, %z), window={size=2x1 pad=0_1x0_0}, to_apply=%add)"),
            "{{8, 8, 11}, {7, 3, 9}}");
  // A long scan stays linear: 200k reducer calls, where the window walk would make 2e10.
  EXPECT_EQ(Eval(R"(  %one = f32[] constant(1)
  %x = f32[200000] broadcast(%one), dimensions={}
  %z = f32[] constant(0)
  %r = f32[200000] reduce-window(%x, %z), window={size=200000 pad=199999_0}, to_apply=%add
  ROOT %last = f32[1] slice(%r), slice={[199999:200000]})"),
            "{2e+05}");
}

TEST(EvaluatorReduceTest, SelectAndScatter) {
  EXPECT_EQ(Eval(R"(  %x = f32[4] constant({1, 5, 3, 2})
  %s = f32[2] constant({10, 20})
  %z = f32[] constant(0)
  ROOT %r = f32[4] select-and-scatter(%x, %s, %z), window={size=2 stride=2}, select=%ge, scatter=%add)"),
            "{0, 1e+01, 2e+01, 0}");
  // Overlapping windows both pick element 1.
  EXPECT_EQ(Eval(R"(  %x = f32[3] constant({1, 5, 3})
  %s = f32[2] constant({10, 20})
  %z = f32[] constant(0)
  ROOT %r = f32[3] select-and-scatter(%x, %s, %z), window={size=2}, select=%ge, scatter=%add)"),
            "{0, 3e+01, 0}");
}

TEST(EvaluatorReduceTest, SortStableWithTiesAndTotalOrder) {
  EXPECT_EQ(Eval(R"(  %k = s32[5] constant({2, 1, 2, 1, 0})
  %v = s32[5] iota(), iota_dimension=0
  ROOT %s = (s32[5], s32[5]) sort(%k, %v), dimensions={0}, is_stable=true, to_apply=%key_lt)"),
            "({0, 1, 1, 2, 2}, {4, 1, 3, 0, 2})");
  EXPECT_EQ(Eval(R"(  %x = f32[5] constant({3, nan, -1, -0, 0})
  ROOT %s = f32[5] sort(%x), dimensions={0}, to_apply=%total_lt)"),
            "{-1, -0, 0, 3, nan}");
  EXPECT_EQ(Eval(R"(  %x = f32[2,3] constant({{3, 1, 2}, {0, 5, -1}})
  ROOT %s = f32[2,3] sort(%x), dimensions={0}, to_apply=%total_lt)"),
            "{{0, 1, -1}, {3, 5, 2}}");
}

TEST(EvaluatorReduceTest, Map) {
  EXPECT_EQ(Eval(R"(  %x = f32[3] constant({1, -2, 3})
  ROOT %m = f32[3] map(%x), dimensions={0}, to_apply=%sq)"),
            "{1, 4, 9}");
}

TEST(EvaluatorReduceTest, Dot) {
  EXPECT_EQ(Eval(R"(  %a = f32[2,3] constant({{1, 2, 3}, {4, 5, 6}})
  %b = f32[3,2] constant({{1, 0}, {0, 1}, {1, 1}})
  ROOT %d = f32[2,2] dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0})"),
            "{{4, 5}, {1e+01, 11}}");
  // Batch dims, contracting on lhs dim 1 and rhs dim 2.
  EXPECT_EQ(Eval(R"(  %a = f32[2,2,1] constant({{{1}, {2}}, {{3}, {4}}})
  %b = f32[2,1,2] constant({{{1, 1}}, {{2, 0}}})
  ROOT %d = f32[2,1,1] dot(%a, %b), lhs_batch_dims={0}, lhs_contracting_dims={1}, rhs_batch_dims={0}, rhs_contracting_dims={2})"),
            "{{{3}}, {{6}}}");
  // Integer dots wrap in the result type; a wider result type widens first.
  EXPECT_EQ(Eval(R"(  %a = s8[2] constant({100, 100})
  %b = s8[2] constant({2, 1})
  ROOT %d = s8[] dot(%a, %b), lhs_contracting_dims={0}, rhs_contracting_dims={0})"),
            "44");
  EXPECT_EQ(Eval(R"(  %a = s8[2] constant({100, -100})
  %b = s8[2] constant({2, 5})
  ROOT %d = s32[] dot(%a, %b), lhs_contracting_dims={0}, rhs_contracting_dims={0})"),
            "-300");
  // f16 accumulates wide: 2048 + 1 + 1 = 2050 (f16 accumulation would give 2048).
  EXPECT_EQ(Eval(R"(  %a = f16[3] constant({2048, 1, 1})
  %b = f16[3] constant({1, 1, 1})
  ROOT %d = f16[] dot(%a, %b), lhs_contracting_dims={0}, rhs_contracting_dims={0})"),
            "2.05e+03");
  // Empty contraction: zeros.
  EXPECT_EQ(Eval(R"(  %a = f32[2,0] constant({{}, {}})
  %b = f32[0,1] constant({})
  ROOT %d = f32[2,1] dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0})"),
            "{{0}, {0}}");
}

// A 256x256 dot by the identity gives the lhs back: every precomputed contracting offset lands
// on its product. (How fast the evaluator runs it is a benchmark's business, not a test's.)
TEST(EvaluatorReduceTest, Dot256ByTheIdentityIsTheLhs) {
  auto module = ParseHloModule(R"(HloModule m
ENTRY %main {
  %a = f32[256,256] parameter(0)
  %b = f32[256,256] parameter(1)
  ROOT %d = f32[256,256] dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})").value();
  Literal a(ShapeUtil::MakeShape(F32, {256, 256})), b(ShapeUtil::MakeShape(F32, {256, 256}));
  for (int64_t i = 0; i < 256 * 256; ++i) {
    a.SetFromDouble(i, static_cast<double>(i % 7));
    b.SetFromDouble(i, i % 257 == 0 ? 1.0 : 0.0);  // identity
  }
  HloEvaluator evaluator;
  Literal d = evaluator.Evaluate(*module, {&a, &b}).value();
  EXPECT_TRUE(d == a);
}

TEST(EvaluatorReduceTest, Convolution1D) {
  // Correlation (no kernel flip).
  EXPECT_EQ(Eval(R"(  %x = f32[1,1,5] constant({{{1, 2, 3, 4, 5}}})
  %k = f32[1,1,3] constant({{{1, 0, -1}}})
  ROOT %c = f32[1,1,3] convolution(%x, %k), window={size=3}, dim_labels=bf0_oi0->bf0)"),
            "{{{-2, -2, -2}}}");
  EXPECT_EQ(Eval(R"(  %x = f32[1,1,5] constant({{{1, 2, 3, 4, 5}}})
  %k = f32[1,1,3] constant({{{1, 0, -1}}})
  ROOT %c = f32[1,1,3] convolution(%x, %k), window={size=3 stride=2 pad=1_1}, dim_labels=bf0_oi0->bf0)"),
            "{{{-2, -2, 4}}}");
  // lhs (base) dilation: [1,0,2,0,3].
  EXPECT_EQ(Eval(R"(  %x = f32[1,1,3] constant({{{1, 2, 3}}})
  %k = f32[1,1,2] constant({{{1, 1}}})
  ROOT %c = f32[1,1,4] convolution(%x, %k), window={size=2 lhs_dilate=2}, dim_labels=bf0_oi0->bf0)"),
            "{{{1, 2, 2, 3}}}");
  // rhs (window) dilation: taps 2 apart.
  EXPECT_EQ(Eval(R"(  %x = f32[1,1,4] constant({{{1, 2, 3, 4}}})
  %k = f32[1,1,2] constant({{{1, 1}}})
  ROOT %c = f32[1,1,2] convolution(%x, %k), window={size=2 rhs_dilate=2}, dim_labels=bf0_oi0->bf0)"),
            "{{{4, 6}}}");
}

TEST(EvaluatorReduceTest, ConvolutionGroups) {
  // feature_group_count=2: output feature g reads input feature g.
  EXPECT_EQ(Eval(R"(  %x = f32[1,2,3] constant({{{1, 2, 3}, {10, 20, 30}}})
  %k = f32[2,1,1] constant({{{1}}, {{2}}})
  ROOT %c = f32[1,2,3] convolution(%x, %k), window={size=1}, dim_labels=bf0_oi0->bf0, feature_group_count=2)"),
            "{{{1, 2, 3}, {2e+01, 4e+01, 6e+01}}}");
  // batch_group_count=2: output feature g reads input batch g.
  EXPECT_EQ(Eval(R"(  %x = f32[2,1,3] constant({{{1, 2, 3}}, {{10, 20, 30}}})
  %k = f32[2,1,1] constant({{{1}}, {{2}}})
  ROOT %c = f32[1,2,3] convolution(%x, %k), window={size=1}, dim_labels=bf0_oi0->bf0, batch_group_count=2)"),
            "{{{1, 2, 3}, {2e+01, 4e+01, 6e+01}}}");
}

TEST(EvaluatorReduceTest, Convolution2DChannelsLast) {
  EXPECT_EQ(Eval(R"(  %x = f32[1,3,3,1] constant({{{{1}, {2}, {3}}, {{4}, {5}, {6}}, {{7}, {8}, {9}}}})
  %k = f32[2,2,1,2] constant({{{{1, 1}}, {{1, 0}}}, {{{1, 0}}, {{1, 0}}}})
  ROOT %c = f32[1,2,2,2] convolution(%x, %k), window={size=2x2}, dim_labels=b01f_01io->b01f)"),
            "{{{{12, 1}, {16, 2}}, {{24, 4}, {28, 5}}}}");
}

}  // namespace
}  // namespace jx::hlo::evaluator_reduce_test

// HloEvaluator: data movement (broadcast, transpose, reshape, bitcast, slice, dynamic
// slices, concatenate, pad, reverse) and gather/scatter, incl. out-of-bounds indices.
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "jx/compiler/hlo/hlo_evaluator.h"
#include "jx/compiler/hlo/hlo_parser.h"
#include "jx/compiler/hlo/hlo_verifier.h"

namespace jx::hlo::evaluator_data_test {
namespace {

// Evaluates a whole module (entry takes no parameters); the result text or "error: ...".
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

std::string Eval(std::string_view body) {
  return EvalModule(std::string("HloModule m\nENTRY %main {\n") + std::string(body) + "\n}\n");
}

constexpr char kAdd[] = R"(HloModule m
%add (add_x: s32[], add_y: s32[]) -> s32[] {
  %add_x = s32[] parameter(0)
  %add_y = s32[] parameter(1)
  ROOT %sum = s32[] add(%add_x, %add_y)
}
)";

constexpr char kReplace[] = R"(HloModule m
%replace (rep_x: s32[], rep_y: s32[]) -> s32[] {
  %rep_x = s32[] parameter(0)
  ROOT %rep_y = s32[] parameter(1)
}
)";

TEST(EvaluatorDataTest, BroadcastTransposeReshapeReverse) {
  EXPECT_EQ(Eval(R"(  %x = s32[2] constant({1, 2})
  ROOT %b = s32[2,3] broadcast(%x), dimensions={0})"),
            "{{1, 1, 1}, {2, 2, 2}}");
  EXPECT_EQ(Eval(R"(  %x = f32[] constant(7)
  ROOT %b = f32[2,2] broadcast(%x), dimensions={})"),
            "{{7, 7}, {7, 7}}");
  EXPECT_EQ(Eval(R"(  %x = s32[2,3] constant({{1, 2, 3}, {4, 5, 6}})
  ROOT %t = s32[3,2] transpose(%x), dimensions={1,0})"),
            "{{1, 4}, {2, 5}, {3, 6}}");
  EXPECT_EQ(Eval(R"(  %x = s32[2,1,3] constant({{{1, 2, 3}}, {{4, 5, 6}}})
  ROOT %t = s32[3,2,1] transpose(%x), dimensions={2,0,1})"),
            "{{{1}, {4}}, {{2}, {5}}, {{3}, {6}}}");
  EXPECT_EQ(Eval(R"(  %x = s32[2,3] constant({{1, 2, 3}, {4, 5, 6}})
  ROOT %r = s32[3,2] reshape(%x))"),
            "{{1, 2}, {3, 4}, {5, 6}}");
  EXPECT_EQ(Eval(R"(  %x = s32[2,3] constant({{1, 2, 3}, {4, 5, 6}})
  ROOT %r = s32[2,3] reverse(%x), dimensions={1})"),
            "{{3, 2, 1}, {6, 5, 4}}");
  EXPECT_EQ(Eval(R"(  %x = s32[] constant(5)
  ROOT %r = s32[1,1] reshape(%x))"),
            "{{5}}");
}

TEST(EvaluatorDataTest, BitcastFollowsLayouts) {
  // Same physical bytes, result laid out column-major: a transpose in logical terms.
  EXPECT_EQ(Eval(R"(  %x = s32[2,3]{1,0} constant({{1, 2, 3}, {4, 5, 6}})
  ROOT %b = s32[3,2]{0,1} bitcast(%x))"),
            "{{1, 4}, {2, 5}, {3, 6}}");
  EXPECT_EQ(Eval(R"(  %x = s32[2,3]{1,0} constant({{1, 2, 3}, {4, 5, 6}})
  ROOT %b = s32[6]{0} bitcast(%x))"),
            "{1, 2, 3, 4, 5, 6}");
  EXPECT_EQ(Eval(R"(  %x = s32[2,3]{0,1} constant({{1, 2, 3}, {4, 5, 6}})
  ROOT %b = s32[6]{0} bitcast(%x))"),
            "{1, 4, 2, 5, 3, 6}");
}

TEST(EvaluatorDataTest, SliceWithStridesAndEmpty) {
  EXPECT_EQ(Eval(R"(  %x = s32[10] iota(), iota_dimension=0
  ROOT %s = s32[3] slice(%x), slice={[1:8:3]})"),
            "{1, 4, 7}");
  EXPECT_EQ(Eval(R"(  %x = s32[3,4] iota(), iota_dimension=1
  ROOT %s = s32[2,2] slice(%x), slice={[0:3:2], [1:4:2]})"),
            "{{1, 3}, {1, 3}}");
  EXPECT_EQ(Eval(R"(  %x = s32[4] constant({1, 2, 3, 4})
  ROOT %s = s32[0] slice(%x), slice={[2:2]})"),
            "{}");
}

TEST(EvaluatorDataTest, DynamicSlicesClampStartIndices) {
  const char* ds = R"(  %x = s32[5] constant({0, 1, 2, 3, 4})
  %i = %T constant(%V)
  ROOT %d = s32[3] dynamic-slice(%x, %i), dynamic_slice_sizes={3})";
  auto with = [&](std::string type, std::string value) {
    std::string body = ds;
    body.replace(body.find("%T"), 2, type);
    body.replace(body.find("%V"), 2, value);
    return Eval(body);
  };
  EXPECT_EQ(with("s32[]", "1"), "{1, 2, 3}");
  EXPECT_EQ(with("s32[]", "3"), "{2, 3, 4}");
  EXPECT_EQ(with("s32[]", "-5"), "{0, 1, 2}");
  EXPECT_EQ(with("u32[]", "4294967295"), "{2, 3, 4}");
  EXPECT_EQ(Eval(R"(  %x = s32[5] constant({0, 0, 0, 0, 0})
  %u = s32[2] constant({7, 8})
  %i = s32[] constant(4)
  ROOT %d = s32[5] dynamic-update-slice(%x, %u, %i))"),
            "{0, 0, 0, 7, 8}");
  EXPECT_EQ(Eval(R"(  %x = s32[2,3] constant({{0, 0, 0}, {0, 0, 0}})
  %u = s32[1,2] constant({{7, 8}})
  %i = s32[] constant(1)
  %j = s32[] constant(-1)
  ROOT %d = s32[2,3] dynamic-update-slice(%x, %u, %i, %j))"),
            "{{0, 0, 0}, {7, 8, 0}}");
}

TEST(EvaluatorDataTest, ConcatenateAndPad) {
  EXPECT_EQ(Eval(R"(  %a = s32[2,1] constant({{1}, {2}})
  %b = s32[2,2] constant({{3, 4}, {5, 6}})
  %e = s32[2,0] constant({{}, {}})
  ROOT %c = s32[2,3] concatenate(%a, %e, %b), dimensions={1})"),
            "{{1, 3, 4}, {2, 5, 6}}");
  EXPECT_EQ(Eval(R"(  %x = s32[3] constant({1, 2, 3})
  %z = s32[] constant(0)
  ROOT %p = s32[8] pad(%x, %z), padding=1_2_1)"),
            "{0, 1, 0, 2, 0, 3, 0, 0}");
  // Negative padding crops the interior-padded array.
  EXPECT_EQ(Eval(R"(  %x = s32[3] constant({1, 2, 3})
  %z = s32[] constant(9)
  ROOT %p = s32[3] pad(%x, %z), padding=-1_-1_1)"),
            "{9, 2, 9}");
  EXPECT_EQ(Eval(R"(  %x = s32[2,2] constant({{1, 2}, {3, 4}})
  %z = s32[] constant(0)
  ROOT %p = s32[2,3] pad(%x, %z), padding=-1_1x0_1)"),
            "{{3, 4, 0}, {0, 0, 0}}");
}

TEST(EvaluatorDataTest, GatherRowsClampsOutOfBoundIndices) {
  const char* gather = R"(  %x = s32[3,3] constant({{1, 2, 3}, {4, 5, 6}, {7, 8, 9}})
  %i = s32[2] constant(%I)
  ROOT %g = s32[2,3] gather(%x, %i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,3})";
  auto with = [&](std::string indices) {
    std::string body = gather;
    body.replace(body.find("%I"), 2, indices);
    return Eval(body);
  };
  EXPECT_EQ(with("{0, 2}"), "{{1, 2, 3}, {7, 8, 9}}");
  EXPECT_EQ(with("{5, -1}"), "{{7, 8, 9}, {1, 2, 3}}");
}

TEST(EvaluatorDataTest, GatherWindowsWithIndexVectors) {
  EXPECT_EQ(Eval(R"(  %x = s32[3,3] constant({{1, 2, 3}, {4, 5, 6}, {7, 8, 9}})
  %i = s32[2,2] constant({{0, 1}, {2, 2}})
  ROOT %g = s32[2,2,2] gather(%x, %i), offset_dims={1,2}, collapsed_slice_dims={}, start_index_map={0,1}, index_vector_dim=1, slice_sizes={2,2})"),
            "{{{2, 3}, {5, 6}}, {{5, 6}, {8, 9}}}");
  // index_vector_dim=0 and start_index_map reversed: vector (c, r).
  EXPECT_EQ(Eval(R"(  %x = s32[3,3] constant({{1, 2, 3}, {4, 5, 6}, {7, 8, 9}})
  %i = s32[2,2] constant({{2, 0}, {1, 2}})
  ROOT %g = s32[2] gather(%x, %i), offset_dims={}, collapsed_slice_dims={0,1}, start_index_map={1,0}, index_vector_dim=0, slice_sizes={1,1})"),
            "{6, 7}");
}

TEST(EvaluatorDataTest, ScatterCombinesAndSkipsOutOfBounds) {
  const std::string scatter = std::string(kAdd) + R"(ENTRY %main {
  %x = s32[5] constant({0, 0, 0, 0, 0})
  %i = s32[3,1] constant(%I)
  %u = s32[3] constant({10, 20, 30})
  ROOT %s = s32[5] scatter(%x, %i, %u), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%add
})";
  auto with = [&](std::string indices) {
    std::string text = scatter;
    text.replace(text.find("%I"), 2, indices);
    return EvalModule(text);
  };
  EXPECT_EQ(with("{{1}, {3}, {1}}"), "{0, 40, 0, 20, 0}");
  EXPECT_EQ(with("{{-1}, {5}, {4}}"), "{0, 0, 0, 0, 30}");
}

TEST(EvaluatorDataTest, ScatterWindowsSkippedWhenNotFullyInBounds) {
  EXPECT_EQ(EvalModule(std::string(kReplace) + R"(ENTRY %main {
  %x = s32[3,3] constant({{0, 0, 0}, {0, 0, 0}, {0, 0, 0}})
  %i = s32[2,1] constant({{0}, {2}})
  %u = s32[2,3] constant({{1, 2, 3}, {4, 5, 6}})
  ROOT %s = s32[3,3] scatter(%x, %i, %u), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%replace
})"),
            "{{1, 2, 3}, {0, 0, 0}, {4, 5, 6}}");
  // Windows of 2 at starts 3 (sticks out) and 1 (fits).
  EXPECT_EQ(EvalModule(std::string(kAdd) + R"(ENTRY %main {
  %x = s32[4] constant({0, 0, 0, 0})
  %i = s32[2,1] constant({{3}, {1}})
  %u = s32[2,2] constant({{1, 2}, {3, 4}})
  ROOT %s = s32[4] scatter(%x, %i, %u), update_window_dims={1}, inserted_window_dims={}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%add
})"),
            "{0, 3, 4, 0}");
}

TEST(EvaluatorDataTest, VariadicScatter) {
  EXPECT_EQ(EvalModule(R"(HloModule m
%add2 (a: s32[], b: f32[], c: s32[], d: f32[]) -> (s32[], f32[]) {
  %a = s32[] parameter(0)
  %b = f32[] parameter(1)
  %c = s32[] parameter(2)
  %d = f32[] parameter(3)
  %s2 = s32[] add(%a, %c)
  %t2 = f32[] multiply(%b, %d)
  ROOT %r = (s32[], f32[]) tuple(%s2, %t2)
}
ENTRY %main {
  %x = s32[3] constant({0, 0, 0})
  %y = f32[3] constant({1, 1, 1})
  %i = s32[2] constant({2, 2})
  %u = s32[2] constant({5, 6})
  %v = f32[2] constant({2, 3})
  ROOT %s = (s32[3], f32[3]) scatter(%x, %y, %i, %u, %v), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%add2
})"),
            "({0, 0, 11}, {1, 1, 6})");
}

}  // namespace
}  // namespace jx::hlo::evaluator_data_test

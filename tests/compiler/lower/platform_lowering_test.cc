// Target-aware lowering: a primitive's per-platform rule (PrimitiveRules::platform_lower)
// replaces its generic one when LowerOptions::platform names that platform. The reduction
// family is the first user: the CPU accumulates f32 sums in f64, a TPU in f32. And the
// contractions' precision param lowers to the HLO operand_precision on every platform.
#include <gtest/gtest.h>

#include <string>

#include "jx/compiler/hlo/hlo_evaluator.h"
#include "jx/compiler/hlo/hlo_verifier.h"
#include "jx/compiler/lower/literal_convert.h"
#include "jx/compiler/lower/lower_context.h"
#include "jx/compiler/lower/lower_jaxpr.h"
#include "jx/core/registry.h"
#include "jx/jx.h"
#include "jx/transforms/staging.h"

namespace jx::platform_lowering_test {
namespace {

namespace jnp = jx::numpy;

ClosedJaxpr Trace(const std::function<Arrays(absl::Span<const Array>)>& f, std::vector<ShapedArray> avals) {
  lax::RegisterAll();
  return TraceToJaxpr(f, avals, "f");
}

std::string LowerText(const ClosedJaxpr& j, const std::string& platform) {
  LowerOptions options;
  options.platform = platform;
  absl::StatusOr<std::unique_ptr<hlo::HloModule>> m = LowerJaxpr(j, "jit_f", options);
  EXPECT_TRUE(m.ok()) << m.status();
  if (!m.ok()) return "";
  const absl::Status verified = hlo::VerifyHloModule(**m);
  EXPECT_TRUE(verified.ok()) << verified;
  hlo::HloPrintOptions print;
  print.print_metadata = false;
  return (*m)->ToString(print);
}

Array EvaluateOn(const ClosedJaxpr& j, const std::string& platform, const Array& x) {
  LowerOptions options;
  options.platform = platform;
  std::unique_ptr<hlo::HloModule> m = LowerJaxpr(j, "jit_f", options).value();
  const hlo::Literal arg = ArrayToLiteral(x);
  absl::StatusOr<hlo::Literal> out = hlo::HloEvaluator().Evaluate(*m, {&arg});
  EXPECT_TRUE(out.ok()) << out.status();
  return LiteralToArray(*out);
}

// Sums over the last axis of a f32[2,3].
ClosedJaxpr SumJaxpr(DType dtype) {
  return Trace([](absl::Span<const Array> x) { return Arrays{jnp::sum(x[0], 1)}; },
               {ShapedArray{{2, 3}, dtype}});
}

TEST(PlatformLoweringTest, CpuSumsF32InF64) {
  EXPECT_EQ(LowerText(SumJaxpr(float32), "cpu"),
            R"hlo(HloModule jit_f, entry_computation_layout={(f32[2,3]{1,0})->f32[2]{0}}

%add_reducer (lhs: f64[], rhs: f64[]) -> f64[] {
  %lhs = f64[] parameter(0)
  %rhs = f64[] parameter(1)
  ROOT %add.6 = f64[] add(f64[] %lhs, f64[] %rhs)
}

ENTRY %main (Arg_0: f32[2,3]) -> f32[2] {
  %Arg_0 = f32[2,3]{1,0} parameter(0)
  %convert.2 = f64[2,3]{1,0} convert(f32[2,3]{1,0} %Arg_0)
  %constant.3 = f64[] constant(0)
  %reduce.7 = f64[2]{0} reduce(f64[2,3]{1,0} %convert.2, f64[] %constant.3), dimensions={1}, to_apply=%add_reducer
  ROOT %convert.8 = f32[2]{0} convert(f64[2]{0} %reduce.7)
}
)hlo");
}

TEST(PlatformLoweringTest, TpuSumsF32InF32) {
  EXPECT_EQ(LowerText(SumJaxpr(float32), "tpu"),
            R"hlo(HloModule jit_f, entry_computation_layout={(f32[2,3]{1,0})->f32[2]{0}}

%add_reducer (lhs: f32[], rhs: f32[]) -> f32[] {
  %lhs = f32[] parameter(0)
  %rhs = f32[] parameter(1)
  ROOT %add.5 = f32[] add(f32[] %lhs, f32[] %rhs)
}

ENTRY %main (Arg_0: f32[2,3]) -> f32[2] {
  %Arg_0 = f32[2,3]{1,0} parameter(0)
  %constant.2 = f32[] constant(0)
  ROOT %reduce.6 = f32[2]{0} reduce(f32[2,3]{1,0} %Arg_0, f32[] %constant.2), dimensions={1}, to_apply=%add_reducer
}
)hlo");
  // The values agree with the CPU's on sums that round the same either way.
  const Array x = jnp::array(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(EvaluateOn(SumJaxpr(float32), "tpu", x).to_vector<float>(), (std::vector<float>{6, 15}));
}

TEST(PlatformLoweringTest, TpuAccumulatesSixteenBitFloatsInF32AndNothingInF64) {
  const std::string bf16 = LowerText(SumJaxpr(bfloat16), "tpu");
  EXPECT_NE(bf16.find("f32[2,3]{1,0} convert(bf16[2,3]{1,0} %Arg_0)"), std::string::npos) << bf16;
  EXPECT_NE(bf16.find("bf16[2]{0} convert(f32[2]{0}"), std::string::npos) << bf16;
  EXPECT_EQ(bf16.find("f64"), std::string::npos) << bf16;
  EXPECT_NE(LowerText(SumJaxpr(bfloat16), "cpu").find("f64"), std::string::npos);
  // Products, cumulative sums and windowed sums follow the same rule.
  const ClosedJaxpr others =
      Trace([](absl::Span<const Array> x) {
              return Arrays{jnp::prod(x[0], 1), jnp::cumsum(x[0], 1), jnp::cumprod(x[0], 0),
                            lax::reduce_window_sum(x[0], {1, 2}, {1, 1}, {{0, 0}, {0, 0}})};
            },
            {ShapedArray{{2, 3}, float32}});
  const std::string tpu = LowerText(others, "tpu"), cpu = LowerText(others, "cpu");
  EXPECT_EQ(tpu.find("f64"), std::string::npos) << tpu;
  EXPECT_NE(cpu.find("f64[2,3]{1,0} convert(f32[2,3]{1,0} %Arg_0)"), std::string::npos) << cpu;
  // f64 programs stay f64 (the TPU emulates them; the cost model says so).
  EXPECT_NE(LowerText(SumJaxpr(float64), "tpu").find("f64[2]{0} reduce("), std::string::npos);
}

TEST(PlatformLoweringTest, APlatformRuleReplacesTheGenericOneForThatPlatformOnly) {
  lax::RegisterAll();
  const Primitive p = Primitive::Intern("platform_test_op");
  PrimitiveRules& rules = GlobalRegistry().Define(p);
  rules.abstract_eval = [](InAvals in, const ParamMap&) { return Avals{*in[0]}; };
  rules.lower = [](LowerContext& ctx) -> absl::Status {
    ctx.SetOutputs({ctx.builder().Negate(ctx.operand(0)).value()});
    return absl::OkStatus();
  };
  rules.platform_lower.emplace_back("tpu", [](LowerContext& ctx) -> absl::Status {
    EXPECT_EQ(ctx.platform(), "tpu");
    ctx.SetOutputs({ctx.builder().Abs(ctx.operand(0)).value()});
    return absl::OkStatus();
  });
  const ClosedJaxpr j = Trace([p](absl::Span<const Array> x) { return Arrays{Bind(p, {x[0]}, {})[0]}; },
                              {ShapedArray{{2}, float32}});
  EXPECT_NE(LowerText(j, "cpu").find("negate("), std::string::npos);
  EXPECT_NE(LowerText(j, "tpu").find("abs("), std::string::npos);
  EXPECT_NE(LowerText(j, "gpu").find("negate("), std::string::npos);  // no override: the generic rule

  // A primitive with only a platform rule has no rule elsewhere, and the error says for where.
  // (Copied first: defining another primitive may move the registry's entries.)
  const LowerRule tpu_rule = rules.platform_lower[0].second;
  const Primitive q = Primitive::Intern("platform_test_tpu_only");
  PrimitiveRules& only = GlobalRegistry().Define(q);
  only.abstract_eval = [](InAvals in, const ParamMap&) { return Avals{*in[0]}; };
  only.platform_lower.emplace_back("tpu", tpu_rule);
  const ClosedJaxpr k = Trace([q](absl::Span<const Array> x) { return Arrays{Bind(q, {x[0]}, {})[0]}; },
                              {ShapedArray{{2}, float32}});
  EXPECT_NE(LowerText(k, "tpu").find("abs("), std::string::npos);
  LowerOptions cpu;
  absl::StatusOr<std::unique_ptr<hlo::HloModule>> m = LowerJaxpr(k, "jit_f", cpu);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(std::string(m.status().message())
                .find("primitive 'platform_test_tpu_only' has no lowering rule for platform 'cpu'"),
            std::string::npos)
      << m.status();
}

TEST(PlatformLoweringTest, ContractionPrecisionBecomesOperandPrecision) {
  using lax::Precision;
  const ClosedJaxpr dots = Trace(
      [](absl::Span<const Array> x) {
        return Arrays{lax::dot_general(x[0], x[1], {{1}, {0}, {}, {}}),
                      lax::dot_general(x[0], x[1], {{1}, {0}, {}, {}}, Precision::kHighest),
                      lax::dot_general(x[0], x[1], {{1}, {0}, {}, {}}, {Precision::kHigh, Precision::kDefault},
                                       float64)};
      },
      {ShapedArray{{2, 3}, float32}, ShapedArray{{3, 4}, float32}});
  for (const std::string platform : {"cpu", "tpu"}) {
    const std::string text = LowerText(dots, platform);
    EXPECT_NE(text.find("%dot.3 = f32[2,4]{1,0} dot(f32[2,3]{1,0} %Arg_0, f32[3,4]{1,0} %Arg_1), "
                        "lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("%dot.4 = f32[2,4]{1,0} dot(f32[2,3]{1,0} %Arg_0, f32[3,4]{1,0} %Arg_1), "
                        "lhs_contracting_dims={1}, rhs_contracting_dims={0}, operand_precision={highest,highest}\n"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("%dot.5 = f64[2,4]{1,0} dot(f32[2,3]{1,0} %Arg_0, f32[3,4]{1,0} %Arg_1), "
                        "lhs_contracting_dims={1}, rhs_contracting_dims={0}, operand_precision={high,default}\n"),
              std::string::npos)
        << text;
  }
  const ClosedJaxpr conv = Trace(
      [](absl::Span<const Array> x) {
        return Arrays{lax::conv_general_dilated(x[0], x[1], {1}, lax::Padding::Valid(), {}, {}, std::nullopt, 1, 1,
                                                {Precision::kDefault, Precision::kHighest})};
      },
      {ShapedArray{{1, 2, 5}, float32}, ShapedArray{{3, 2, 2}, float32}});
  const std::string text = LowerText(conv, "tpu");
  EXPECT_NE(text.find("window={size=2}, dim_labels=bf0_oi0->bf0, operand_precision={default,highest}"),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace jx::platform_lowering_test

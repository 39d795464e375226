// HloEvaluator: elementwise math, compare/select/clamp, convert, bitcast-convert,
// reduce-precision and iota, with NaN/inf/-0 and integer-overflow edge cases.
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "jx/compiler/hlo/hlo_evaluator.h"
#include "jx/compiler/hlo/hlo_parser.h"
#include "jx/compiler/hlo/hlo_verifier.h"

namespace jx::hlo::evaluator_elementwise_test {
namespace {

// Evaluates an entry computation with `body` (no parameters); the result's text, or
// "error: ..." so a failure shows in the comparison.
std::string Eval(std::string_view body) {
  std::string text = std::string("HloModule m\nENTRY %main {\n") + std::string(body) + "\n}\n";
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

// One unary op on a constant.
std::string Unary(std::string_view type, std::string_view op, std::string_view values,
                  std::string_view out_type = "") {
  const std::string out = out_type.empty() ? std::string(type) : std::string(out_type);
  return Eval(std::string("  %x = ") + std::string(type) + " constant(" + std::string(values) +
              ")\n  ROOT %r = " + out + " " + std::string(op) + "(%x)");
}

// One binary op on two constants of the same type.
std::string Binary(std::string_view type, std::string_view op, std::string_view a,
                   std::string_view b, std::string_view out_type = "",
                   std::string_view attrs = "") {
  const std::string out = out_type.empty() ? std::string(type) : std::string(out_type);
  return Eval(std::string("  %a = ") + std::string(type) + " constant(" + std::string(a) +
              ")\n  %b = " + std::string(type) + " constant(" + std::string(b) +
              ")\n  ROOT %r = " + out + " " + std::string(op) + "(%a, %b)" +
              std::string(attrs));
}

TEST(EvaluatorElementwiseTest, FloatUnarySignedZeroNanInf) {
  EXPECT_EQ(Unary("f32[5]", "abs", "{-2.5, -0, 0, nan, -inf}"), "{2.5, 0, 0, nan, inf}");
  EXPECT_EQ(Unary("f32[5]", "negate", "{-2.5, -0, 0, nan, inf}"), "{2.5, 0, -0, nan, -inf}");
  EXPECT_EQ(Unary("f32[5]", "sign", "{-2.5, -0, 0, nan, inf}"), "{-1, -0, 0, nan, 1}");
  EXPECT_EQ(Unary("f32[4]", "is-finite", "{1, inf, -inf, nan}", "pred[4]"),
            "{true, false, false, false}");
  EXPECT_EQ(Unary("f64[3]", "sqrt", "{4, -1, inf}"), "{2, nan, inf}");
  EXPECT_EQ(Unary("f32[3]", "log", "{0, 1, -1}"), "{-inf, 0, nan}");
  EXPECT_EQ(Unary("f32[2]", "rsqrt", "{4, 0}"), "{0.5, inf}");
  EXPECT_EQ(Unary("f32[2]", "cbrt", "{-8, 27}"), "{-2, 3}");
  EXPECT_EQ(Unary("f32[3]", "logistic", "{0, -inf, inf}"), "{0.5, 0, 1}");
  EXPECT_EQ(Unary("f32[2]", "exponential-minus-one", "{0, -inf}"), "{0, -1}");
  EXPECT_EQ(Unary("f32[2]", "log-plus-one", "{0, -1}"), "{0, -inf}");
  EXPECT_EQ(Unary("f32[2]", "erf", "{0, inf}"), "{0, 1}");
  EXPECT_EQ(Unary("f32[2]", "tanh", "{-0, -inf}"), "{-0, -1}");
  EXPECT_EQ(Unary("f32[2]", "exponential", "{0, -inf}"), "{1, 0}");
  EXPECT_EQ(Unary("f32[2]", "cosine", "{0, nan}"), "{1, nan}");
  EXPECT_EQ(Unary("f32[2]", "sine", "{-0, inf}"), "{-0, nan}");
  EXPECT_EQ(Unary("f32[1]", "tan", "{0}"), "{0}");
  EXPECT_EQ(Unary("f32[3]", "floor", "{-1.5, 1.5, -0}"), "{-2, 1, -0}");
  EXPECT_EQ(Unary("f32[3]", "ceil", "{-1.5, 1.5, -0.5}"), "{-1, 2, -0}");
}

TEST(EvaluatorElementwiseTest, Rounding) {
  EXPECT_EQ(Unary("f32[7]", "round-nearest-even", "{0.5, 1.5, 2.5, -0.5, -2.5, 2.4, inf}"),
            "{0, 2, 2, -0, -2, 2, inf}");
  EXPECT_EQ(Unary("f32[6]", "round-nearest-afz", "{0.5, 1.5, 2.5, -0.5, -2.5, 2.4}"),
            "{1, 2, 3, -1, -3, 2}");
}

TEST(EvaluatorElementwiseTest, HalfAndBfloat16RoundOnceFromF32) {
  // 2048 + 1 = 2049 is a tie in f16 (spacing 2): even -> 2048; 2048 + 3 -> 2052.
  EXPECT_EQ(Binary("f16[2]", "add", "{2048, 2048}", "{1, 3}"), "{2048, 2052}");
  // 300 * 300 overflows f16 to inf.
  EXPECT_EQ(Binary("f16[1]", "multiply", "{300}", "{300}"), "{inf}");
  // bf16: 256 + 1 ties to 256.
  EXPECT_EQ(Binary("bf16[2]", "add", "{256, 256}", "{1, 3}"), "{256, 2.6e+02}");
  EXPECT_EQ(Unary("f16[2]", "sqrt", "{2, 4}"), "{1.414, 2}");
}

TEST(EvaluatorElementwiseTest, IntegerDivisionAndRemainderEdgeCases) {
  EXPECT_EQ(Binary("s32[6]", "divide", "{7, -7, 7, -7, 5, -2147483648}", "{2, 2, -2, -2, 0, -1}"),
            "{3, -3, -3, 3, -1, -2147483648}");
  EXPECT_EQ(Binary("s32[6]", "remainder", "{7, -7, 7, -7, 5, -2147483648}",
                   "{2, 2, -2, -2, 0, -1}"),
            "{1, -1, 1, -1, 5, 0}");
  EXPECT_EQ(Binary("u32[2]", "divide", "{5, 7}", "{0, 2}"), "{4294967295, 3}");
  EXPECT_EQ(Binary("u32[2]", "remainder", "{5, 7}", "{0, 2}"), "{5, 1}");
  EXPECT_EQ(Binary("s8[1]", "divide", "{-128}", "{-1}"), "{-128}");
  EXPECT_EQ(Binary("f32[3]", "remainder", "{5.5, -5.5, 1}", "{2, 2, 0}"), "{1.5, -1.5, nan}");
  EXPECT_EQ(Binary("f32[3]", "divide", "{1, -1, 0}", "{0, 0, 0}"), "{inf, -inf, nan}");
}

TEST(EvaluatorElementwiseTest, IntegerOverflowWrapsAround) {
  EXPECT_EQ(Binary("s32[1]", "add", "{2147483647}", "{1}"), "{-2147483648}");
  EXPECT_EQ(Binary("s8[2]", "multiply", "{100, -128}", "{3, -1}"), "{44, -128}");
  EXPECT_EQ(Binary("u8[1]", "subtract", "{0}", "{1}"), "{255}");
  EXPECT_EQ(Binary("u16[1]", "multiply", "{65535}", "{65535}"), "{1}");
  EXPECT_EQ(Unary("s32[2]", "negate", "{-2147483648, 5}"), "{-2147483648, -5}");
  EXPECT_EQ(Unary("s32[3]", "abs", "{-2147483648, -5, 0}"), "{-2147483648, 5, 0}");
  EXPECT_EQ(Unary("s64[3]", "sign", "{-9, 0, 9}"), "{-1, 0, 1}");
}

TEST(EvaluatorElementwiseTest, ShiftsWithOutOfRangeAmounts) {
  EXPECT_EQ(Binary("s32[4]", "shift-left", "{1, 1, 1, -1}", "{0, 31, 32, -1}"),
            "{1, -2147483648, 0, 0}");
  EXPECT_EQ(Binary("s32[4]", "shift-right-arithmetic", "{-8, -8, 8, -8}", "{1, 32, 40, -1}"),
            "{-4, -1, 0, -1}");
  EXPECT_EQ(Binary("s32[3]", "shift-right-logical", "{-8, -1, 8}", "{1, 32, 3}"),
            "{2147483644, 0, 1}");
  EXPECT_EQ(Binary("u8[2]", "shift-right-arithmetic", "{128, 128}", "{1, 8}"), "{192, 255}");
}

TEST(EvaluatorElementwiseTest, BitOps) {
  EXPECT_EQ(Unary("s32[3]", "popcnt", "{0, -1, 7}"), "{0, 32, 3}");
  EXPECT_EQ(Unary("s32[3]", "count-leading-zeros", "{0, 1, -1}"), "{32, 31, 0}");
  EXPECT_EQ(Unary("u8[2]", "count-leading-zeros", "{1, 0}"), "{7, 8}");
  EXPECT_EQ(Unary("s32[2]", "not", "{0, 5}"), "{-1, -6}");
  EXPECT_EQ(Unary("pred[2]", "not", "{true, false}"), "{false, true}");
  EXPECT_EQ(Binary("s32[1]", "and", "{12}", "{10}"), "{8}");
  EXPECT_EQ(Binary("s32[1]", "or", "{12}", "{10}"), "{14}");
  EXPECT_EQ(Binary("s32[1]", "xor", "{12}", "{10}"), "{6}");
  EXPECT_EQ(Binary("pred[4]", "and", "{true, true, false, false}", "{true, false, true, false}"),
            "{true, false, false, false}");
  EXPECT_EQ(Binary("pred[4]", "or", "{true, true, false, false}", "{true, false, true, false}"),
            "{true, true, true, false}");
  EXPECT_EQ(Binary("pred[4]", "xor", "{true, true, false, false}", "{true, false, true, false}"),
            "{false, true, true, false}");
  // pred arithmetic: add is or, multiply is and.
  EXPECT_EQ(Binary("pred[2]", "add", "{true, false}", "{true, false}"), "{true, false}");
}

TEST(EvaluatorElementwiseTest, Power) {
  // 3^40 mod 2^32 = 689956897.
  EXPECT_EQ(Binary("s32[7]", "power", "{2, 2, 1, -1, 2, 0, 3}", "{10, -1, -5, -3, 31, 0, 40}"),
            "{1024, 0, 1, 0, -2147483648, 1, 689956897}");
  EXPECT_EQ(Binary("u8[2]", "power", "{2, 3}", "{9, 5}"), "{0, 243}");
  EXPECT_EQ(Binary("f32[4]", "power", "{2, -8, 0, 4}", "{0.5, 0.333, -1, 0.5}"),
            "{1.4142135, nan, inf, 2}");
}

TEST(EvaluatorElementwiseTest, Atan2AndMinMax) {
  EXPECT_EQ(Binary("f32[3]", "atan2", "{0, -0, 1}", "{-1, -1, 0}"),
            "{3.1415927, -3.1415927, 1.5707964}");
  EXPECT_EQ(Binary("f32[4]", "maximum", "{1, nan, -0, 0}", "{2, 1, 0, -0}"), "{2, nan, 0, 0}");
  EXPECT_EQ(Binary("f32[4]", "minimum", "{1, 1, -0, 0}", "{2, nan, 0, -0}"), "{1, nan, -0, -0}");
  EXPECT_EQ(Binary("u32[1]", "maximum", "{4294967295}", "{1}"), "{4294967295}");
  EXPECT_EQ(Binary("s32[1]", "minimum", "{-1}", "{1}"), "{-1}");
}

TEST(EvaluatorElementwiseTest, CompareDirectionsAndTotalOrder) {
  EXPECT_EQ(Binary("f32[3]", "compare", "{1, nan, -0}", "{2, 1, 0}", "pred[3]",
                   ", direction=LT"),
            "{true, false, false}");
  EXPECT_EQ(Binary("f32[3]", "compare", "{-0, nan, 1}", "{0, nan, 1}", "pred[3]",
                   ", direction=EQ"),
            "{true, false, true}");
  EXPECT_EQ(Binary("f32[2]", "compare", "{nan, 1}", "{nan, 1}", "pred[2]", ", direction=NE"),
            "{true, false}");
  EXPECT_EQ(Binary("f32[3]", "compare", "{1, 2, nan}", "{1, 1, 1}", "pred[3]",
                   ", direction=GE"),
            "{true, true, false}");
  // Total order: -0 < +0, NaN above +inf.
  EXPECT_EQ(Binary("f32[4]", "compare", "{-0, nan, 1, inf}", "{0, 1, nan, nan}", "pred[4]",
                   ", direction=LT, type=TOTALORDER"),
            "{true, false, true, true}");
  EXPECT_EQ(Binary("f32[1]", "compare", "{-0}", "{0}", "pred[1]",
                   ", direction=EQ, type=TOTALORDER"),
            "{false}");
  // -NaN (bits 0xffc00000) sorts below -inf in the total order.
  EXPECT_EQ(Eval(R"(  %bits = s32[1] constant({-4194304})
  %negnan = f32[1] bitcast-convert(%bits)
  %neginf = f32[1] constant({-inf})
  ROOT %lt = pred[1] compare(%negnan, %neginf), direction=LT, type=TOTALORDER)"),
            "{true}");
  EXPECT_EQ(Binary("u32[2]", "compare", "{4294967295, 0}", "{1, 1}", "pred[2]",
                   ", direction=GT"),
            "{true, false}");
  EXPECT_EQ(Binary("s32[2]", "compare", "{-1, 0}", "{1, 1}", "pred[2]", ", direction=GT"),
            "{false, false}");
  EXPECT_EQ(Binary("pred[2]", "compare", "{true, false}", "{false, false}", "pred[2]",
                   ", direction=GT"),
            "{true, false}");
}

TEST(EvaluatorElementwiseTest, SelectAndClamp) {
  EXPECT_EQ(Eval(R"(  %p = pred[3] constant({true, false, true})
  %a = s32[3] constant({1, 2, 3})
  %b = s32[3] constant({10, 20, 30})
  ROOT %s = s32[3] select(%p, %a, %b))"),
            "{1, 20, 3}");
  EXPECT_EQ(Eval(R"(  %lo = f32[] constant(0)
  %x = f32[4] constant({-1, 0.5, 2, nan})
  %hi = f32[] constant(1)
  ROOT %c = f32[4] clamp(%lo, %x, %hi))"),
            "{0, 0.5, 1, nan}");
  EXPECT_EQ(Eval(R"(  %lo = s32[3] constant({0, 5, -3})
  %x = s32[3] constant({-1, 6, 9})
  %hi = s32[3] constant({1, 5, 2})
  ROOT %c = s32[3] clamp(%lo, %x, %hi))"),
            "{0, 5, 2}");
}

TEST(EvaluatorElementwiseTest, ConvertSaturatesAndRoundsOnce) {
  EXPECT_EQ(Unary("f32[6]", "convert", "{nan, inf, -inf, 3.9, -3.9, 1e10}", "s32[6]"),
            "{0, 2147483647, -2147483648, 3, -3, 2147483647}");
  EXPECT_EQ(Unary("f32[4]", "convert", "{-1, 300, 255.9, nan}", "u8[4]"), "{0, 255, 255, 0}");
  EXPECT_EQ(Unary("f64[2]", "convert", "{9.3e18, -9.3e18}", "s64[2]"),
            "{9223372036854775807, -9223372036854775808}");
  EXPECT_EQ(Unary("s32[3]", "convert", "{0, 2, -1}", "pred[3]"), "{false, true, true}");
  EXPECT_EQ(Unary("f32[4]", "convert", "{0, -0, nan, 0.1}", "pred[4]"),
            "{false, false, true, true}");
  EXPECT_EQ(Unary("pred[2]", "convert", "{true, false}", "f32[2]"), "{1, 0}");
  EXPECT_EQ(Unary("s32[3]", "convert", "{300, -1, 128}", "s8[3]"), "{44, -1, -128}");
  EXPECT_EQ(Unary("s32[1]", "convert", "{-1}", "u64[1]"), "{18446744073709551615}");
  EXPECT_EQ(Unary("s64[3]", "convert", "{65504, 65520, 2049}", "f16[3]"), "{6.55e+04, inf, 2048}");
  EXPECT_EQ(Unary("u32[1]", "convert", "{4294967295}", "f32[1]"), "{4.2949673e+09}");
  // f64 -> bf16 rounds once: 1 + 2^-8 + 2^-40 is above the bf16 midpoint, so it rounds up
  // (f64 -> f32 -> bf16 would round to 1).
  EXPECT_EQ(Unary("f64[2]", "convert", "{1.0039062500009095, 1.00390625}", "bf16[2]"),
            "{1.01, 1}");
  // s64 -> bf16 rounds once too: 2^60 + 2^52 + 1 is just above a bf16 tie.
  EXPECT_EQ(Unary("s64[1]", "convert", "{1157425104234217473}", "bf16[1]"),
            Unary("s64[1]", "convert", "{1161928703861587968}", "bf16[1]"));
  EXPECT_NE(Unary("s64[1]", "convert", "{1157425104234217473}", "bf16[1]"),
            Unary("s64[1]", "convert", "{1152921504606846976}", "bf16[1]"));
  EXPECT_EQ(Unary("f32[1]", "convert", "{65536}", "f16[1]"), "{inf}");
  EXPECT_EQ(Unary("bf16[2]", "convert", "{1.5, -inf}", "f16[2]"), "{1.5, -inf}");
}

TEST(EvaluatorElementwiseTest, BitcastConvert) {
  EXPECT_EQ(Unary("f32[2]", "bitcast-convert", "{1, -0}", "u32[2]"), "{1065353216, 2147483648}");
  EXPECT_EQ(Unary("s32[1]", "bitcast-convert", "{2139095040}", "f32[1]"), "{inf}");
  EXPECT_EQ(Unary("u16[1]", "bitcast-convert", "{15360}", "f16[1]"), "{1}");
  // Width-changing: the new minor dim holds the bytes, least significant first.
  EXPECT_EQ(Unary("u32[1]", "bitcast-convert", "{16909060}", "u8[1,4]"), "{{4, 3, 2, 1}}");
}

TEST(EvaluatorElementwiseTest, ReducePrecision) {
  // To bf16 precision: ties round to even.
  EXPECT_EQ(Eval(R"(  %x = f32[3] constant({1.00390625, 1.01171875, 1.0078125})
  ROOT %r = f32[3] reduce-precision(%x), exponent_bits=8, mantissa_bits=7)"),
            "{1, 1.015625, 1.0078125}");
  // To f16 range: overflow -> inf, underflow (incl. denormals) -> signed zero, NaN kept.
  EXPECT_EQ(Eval(R"(  %x = f32[5] constant({1e5, -1e-8, nan, 65504, -3e-5})
  ROOT %r = f32[5] reduce-precision(%x), exponent_bits=5, mantissa_bits=10)"),
            "{inf, -0, nan, 65504, -0}");
  // No mantissa bits: NaN becomes inf; 3 ties to the even exponent, 2.
  EXPECT_EQ(Eval(R"(  %x = f32[2] constant({nan, 3})
  ROOT %r = f32[2] reduce-precision(%x), exponent_bits=8, mantissa_bits=0)"),
            "{inf, 2}");
  EXPECT_EQ(Eval(R"(  %x = f64[1] constant({1.0000001})
  ROOT %r = f64[1] reduce-precision(%x), exponent_bits=8, mantissa_bits=23)"),
            "{1.0000001192092896}");
}

TEST(EvaluatorElementwiseTest, IotaAndScalars) {
  EXPECT_EQ(Eval("  ROOT %i = s32[2,3] iota(), iota_dimension=1"), "{{0, 1, 2}, {0, 1, 2}}");
  EXPECT_EQ(Eval("  ROOT %i = f32[3,2] iota(), iota_dimension=0"), "{{0, 0}, {1, 1}, {2, 2}}");
  EXPECT_EQ(Eval("  ROOT %i = u8[300] iota(), iota_dimension=0").substr(0, 12), "{0, 1, 2, 3,");
  EXPECT_EQ(Binary("f32[]", "add", "1.5", "2"), "3.5");
  EXPECT_EQ(Binary("f32[0]", "add", "{}", "{}"), "{}");
}

}  // namespace
}  // namespace jx::hlo::evaluator_elementwise_test

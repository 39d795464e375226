#include "jx/compiler/hlo/hlo_printer.h"

#include <gtest/gtest.h>

#include "jx/compiler/hlo/hlo_builder.h"

namespace jx::hlo::printer_test {
namespace {

// Builds the jit_f example (x -> sin(x) * sin(x) in a loop fusion) with the builder.
std::unique_ptr<HloModule> BuildExample() {
  auto module = std::make_unique<HloModule>("jit_f");
  Shape f8 = ShapeUtil::MakeShape(F32, {8});
  HloBuilder fused(module.get(), "fused_computation");
  auto* p = fused.Parameter(0, f8, "param_0").value();
  auto* s = fused.Sin(p).value();
  HloComputation* fc = fused.Build(fused.Multiply(s, s).value()).value();
  HloBuilder main(module.get(), "main");
  auto* x = main.Parameter(0, f8, "Arg_0").value();
  main.set_metadata({"", "jit(f)/mul", "", 0});
  auto* fusion = main.Fusion(FusionKind::kLoop, {x}, fc).value();
  module->set_entry_computation(main.Build(fusion).value());
  return module;
}

TEST(HloPrinterTest, GoldenModuleText) {
  EXPECT_EQ(BuildExample()->ToString(),
            R"(HloModule jit_f, entry_computation_layout={(f32[8]{0})->f32[8]{0}}

%fused_computation (param_0: f32[8]) -> f32[8] {
  %param_0 = f32[8]{0} parameter(0)
  %sine.2 = f32[8]{0} sine(f32[8]{0} %param_0)
  ROOT %multiply.3 = f32[8]{0} multiply(f32[8]{0} %sine.2, f32[8]{0} %sine.2)
}

ENTRY %main (Arg_0: f32[8]) -> f32[8] {
  %Arg_0 = f32[8]{0} parameter(0)
  ROOT %fusion.5 = f32[8]{0} fusion(f32[8]{0} %Arg_0), kind=kLoop, calls=%fused_computation, metadata={op_name="jit(f)/mul"}
}
)");
}

TEST(HloPrinterTest, ShortFormAndNoMetadata) {
  auto module = BuildExample();
  HloPrintOptions options = HloPrintOptions::ShortParsable();
  options.print_metadata = false;
  const HloInstruction* root = module->entry_computation()->root_instruction();
  EXPECT_EQ(root->ToString(options),
            "ROOT %fusion.5 = f32[8]{0} fusion(%Arg_0), kind=kLoop, calls=%fused_computation");
  EXPECT_EQ(PrintHloModule(*module, options).find("metadata"), std::string::npos);
}

TEST(HloPrinterTest, AttributeForms) {
  HloModule module("m");
  HloBuilder b(&module, "main");
  auto* x = b.Parameter(0, ShapeUtil::MakeShape(F32, {4, 6}), "x").value();
  auto* zero = b.Constant(Literal::CreateR0<float>(0)).value();
  EXPECT_EQ(b.Slice(x, {0, 1}, {4, 5}, {1, 1}).value()->ToString(),
            "%slice.3 = f32[4,4]{1,0} slice(f32[4,6]{1,0} %x), slice={[0:4], [1:5]}");
  EXPECT_EQ(b.Slice(x, {0, 1}, {4, 5}, {2, 1}).value()->ToString(),
            "%slice.4 = f32[2,4]{1,0} slice(f32[4,6]{1,0} %x), slice={[0:4:2], [1:5:1]}");
  EXPECT_EQ(b.Pad(x, zero, {{0, 1, 0}, {2, 0, 1}}).value()->ToString(),
            "%pad.5 = f32[5,13]{1,0} pad(f32[4,6]{1,0} %x, f32[] %constant.2), padding=0_1_0x2_0_1");
  auto* lt = b.Compare(x, x, ComparisonDirection::kLt).value();
  EXPECT_EQ(lt->ToString(), "%compare.6 = pred[4,6]{1,0} compare(f32[4,6]{1,0} %x, f32[4,6]{1,0} %x), direction=LT");
  auto* cc = b.CustomCall("my\"target", {x}, ShapeUtil::MakeShape(F32, {2}), "cfg").value();
  EXPECT_EQ(cc->ToString(),
            "%custom-call.7 = f32[2]{0} custom-call(f32[4,6]{1,0} %x), "
            "custom_call_target=\"my\\\"target\", backend_config=\"cfg\"");
  EXPECT_EQ(b.Constant(Literal::CreateR1<int32_t>({1, 2, 3})).value()->ToString(),
            "%constant.8 = s32[3]{0} constant({1, 2, 3})");
  EXPECT_EQ(b.Iota(ShapeUtil::MakeShape(S32, {3}), 0).value()->ToString(),
            "%iota.9 = s32[3]{0} iota(), iota_dimension=0");
}

TEST(HloPrinterTest, OperandPrecisionPrintsOnlyWhenNotDefault) {
  HloModule module("m");
  HloBuilder b(&module, "main");
  auto* x = b.Parameter(0, ShapeUtil::MakeShape(F32, {2, 3}), "x").value();
  auto* y = b.Parameter(1, ShapeUtil::MakeShape(F32, {3, 4}), "y").value();
  DotDimensionNumbers mm;
  mm.lhs_contracting_dims = {1};
  mm.rhs_contracting_dims = {0};
  EXPECT_EQ(b.Dot(x, y, mm).value()->ToString(),
            "%dot.3 = f32[2,4]{1,0} dot(f32[2,3]{1,0} %x, f32[3,4]{1,0} %y), "
            "lhs_contracting_dims={1}, rhs_contracting_dims={0}");
  PrecisionConfig highest{{Precision::kHighest, Precision::kHighest}};
  EXPECT_EQ(b.Dot(x, y, mm, PRIMITIVE_TYPE_INVALID, highest).value()->ToString(),
            "%dot.4 = f32[2,4]{1,0} dot(f32[2,3]{1,0} %x, f32[3,4]{1,0} %y), "
            "lhs_contracting_dims={1}, rhs_contracting_dims={0}, "
            "operand_precision={highest,highest}");
  HloInstruction* mixed =
      b.Dot(x, y, mm, F64, PrecisionConfig{{Precision::kDefault, Precision::kHigh}}).value();
  EXPECT_EQ(mixed->ToString(),
            "%dot.5 = f64[2,4]{1,0} dot(f32[2,3]{1,0} %x, f32[3,4]{1,0} %y), "
            "lhs_contracting_dims={1}, rhs_contracting_dims={0}, "
            "operand_precision={default,high}");
  // Setting it back to all-default drops the attribute, as XLA omits it.
  mixed->set_precision_config({});
  EXPECT_FALSE(mixed->HasAttr(HloAttr::kOperandPrecision));
  auto* in = b.Parameter(2, ShapeUtil::MakeShape(F32, {1, 4, 3}), "in").value();
  auto* k = b.Parameter(3, ShapeUtil::MakeShape(F32, {2, 3, 5}), "k").value();
  ConvolutionDimensionNumbers conv = ParseConvolutionDimensionNumbers("b0f_0io->b0f").value();
  EXPECT_EQ(b.Convolution(in, k, ParseWindow("{size=2}").value(), conv, 1, 1,
                          PRIMITIVE_TYPE_INVALID, PrecisionConfig{{Precision::kHigh,
                                                                   Precision::kHighest}})
                .value()
                ->ToString(),
            "%convolution.8 = f32[1,3,5]{2,1,0} convolution(f32[1,4,3]{2,1,0} %in, "
            "f32[2,3,5]{2,1,0} %k), window={size=2}, dim_labels=b0f_0io->b0f, "
            "operand_precision={high,highest}");
}

}  // namespace
}  // namespace jx::hlo::printer_test

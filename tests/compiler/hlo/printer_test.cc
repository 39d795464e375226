#include "jx/compiler/hlo/hlo_printer.h"

#include <gtest/gtest.h>

#include "jx/compiler/hlo/hlo_builder.h"

namespace jx::hlo {
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

}  // namespace
}  // namespace jx::hlo

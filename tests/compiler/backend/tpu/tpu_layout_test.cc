// TPU tiles per element type and rank, padded bytes, and the TPU layout assignment pass.
#include "jx/compiler/backend/tpu/tpu_layout.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "jx/compiler/backend/tpu/tpu_layout_assignment.h"
#include "tests/compiler/passes/pass_test_util.h"

namespace jx::tpu::tpu_layout_test {
namespace {

using hlo::ShapeUtil;
using hlo::testing::EntryLines;
using hlo::testing::ParseAndRun;
using ::testing::ElementsAre;

std::string Tiled(std::string_view shape_text) {
  return WithTpuLayout(ShapeUtil::ParseShape(shape_text).value()).ToString();
}

TEST(TpuLayoutTest, TilesPerElementWidth) {
  EXPECT_EQ(Tiled("f32[256,512]"), "f32[256,512]{1,0:T(8,128)}");
  EXPECT_EQ(Tiled("s32[4,16,256]"), "s32[4,16,256]{2,1,0:T(8,128)}");
  EXPECT_EQ(Tiled("bf16[256,512]"), "bf16[256,512]{1,0:T(16,128)(2,1)}");
  EXPECT_EQ(Tiled("f16[64,64]"), "f16[64,64]{1,0:T(16,128)(2,1)}");
  EXPECT_EQ(Tiled("s8[64,512]"), "s8[64,512]{1,0:T(32,128)(4,1)}");
  EXPECT_EQ(Tiled("pred[64,512]"), "pred[64,512]{1,0:T(32,128)(4,1)}");
  EXPECT_EQ(Tiled("f64[16,128]"), "f64[16,128]{1,0:T(8,128)}");
}

TEST(TpuLayoutTest, SmallArraysGetSmallTilesAndScalarsNone) {
  EXPECT_EQ(Tiled("f32[2,300]"), "f32[2,300]{1,0:T(2,128)}");
  EXPECT_EQ(Tiled("f32[1,128]"), "f32[1,128]{1,0:T(1,128)}");
  EXPECT_EQ(Tiled("f32[5,7]"), "f32[5,7]{1,0:T(8,128)}");
  EXPECT_EQ(Tiled("bf16[3,128]"), "bf16[3,128]{1,0:T(4,128)(2,1)}");
  EXPECT_EQ(Tiled("bf16[1,128]"), "bf16[1,128]{1,0:T(2,128)(2,1)}");
  EXPECT_EQ(Tiled("f32[100]"), "f32[100]{0:T(128)}");
  EXPECT_EQ(Tiled("f32[300]"), "f32[300]{0:T(512)}");
  EXPECT_EQ(Tiled("f32[5000]"), "f32[5000]{0:T(1024)}");
  EXPECT_EQ(Tiled("f32[]"), "f32[]");
  EXPECT_EQ(Tiled("(f32[2,3], s32[])"), "(f32[2,3]{1,0:T(2,128)}, s32[])");
}

TEST(TpuLayoutTest, TilesFollowThePhysicalMinorDims) {
  // Column-major: the physical minor dim is dim 0 (300), the second-minor dim 1 (2).
  EXPECT_EQ(Tiled("f32[300,2]{0,1}"), "f32[300,2]{0,1:T(2,128)}");
}

TEST(TpuLayoutTest, PaddedBytesRoundsMinorDimsUpToWholeTiles) {
  // 300 x 100 f32: rows 300 -> 304 (8), cols 100 -> 128: 304 * 128 * 4.
  EXPECT_EQ(PaddedBytes(ShapeUtil::MakeShape(hlo::F32, {300, 100})), 304 * 128 * 4);
  EXPECT_EQ(PaddedBytes(ShapeUtil::MakeShape(hlo::F32, {256, 512})), 256 * 512 * 4);
  // bf16 rows pad to 16: 17 x 129 -> 32 x 256 x 2 bytes.
  EXPECT_EQ(PaddedBytes(ShapeUtil::MakeShape(hlo::BF16, {17, 129})), 32 * 256 * 2);
  // Major dims are not padded: 3 x (8 x 128) tiles.
  EXPECT_EQ(PaddedBytes(ShapeUtil::MakeShape(hlo::F32, {3, 5, 7})), 3 * 8 * 128 * 4);
  EXPECT_EQ(PaddedBytes(ShapeUtil::MakeShape(hlo::F32, {100})), 128 * 4);
  EXPECT_EQ(PaddedBytes(ShapeUtil::MakeScalarShape(hlo::F32)), 4);
  // An explicitly tiled layout is what counts.
  EXPECT_EQ(PaddedBytes(ShapeUtil::ParseShape("f32[10,10]{1,0:T(2,2)}").value()), 10 * 10 * 4);
  EXPECT_EQ(PaddedBytes(ShapeUtil::ParseShape("(f32[8,128], f32[])").value()), 8 * 128 * 4 + 4);
}

TEST(TpuLayoutAssignmentTest, TilesEveryArrayAndKeepsParametersAndOutputsInHbm) {
  auto module = ParseAndRun<TpuLayoutAssignment>(R"(HloModule m
%fused (p: f32[300,100]) -> f32[300,100] {
  %p = f32[300,100]{1,0} parameter(0)
  ROOT %e = f32[300,100]{1,0} exponential(%p)
}
ENTRY %main {
  %a = f32[300,100]{1,0:S(1)} parameter(0)
  %h = bf16[300,100]{1,0} convert(%a)
  %c = f32[300,100]{1,0} convert(%h)
  %f = f32[300,100]{1,0:S(1)} fusion(%c), kind=kLoop, calls=%fused
  %s = f32[] constant(1)
  ROOT %t = (f32[300,100]{1,0:S(1)}, f32[]) tuple(%f, %s)
}
)", /*expect_changed=*/true);
  EXPECT_THAT(EntryLines(*module),
              ElementsAre("%a = f32[300,100]{1,0:T(8,128)} parameter(0)",
                          "%h = bf16[300,100]{1,0:T(16,128)(2,1)} convert(%a)",
                          "%c = f32[300,100]{1,0:T(8,128)} convert(%h)",
                          "%f = f32[300,100]{1,0:T(8,128)} fusion(%c), kind=kLoop, calls=%fused",
                          "%s = f32[] constant(1)",
                          "ROOT %t = (f32[300,100]{1,0:T(8,128)}, f32[]) tuple(%f, %s)"));
  EXPECT_THAT(hlo::testing::ComputationLines(*module->GetComputationWithName("fused")),
              ElementsAre("%p = f32[300,100]{1,0:T(8,128)} parameter(0)",
                          "ROOT %e = f32[300,100]{1,0:T(8,128)} exponential(%p)"));
}

TEST(TpuLayoutAssignmentTest, KeepsTheVmemPlacementOfIntermediates) {
  auto module = ParseAndRun<TpuLayoutAssignment>(R"(HloModule m
ENTRY %main {
  %a = f32[8,128]{1,0:T(8,128)} parameter(0)
  %n = f32[8,128]{1,0:S(1)} negate(%a)
  ROOT %e = f32[8,128]{1,0:T(8,128)} exponential(%n)
}
)", /*expect_changed=*/true);
  EXPECT_THAT(EntryLines(*module),
              ElementsAre("%a = f32[8,128]{1,0:T(8,128)} parameter(0)",
                          "%n = f32[8,128]{1,0:T(8,128)S(1)} negate(%a)",
                          "ROOT %e = f32[8,128]{1,0:T(8,128)} exponential(%n)"));
}

}  // namespace
}  // namespace jx::tpu::tpu_layout_test

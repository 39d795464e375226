// Tiles and memory spaces in layouts, and the mxu_tiling / vmem_tiling attributes: printed
// and parsed in XLA's notation, preserved by print/parse round trips and module clones.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "jx/compiler/hlo/hlo_module.h"
#include "jx/compiler/hlo/hlo_parser.h"
#include "jx/compiler/hlo/hlo_verifier.h"
#include "jx/compiler/hlo/shape.h"

namespace jx::hlo::tiled_layout_test {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(TiledLayoutTest, PrintsTilesAndMemorySpaceAfterAColon) {
  Shape s = ShapeUtil::MakeShape(F32, {256, 512});
  Layout layout = s.layout();
  layout.tiles = {Tile{{8, 128}}};
  s.set_layout(layout);
  EXPECT_EQ(s.ToString(), "f32[256,512]{1,0:T(8,128)}");
  layout.memory_space = 1;
  s.set_layout(layout);
  EXPECT_EQ(s.ToString(), "f32[256,512]{1,0:T(8,128)S(1)}");
  layout.tiles = {Tile{{16, 128}}, Tile{{2, 1}}};
  s.set_layout(layout);
  EXPECT_EQ(s.ToString(), "f32[256,512]{1,0:T(16,128)(2,1)S(1)}");
  // Without tiles or memory space nothing follows the dims, as before.
  EXPECT_EQ(ShapeUtil::MakeShape(F32, {2, 3}).ToString(), "f32[2,3]{1,0}");
}

TEST(TiledLayoutTest, ScalarsShowALayoutOnlyForAMemorySpace) {
  Shape s = ShapeUtil::MakeScalarShape(F32);
  EXPECT_EQ(s.ToString(), "f32[]");
  Layout layout;
  layout.memory_space = 1;
  s.set_layout(layout);
  EXPECT_EQ(s.ToString(), "f32[]{:S(1)}");
  EXPECT_EQ(ShapeUtil::ParseShape("f32[]{:S(1)}").value(), s);
}

TEST(TiledLayoutTest, ParsesWhatItPrints) {
  for (const char* text : {"f32[256,512]{1,0:T(8,128)}", "bf16[64,256]{1,0:T(16,128)(2,1)}",
                           "s8[3,5,7]{2,1,0:T(32,128)(4,1)S(1)}", "f32[300]{0:T(1024)}",
                           "f32[4,4]{0,1:S(1)}", "(f32[8,128]{1,0:T(8,128)}, s32[])"}) {
    absl::StatusOr<Shape> shape = ShapeUtil::ParseShape(text);
    ASSERT_TRUE(shape.ok()) << text << ": " << shape.status();
    EXPECT_EQ(shape->ToString(), text);
  }
  const Shape s = ShapeUtil::ParseShape("f32[8,256]{1,0:T(8,128)S(1)}").value();
  EXPECT_THAT(s.layout().minor_to_major, ElementsAre(1, 0));
  ASSERT_EQ(s.layout().tiles.size(), 1u);
  EXPECT_EQ(s.layout().tiles[0].dimensions, (std::vector<int64_t>{8, 128}));
  EXPECT_EQ(s.layout().memory_space, 1);
}

TEST(TiledLayoutTest, TilesTakePartInEqualityButNotCompatibility) {
  const Shape tiled = ShapeUtil::ParseShape("f32[8,128]{1,0:T(8,128)}").value();
  const Shape plain = ShapeUtil::ParseShape("f32[8,128]{1,0}").value();
  EXPECT_NE(tiled, plain);
  EXPECT_TRUE(ShapeUtil::Compatible(tiled, plain));
}

TEST(TiledLayoutTest, RejectsMalformedTilesAndSpaces) {
  for (const char* text : {"f32[8,128]{1,0:T()}", "f32[8,128]{1,0:T(8,128,1,1)}",
                           "f32[8,128]{1,0:T(0,128)}", "f32[8,128]{1,0:S(1,2)}",
                           "f32[8,128]{1,0:X(1)}", "f32[8,128]{1,0:T(8,128)", "f32[8]{0:S(-1)}"}) {
    EXPECT_FALSE(ShapeUtil::ParseShape(text).ok()) << text;
  }
}

constexpr char kTiledModule[] = R"(HloModule m
ENTRY %main {
  %a = f32[300,100]{1,0:T(8,128)} parameter(0)
  %b = f32[100,200]{1,0:T(8,128)} parameter(1)
  %d = f32[300,200]{1,0:T(8,128)S(1)} dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}, mxu_tiling={tile=128x128, mkn=300x100x200, padded_mkn=304x128x256, batch=1, k_tiles=1, n_tiles=2, m_groups=38, mxus=2, waves=1}
  ROOT %n = f32[300,200]{1,0:T(8,128)} negate(%d), vmem_tiling={grid=2x1, block=152x200, steps=2, vmem_bytes=100, hbm_bytes=200}
}
)";

TEST(TiledLayoutTest, ModuleRoundTripKeepsLayoutsAndTilingAttributes) {
  std::unique_ptr<HloModule> module = ParseHloModule(kTiledModule).value();
  ASSERT_TRUE(VerifyHloModule(*module).ok()) << VerifyHloModule(*module);
  const HloInstruction* dot = module->entry_computation()->GetInstructionWithName("d");
  ASSERT_TRUE(dot->has_mxu_tiling());
  EXPECT_EQ(dot->mxu_tiling().padded_n, 256);
  EXPECT_EQ(dot->mxu_tiling().m_groups, 38);
  EXPECT_EQ(dot->shape().layout().memory_space, 1);
  const HloInstruction* root = module->entry_computation()->root_instruction();
  ASSERT_TRUE(root->has_vmem_tiling());
  EXPECT_EQ(root->vmem_tiling().grid, (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(root->vmem_tiling().steps, 2);
  const std::string text = module->ToString();
  EXPECT_THAT(text, HasSubstr("f32[300,200]{1,0:T(8,128)S(1)} dot("));
  EXPECT_THAT(text, HasSubstr("mxu_tiling={tile=128x128, mkn=300x100x200, padded_mkn=304x128x256, "
                              "batch=1, k_tiles=1, n_tiles=2, m_groups=38, mxus=2, waves=1}"));
  EXPECT_THAT(text, HasSubstr("vmem_tiling={grid=2x1, block=152x200, steps=2, vmem_bytes=100, "
                              "hbm_bytes=200}"));
  std::unique_ptr<HloModule> clone = module->Clone().value();
  EXPECT_EQ(clone->ToString(), text);
  EXPECT_TRUE(dot->IdenticalIgnoringOperands(
      *clone->entry_computation()->GetInstructionWithName("d")));
}

TEST(TiledLayoutTest, BadTilingAttributesAreClearErrors) {
  std::string text = kTiledModule;
  text.replace(text.find("waves=1"), 7, "waves=x");
  absl::StatusOr<std::unique_ptr<HloModule>> bad = ParseHloModule(text);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("mxu_tiling"));
  text = kTiledModule;
  text.replace(text.find("steps=2"), 7, "stepz=2");
  bad = ParseHloModule(text);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("vmem_tiling"));
}

TEST(TiledLayoutTest, UsefulFraction) {
  MxuTiling t;
  t.m = 300, t.k = 100, t.n = 200;
  t.padded_m = 304, t.padded_k = 128, t.padded_n = 256;
  EXPECT_DOUBLE_EQ(t.UsefulFraction(), 300.0 * 100 * 200 / (304.0 * 128 * 256));
}

}  // namespace
}  // namespace jx::hlo::tiled_layout_test

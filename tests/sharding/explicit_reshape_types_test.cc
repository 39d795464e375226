// Explicit-sharding types of a reshape with the mesh in context (jx::use_mesh, JAX's
// jax.sharding.use_mesh): splitting or merging a sharded dimension is allowed when every device
// keeps one block of the result (the axes move to the pieces they split whole), and is a
// TypeError naming the dimensions and sizes otherwise. Without a mesh in context only what
// names show is checked.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "jx/core/interpreter.h"
#include "jx/jx.h"
#include "jx/sharding/use_mesh.h"

namespace jx::explicit_reshape_types_test {
namespace {

using ::testing::HasSubstr;

ShapedArray Typed(Shape shape, DimShardings spec) {
  ShapedArray a{std::move(shape)};
  a.spec = std::move(spec);
  return a;
}

// The reshape's result type, or the TypeError's message prefixed "TypeError: ".
std::string Reshape(const ShapedArray& x, std::vector<int64_t> new_sizes) {
  lax::RegisterAll();
  const ParamMap params{{"new_sizes", new_sizes}, {"dimensions", ParamNone{}}, {"sharding", ParamNone{}}};
  const ShapedArray* in[] = {&x};
  try {
    return AbstractEval(lax::kReshape, in, params)[0].str();
  } catch (const TypeError& e) {
    return StrCat("TypeError: ", e.what());
  }
}

TEST(ExplicitReshapeTypesTest, MergingKeepsTheShardingOnlyWhenTheMajorDimIsSplitWhole) {
  const ShapedArray both = Typed({8, 4}, {{"x"}, {"y"}});
  // x of size 8 splits the rows one per device: y then splits each row, one block each.
  {
    use_mesh in_context(AbstractMesh({8, 2}, {"x", "y"}));
    EXPECT_EQ(Reshape(both, {32}), "f32[32@(x,y)]");
  }
  // x of size 4 leaves two rows per device, each cut by y: strided elements.
  {
    use_mesh in_context(AbstractMesh({4, 2}, {"x", "y"}));
    const std::string e = Reshape(both, {32});
    EXPECT_THAT(e, HasSubstr("TypeError: [reshape] This reshape is not supported"));
    EXPECT_THAT(e, HasSubstr("f32[8@x,4@y]"));
    EXPECT_THAT(e, HasSubstr("merges dimensions into dimension 0 of its result (size 32)"));
    EXPECT_THAT(e, HasSubstr("minor one sharded over 'y' (size 2)"));
    EXPECT_THAT(e, HasSubstr("a major one (size 8) split only 4 ways over 'x' (size 4)"));
    // The major dim alone sharded merges fine at any size that divides it.
    EXPECT_EQ(Reshape(Typed({8, 4}, {{"x"}, {}}), {32}), "f32[32@x]");
  }
  // Without a mesh in context the sizes are unknown: a split major dim is taken as whole.
  EXPECT_EQ(Reshape(both, {32}), "f32[32@(x,y)]");
  EXPECT_THAT(Reshape(Typed({8, 4}, {{}, {"y"}}), {32}), HasSubstr("strided"));
}

TEST(ExplicitReshapeTypesTest, SplittingHandsTheAxesToThePiecesTheySplitWhole) {
  use_mesh in_context(AbstractMesh({2, 4}, {"x", "y"}));
  // [32@x] with x:2 -> [2, 16]: x splits the major piece whole.
  EXPECT_EQ(Reshape(Typed({32}, {{"x"}}), {2, 16}), "f32[2@x,16]");
  // [32@(x,y)] -> [2, 16]: x takes the 2 whole, y goes on to the 16.
  EXPECT_EQ(Reshape(Typed({32}, {{"x", "y"}}), {2, 16}), "f32[2@x,16@y]");
  // -> [4, 8]: x splits the 4 in halves, y cannot take the rest of it: (x, y) is 8 pieces of
  // 4 elements, and [4, 8] has no sharding that gives each device one of them.
  const std::string e = Reshape(Typed({32}, {{"x", "y"}}), {4, 8});
  EXPECT_THAT(e, HasSubstr("TypeError: [reshape] This reshape is not supported"));
  EXPECT_THAT(e, HasSubstr("splits dimension 0 of operand 0 (size 32, sharded over ('x', 'y') (2 x 4)) into "
                           "pieces of sizes (4, 8)"));
  EXPECT_THAT(e, HasSubstr("'y' (size 4) does not divide the piece of size 2"));
  // [32@y] with y:4 -> [2, 16]: y does not divide the major piece.
  EXPECT_THAT(Reshape(Typed({32}, {{"y"}}), {2, 16}), HasSubstr("'y' (size 4) does not divide the piece of size 2"));
}

TEST(ExplicitReshapeTypesTest, TracesCheckWithTheArgumentsMeshOrTheOneInContext) {
  tpu::Pod pod = tpu::make_pod("v5e", {4, 2});
  Mesh mesh = make_mesh({4, 2}, {"x", "y"}, pod.devices());
  const Array x = device_put(numpy::ones({8, 4}), NamedSharding(mesh, P("x", "y")));
  auto merge = [](const Array& a) { return a.reshape({32}); };
  const Array rows = device_put(numpy::ones({8, 4}), NamedSharding(mesh, P("x", none)));
  // jit traces its arguments with their mesh in context, as JAX's jit reads it from their types.
  try {
    jit(merge)(x);
    FAIL() << "expected TypeError";
  } catch (const TypeError& e) {
    EXPECT_THAT(e.what(), HasSubstr("a major one (size 8) split only 4 ways over 'x' (size 4)"));
  }
  EXPECT_EQ(jit(merge)(rows).sharding()->ToString(), NamedSharding(mesh, P("x")).ToString());
  // make_jaxpr reads the mesh in context.
  use_mesh in_context(mesh);
  EXPECT_THROW(make_jaxpr(merge)(x), TypeError);
  EXPECT_THAT(make_jaxpr(merge)(rows).ToString(), HasSubstr("f32[32@x]"));
}

}  // namespace
}  // namespace jx::explicit_reshape_types_test

// make_jaxpr on explicitly sharded arrays follows JAX's explicit-sharding rules with no mesh
// set by hand: the arguments' mesh is in context (as jit puts it). Mesh x:4, y:2 on a v5e 4x2
// pod.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "jx/jx.h"

namespace jx::make_jaxpr_mesh_context_test {
namespace {

namespace jnp = jx::numpy;
using ::testing::HasSubstr;

class MakeJaxprMeshContextTest : public ::testing::Test {
 protected:
  tpu::Pod pod_ = tpu::make_pod("v5e", {4, 2});
  Mesh mesh_ = make_mesh({4, 2}, {"x", "y"}, pod_.devices());
  Array value_ = jnp::arange(32, float32).reshape({8, 4});
  Array both_ = device_put(value_, NamedSharding(mesh_, P("x", "y")));   // f32[8@x,4@y]
  Array rows_ = device_put(value_, NamedSharding(mesh_, P("x", none)));  // f32[8@x,4]
};

// make_jaxpr puts its arguments' mesh in context as jit does: the reshape check is exact
// without jx::use_mesh.
TEST_F(MakeJaxprMeshContextTest, MakeJaxprReadsTheArgumentsMesh) {
  auto merge = [](const Array& a) { return a.reshape({32}); };
  EXPECT_THROW(make_jaxpr(merge)(both_), TypeError);
  EXPECT_THAT(make_jaxpr(merge)(rows_).ToString(), HasSubstr("f32[32@x]"));
  // A mesh in context wins over the arguments' (here one where x splits the rows whole).
  use_mesh in_context(AbstractMesh({8, 2}, {"x", "y"}));
  EXPECT_THAT(make_jaxpr(merge)(both_).ToString(), HasSubstr("f32[32@(x,y)]"));
}

}  // namespace
}  // namespace jx::make_jaxpr_mesh_context_test

// shard_map's errors, worded as JAX's: out_specs claiming replication the body does not
// have (which output, which axes, how to fix), specs that do not divide a shape, unknown
// axis names in specs and in collectives, collectives outside shard_map.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "jx/jx.h"

namespace jx::shard_map_errors_test {
namespace {

namespace jnp = jx::numpy;
using ::testing::HasSubstr;

class ShardMapErrorsTest : public ::testing::Test {
 protected:
  tpu::Pod pod_ = tpu::make_pod("v5e", {4, 2});
  Mesh mesh_ = make_mesh({4, 2}, {"x", "y"}, pod_.devices());
};

template <typename Fn>
std::string ErrorOf(Fn fn) {
  try {
    fn();
  } catch (const ValueError& e) {
    return e.what();
  }
  return "no error";
}

TEST_F(ShardMapErrorsTest, OutSpecsClaimingReplicationOverOneAxis) {
  // The matmul's partial sums vary over y; out_specs P('x', None) claims they do not.
  auto f = shard_map([](const Array& a, const Array& b) { return jnp::matmul(a, b); }, mesh_,
                     in_specs{P("x", "y"), P("y", none)}, out_specs{P("x", none)});
  const std::string msg = ErrorOf([&] { f(jnp::ones({8, 4}), jnp::ones({4, 2})); });
  EXPECT_THAT(msg, HasSubstr("shard_map applied to the function 'f' was given out_specs which require replication "
                             "which can't be statically inferred given the mesh:"));
  EXPECT_THAT(msg, HasSubstr("The mesh given has shape (4, 2) with corresponding axis names ('x', 'y')."));
  EXPECT_THAT(msg, HasSubstr("out_specs[0] is P('x', None) which implies that the corresponding output value is "
                             "replicated across mesh axis 'y', but could not infer replication over any axes"));
  EXPECT_THAT(msg, HasSubstr("lax::psum or lax::pmean"));
  EXPECT_THAT(msg, HasSubstr("check_vma=false"));
}

TEST_F(ShardMapErrorsTest, OutSpecsClaimingReplicationOverSeveralAxes) {
  auto f = shard_map([](const Array& a) { return std::make_tuple(a, lax::psum(a, {"x", "y"})); }, mesh_,
                     in_specs{P("x", "y")}, out_specs{P(), P()});
  const std::string msg = ErrorOf([&] { f(jnp::ones({8, 4})); });
  EXPECT_THAT(msg, HasSubstr("out_specs[0] is P() which implies that the corresponding output value is only varying "
                             "across mesh axes {} and not {x,y}, but it was inferred to be possibly varying over "
                             "{x,y}"));
  EXPECT_THAT(msg, ::testing::Not(HasSubstr("out_specs[1]")));
}

TEST_F(ShardMapErrorsTest, CheckVmaFalseSkipsTheCheck) {
  auto f = shard_map([](const Array& a) { return a; }, mesh_, in_specs{P("x")}, out_specs{P()},
                     {.check_vma = false});
  Array y = f(jnp::arange(8, float32));
  EXPECT_EQ(y.shape(), (Shape{2}));
}

TEST_F(ShardMapErrorsTest, SpecThatDoesNotDivide) {
  auto f = shard_map([](const Array& a) { return a; }, mesh_, in_specs{P("x", none)}, out_specs{P("x", none)});
  const std::string msg = ErrorOf([&] { f(jnp::ones({7, 4})); });
  EXPECT_THAT(msg, HasSubstr("was given argument arrays with axis sizes that are not evenly divisible by the "
                             "corresponding mesh axis sizes"));
  EXPECT_THAT(msg, HasSubstr("* args[0] of shape float32[7,4] corresponds to in_specs[0] of value P('x', None), "
                             "which maps array axis 0 (of size 7) to mesh axis 'x' (of total size 4), but 4 does "
                             "not evenly divide 7"));
}

TEST_F(ShardMapErrorsTest, UnknownAxisInSpecs) {
  auto f = shard_map([](const Array& a) { return a; }, mesh_, in_specs{P("z")}, out_specs{P("z")});
  const std::string msg = ErrorOf([&] { f(jnp::ones({8})); });
  EXPECT_THAT(msg, HasSubstr("in_specs[0] is P('z',), which names axis 'z' that the mesh lacks: the mesh has axes "
                             "('x', 'y')"));
}

TEST_F(ShardMapErrorsTest, UnknownAxisInCollective) {
  auto f = shard_map([](const Array& a) { return lax::psum(a, "z"); }, mesh_, in_specs{P("x")}, out_specs{P("x")});
  const std::string msg = ErrorOf([&] { f(jnp::ones({8})); });
  EXPECT_THAT(msg, HasSubstr("[psum] unbound axis name 'z': the enclosing shard_map's manual axes are ('x', 'y')"));
}

TEST_F(ShardMapErrorsTest, CollectiveOnAnAutoAxis) {
  auto f = shard_map([](const Array& a) { return lax::psum(a, "y"); }, mesh_, in_specs{P("x")}, out_specs{P("x")},
                     {.axis_names = {"x"}});
  const std::string msg = ErrorOf([&] { f(jnp::ones({8})); });
  EXPECT_THAT(msg, HasSubstr("unbound axis name 'y': the enclosing shard_map's manual axes are ('x',)"));
}

TEST_F(ShardMapErrorsTest, CollectiveOutsideShardMap) {
  const std::string msg = ErrorOf([&] { lax::psum(jnp::ones({2}), "x"); });
  EXPECT_THAT(msg, HasSubstr("[psum] unbound axis name 'x': collectives run inside a shard_map body"));
}

// Partial-manual: the body is manual over x only; data stays whole along y.
TEST_F(ShardMapErrorsTest, PartialManualAxisNames) {
  auto f = shard_map([](const Array& a) { return lax::psum(a, "x"); }, mesh_, in_specs{P("x")}, out_specs{P()},
                     {.axis_names = {"x"}});
  Array y = f(jnp::arange(8, float32));
  EXPECT_THAT(y.to_vector<float>(), ::testing::ElementsAreArray({12.f, 16.f}));
  std::string text = make_jaxpr(f)(jnp::arange(8, float32)).ToString();
  EXPECT_THAT(text, HasSubstr("manual_axes=('x',)"));
}

}  // namespace
}  // namespace jx::shard_map_errors_test

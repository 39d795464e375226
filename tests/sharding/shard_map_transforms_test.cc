// shard_map under transformations and its jaxpr: the seed's sharded matmul equals the
// unsharded one; grad through shard_map and inside it equals the unsharded program's and
// finite differences; vmap of shard_map and vmap inside it; make_jaxpr prints the
// shard_map equation with pvary where operands' varying axes differ, as JAX prints it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <vector>

#include "jx/jx.h"
#include "jx/transforms/jaxpr_util.h"

namespace jx::shard_map_transforms_test {
namespace {

namespace jnp = jx::numpy;
using ::testing::HasSubstr;

void ExpectClose(const Array& got, const Array& want, double tol = 1e-5) {
  ASSERT_EQ(got.shape(), want.shape());
  const std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], w[i], tol * (1 + std::abs(w[i]))) << "element " << i;
}

Array Ramp(Shape shape, double scale) {
  const int64_t n = NumElements(shape);
  return (jnp::sin(jnp::arange(n, float32) * scale) + 0.5f).reshape(shape);
}

class ShardMapTransformsTest : public ::testing::Test {
 protected:
  tpu::Pod pod_ = tpu::make_pod("v5e", {4, 2});
  Mesh mesh_ = make_mesh({4, 2}, {"x", "y"}, pod_.devices());
};

// The seed program: P('x','y') x P('y', None) -> P('x', None) with psum over y, equal to the
// unsharded matmul on one chip of the same pod (the chips multiply with the TPU's default
// precision; only the order of the f32 accumulation differs).
TEST_F(ShardMapTransformsTest, SeedMatmulEqualsUnsharded) {
  auto matmul = shard_map([](const Array& a, const Array& b) { return lax::psum(jnp::matmul(a, b), "y"); }, mesh_,
                          in_specs{P("x", "y"), P("y", none)}, out_specs{P("x", none)});
  Array a = Ramp({8, 16}, 0.3), b = Ramp({16, 4}, 0.7);
  Array c = matmul(a, b);
  const Device* chip = pod_.devices()[0];
  ExpectClose(c, jnp::matmul(device_put(a, chip), device_put(b, chip)), 1e-5);
  // With f32 products (HIGHEST) it is the host's f32 matmul.
  auto exact = shard_map(
      [](const Array& a_, const Array& b_) {
        return lax::psum(lax::dot(a_, b_, lax::Precision::kHighest), "y");
      },
      mesh_, in_specs{P("x", "y"), P("y", none)}, out_specs{P("x", none)});
  ExpectClose(exact(a, b), jnp::matmul(a, b), 1e-5);
  EXPECT_EQ(c.shape(), (Shape{8, 4}));
  EXPECT_EQ(c.addressable_shards().size(), 8u);
  EXPECT_EQ(c.addressable_shards()[0].data.shape(), (Shape{2, 4}));
}

// make_jaxpr shows the equation, the per-device types with their varying axes, and the
// pvary JAX inserts before a binary op of a varying and an invariant operand.
TEST_F(ShardMapTransformsTest, JaxprPrintsLikeJax) {
  auto f = shard_map([](const Array& a, const Array& b) { return lax::psum(jnp::matmul(a, b), "y"); }, mesh_,
                     in_specs{P("x", "y"), P("y", none)}, out_specs{P("x", none)});
  std::string text = make_jaxpr(f)(Ramp({8, 16}, 0.3), Ramp({16, 4}, 0.7)).ToString();
  EXPECT_THAT(text, HasSubstr("shard_map["));
  EXPECT_THAT(text, HasSubstr("in_specs=(P('x', 'y'), P('y', None))"));
  EXPECT_THAT(text, HasSubstr("out_specs=(P('x', None),)"));
  EXPECT_THAT(text, HasSubstr("f32[2,8]{V:(x,y)}"));
  EXPECT_THAT(text, HasSubstr("f32[8,4]{V:y}"));
  EXPECT_THAT(text, HasSubstr("pvary[axes=('x',)]"));
  EXPECT_THAT(text, HasSubstr("psum_invariant[axes=('y',)]"));
  EXPECT_THAT(text, HasSubstr("f32[2,4]{V:x} = psum_invariant"));
  EXPECT_THAT(text, HasSubstr("manual_axes=('x', 'y')"));
  EXPECT_THAT(text, HasSubstr("mesh=Mesh('x': 4, 'y': 2"));
  EXPECT_THAT(text, HasSubstr("check_vma=True"));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("mesh=\n")));
}

TEST_F(ShardMapTransformsTest, JaxprOfAddPvariesTheInvariantOperand) {
  auto f = shard_map([](const Array& a, const Array& b) { return a + b; }, mesh_, in_specs{P("x"), P()},
                     out_specs{P("x")});
  std::string text = make_jaxpr(f)(jnp::ones({8}), jnp::ones({2})).ToString();
  EXPECT_THAT(text, HasSubstr("f32[2]{V:x} = pvary[axes=('x',)]"));
  EXPECT_THAT(text, HasSubstr("add"));
}

// grad of a loss through shard_map equals the unsharded program's (the loss is reduced
// inside the body: eager ops on sharded results belong to the SPMD layer).
TEST_F(ShardMapTransformsTest, GradThroughShardMapEqualsUnsharded) {
  auto sharded_loss = shard_map(
      [](const Array& a, const Array& b) {
        Array c = lax::psum(lax::dot(a, b, lax::Precision::kHighest), "y");
        return lax::psum(jnp::sum(jnp::tanh(c)), "x");
      },
      mesh_, in_specs{P("x", "y"), P("y", none)}, out_specs{P()});
  Array a = Ramp({8, 16}, 0.3), b = Ramp({16, 4}, 0.7);
  auto loss = [&](const Array& a_, const Array& b_) { return sharded_loss(a_, b_); };
  auto ref = [](const Array& a_, const Array& b_) {
    return jnp::sum(jnp::tanh(lax::dot(a_, b_, lax::Precision::kHighest)));
  };
  auto [ga, gb] = grad(loss, argnums{0, 1})(a, b);
  auto [ra, rb] = grad(ref, argnums{0, 1})(a, b);
  ExpectClose(ga, ra, 1e-4);
  ExpectClose(gb, rb, 1e-4);
}

// The same against central finite differences (float64 on the host).
TEST_F(ShardMapTransformsTest, GradMatchesFiniteDifferences) {
  auto f = shard_map([](const Array& x) { return lax::psum(jnp::sum(jnp::sin(x) * x), "x"); }, mesh_,
                     in_specs{P("x")}, out_specs{P()});
  Array x = Ramp({8}, 0.9);
  Array g = grad([&](const Array& v) { return f(v); })(x);
  const std::vector<double> xv = x.to_vector<double>();
  for (size_t i = 0; i < xv.size(); ++i) {
    // d/dx (sin(x) x) = cos(x) x + sin(x); check numerically too.
    const double h = 1e-3;
    auto fx = [](double v) { return std::sin(v) * v; };
    const double fd = (fx(xv[i] + h) - fx(xv[i] - h)) / (2 * h);
    EXPECT_NEAR(g.to_vector<double>()[i], fd, 1e-3) << i;
  }
}

// grad inside the body: per-device gradients of a psum'd loss (psum's transpose is pvary).
TEST_F(ShardMapTransformsTest, GradInsideShardMap) {
  auto f = shard_map(
      [](const Array& w, const Array& x) {
        auto loss = [&](const Array& w_) { return lax::psum(jnp::sum(jnp::square(x * w_)), "x"); };
        return grad(loss)(w);
      },
      mesh_, in_specs{P(), P("x")}, out_specs{P()});
  Array w = Ramp({3}, 0.4), x = Ramp({8, 3}, 0.2);
  // d/dw sum over all rows of (x w)^2 = 2 w sum(x^2) per column.
  Array want = 2.f * w * jnp::sum(jnp::square(x), 0);
  ExpectClose(f(w, x), want, 1e-4);
}

// grad inside the body of a weight split over one axis and used with data split over the
// other (Megatron's column/row split under data parallelism): each chip gets the gradient of
// its own block, summed over "x" only. (Tangents once lost their varying axes, and the
// transpose of the pvary that re-typed them summed the blocks over "y" as well.)
TEST_F(ShardMapTransformsTest, GradInsideShardMapOfSplitWeights) {
  auto f = shard_map(
      [](const Array& w1, const Array& w2, const Array& x) {
        auto loss = [&](const Array& a, const Array& b) {
          const Array out = lax::psum(jnp::matmul(jnp::tanh(jnp::matmul(x, a)), b), "y");
          return lax::psum(jnp::sum(out * out), "x");
        };
        auto [g1, g2] = grad(loss, argnums{0, 1})(w1, w2);
        return std::tuple{g1, g2};
      },
      mesh_, in_specs{P(none, "y"), P("y", none), P("x", none)}, out_specs{P(none, "y"), P("y", none)});
  auto ref = [](const Array& a, const Array& b, const Array& x) {
    const Array out = jnp::matmul(jnp::tanh(jnp::matmul(x, a)), b);
    return jnp::sum(out * out);
  };
  const Array w1 = Ramp({4, 6}, 0.3) * 0.5f, w2 = Ramp({6, 5}, 0.7) * 0.5f, x = Ramp({8, 4}, 0.2);
  default_matmul_precision highest("highest");
  auto [r1, r2] = grad(ref, argnums{0, 1})(w1, w2, x);
  auto [g1, g2] = f(w1, w2, x);
  ExpectClose(g1, r1, 1e-4);
  ExpectClose(g2, r2, 1e-4);
  auto [j1, j2] = jit(f)(w1, w2, x);
  ExpectClose(j1, r1, 1e-4);
  ExpectClose(j2, r2, 1e-4);
}

// With check_vma=false (no varying-axes types) psum is JAX's psum_p, transposing to itself,
// and the transpose rescales replicated cotangents as JAX does: the same gradients.
TEST_F(ShardMapTransformsTest, GradWithoutCheckVmaEqualsTypedGrad) {
  auto body = [](const Array& w, const Array& x) { return lax::psum(jnp::sum(jnp::sin(x * w)), "x"); };
  auto typed = shard_map(body, mesh_, in_specs{P(), P("x")}, out_specs{P()});
  auto untyped = shard_map(body, mesh_, in_specs{P(), P("x")}, out_specs{P()}, {.check_vma = false});
  Array w = Ramp({3}, 0.4), x = Ramp({8, 3}, 0.2);
  auto [gw, gx] = grad([&](const Array& a, const Array& b) { return typed(a, b); }, argnums{0, 1})(w, x);
  auto [uw, ux] = grad([&](const Array& a, const Array& b) { return untyped(a, b); }, argnums{0, 1})(w, x);
  auto ref = [](const Array& a, const Array& b) { return jnp::sum(jnp::sin(b * a)); };
  auto [rw, rx] = grad(ref, argnums{0, 1})(w, x);
  ExpectClose(gw, rw, 1e-5);
  ExpectClose(gx, rx, 1e-5);
  ExpectClose(uw, rw, 1e-5);
  ExpectClose(ux, rx, 1e-5);
  std::string text = make_jaxpr([&](const Array& a, const Array& b) { return untyped(a, b); })(w, x).ToString();
  EXPECT_THAT(text, HasSubstr("psum[axes=('x',)]"));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("pvary")));
}

// The body's jaxpr type-checks (pvary makes operands agree; psum's result is invariant).
TEST_F(ShardMapTransformsTest, BodyTypeChecks) {
  auto f = shard_map([](const Array& a, const Array& b) { return lax::psum(jnp::matmul(a, b) + jnp::sum(b), "y"); },
                     mesh_, in_specs{P("x", "y"), P("y", none)}, out_specs{P("x", none)});
  ClosedJaxpr j = make_jaxpr(f)(Ramp({8, 16}, 0.3), Ramp({16, 4}, 0.7));
  EXPECT_NO_THROW(j.jaxpr->TypeCheck());
  const auto& body = GetJaxpr(j.jaxpr->eqns[0].params, "jaxpr");
  EXPECT_NO_THROW(body.jaxpr->TypeCheck());
}

// vmap of shard_map: the batch dimension is unsplit and leads.
TEST_F(ShardMapTransformsTest, VmapOfShardMap) {
  auto f = shard_map([](const Array& a) { return lax::psum(jnp::sum(a, 1), "y"); }, mesh_, in_specs{P("x", "y")},
                     out_specs{P("x")});
  Array a = Ramp({3, 8, 4}, 0.5);
  Array got = vmap(f)(a);
  ExpectClose(got, jnp::sum(a, 2));
}

// vmap inside the body over a collective (all_gather shifts its dimension past the batch).
TEST_F(ShardMapTransformsTest, VmapInsideShardMap) {
  auto f = shard_map([](const Array& a) { return vmap([](const Array& r) { return lax::all_gather(r, "x", 0, true); })(a); },
                     mesh_, in_specs{P(none, "x")}, out_specs{P(none, "x")});
  Array a = Ramp({3, 8}, 0.5);
  Array got = f(a);
  EXPECT_EQ(got.shape(), (Shape{3, 32}));
  ExpectClose(jnp::concatenate({a, a, a, a}, 1), got);
}

// jvp through shard_map.
TEST_F(ShardMapTransformsTest, JvpThroughShardMap) {
  auto f = shard_map([](const Array& x) { return lax::psum(jnp::sin(x), "x"); }, mesh_, in_specs{P("x")},
                     out_specs{P()});
  Array x = Ramp({8}, 0.3), t = Ramp({8}, 0.8);
  auto [y, ty] = jvp([&](const Array& v) { return f(v); }, std::make_tuple(x), std::make_tuple(t));
  Array c = jnp::cos(x) * t;
  Array want = jnp::sum(c.reshape({4, 2}), 0);
  ExpectClose(ty, want, 1e-5);
}

}  // namespace
}  // namespace jx::shard_map_transforms_test

namespace jx::shard_map_transforms_test {
namespace {

// An output invariant over an axis its out_spec names is tiled into copies; its cotangent
// sums the copies' (here: y = concat of 4 copies of psum(x), so dL/dx_e = sum_d ct_d).
TEST(ShardMapGradTest, TiledInvariantOutputSumsCotangents) {
  namespace jnp = jx::numpy;
  tpu::Pod pod = tpu::make_pod("v5e", {2, 2});
  Mesh mesh = make_mesh({4}, {"i"}, pod.devices());
  auto f = shard_map([](const Array& x) { return lax::psum(x, "i"); }, mesh, in_specs{P("i")}, out_specs{P("i")});
  Array x = jnp::arange(8, float32);
  Array w = jnp::arange(8, float32) * 0.5f + 1.f;  // the cotangent: y's weights
  auto [y, pullback] = vjp([&](const Array& v) { return f(v); }, x);
  Array g = std::get<0>(pullback(w));
  // sum_d ct_d, per position within a block of 2: w blocks (1,1.5),(2,2.5),(3,3.5),(4,4.5).
  EXPECT_THAT(g.to_vector<float>(), ::testing::ElementsAreArray({10.f, 12.f, 10.f, 12.f, 10.f, 12.f, 10.f, 12.f}));
}

}  // namespace
}  // namespace jx::shard_map_transforms_test

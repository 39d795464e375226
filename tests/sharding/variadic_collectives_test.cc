// psum/pmax/pmin/pvary of several arrays are ONE primitive of several operands, as JAX binds
// them (`psum_invariant[axes=('x',)] a b`): the jaxpr has one equation, the per-device
// program one all-reduce of all of them (a tuple all-reduce straight from the lowering, before
// any AllReduceCombiner), and jvp, grad (its transpose is one pvary of the cotangents) and vmap
// give what the same collectives of one array at a time give. Mesh x:4, y:2 on a v5e 4x2 pod.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "jx/jx.h"
#include "jx/sharding/collectives.h"
#include "jx/sharding/manual_context.h"

namespace jx::variadic_collectives_test {
namespace {

namespace jnp = jx::numpy;
using ::testing::ContainsRegex;
using ::testing::HasSubstr;

int64_t Count(const std::string& text, const std::string& what) {
  int64_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

void ExpectClose(const Array& got, const Array& want, double tol = 1e-5) {
  ASSERT_EQ(got.shape(), want.shape());
  const std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], w[i], tol * (1 + std::abs(w[i]))) << "element " << i;
}

Array Ramp(Shape shape, double scale) {
  const int64_t n = NumElements(shape);
  return (jnp::sin(jnp::arange(n, float32) * scale) + 0.5f).reshape(shape);
}

class VariadicCollectivesTest : public ::testing::Test {
 protected:
  tpu::Pod pod_ = tpu::make_pod("v5e", {4, 2});
  Mesh mesh_ = make_mesh({4, 2}, {"x", "y"}, pod_.devices());
};

// One equation per call, its operands listed, each result typed from its own operand.
TEST_F(VariadicCollectivesTest, JaxprHasOneEquationOfSeveralOperands) {
  auto f = shard_map(
      [](const Array& a, const Array& b) {
        std::vector<Array> s = lax::psum(std::vector<Array>{a, b}, "x");
        std::vector<Array> m = lax::pmax(std::vector<Array>{a, b}, "x");
        std::vector<Array> n = lax::pmin(std::vector<Array>{a, b}, AxisNames{"x", "y"});
        return s[0] + s[1] + m[0] + m[1] + n[0] + n[1];
      },
      mesh_, in_specs{P("x", "y"), P("x")}, out_specs{P(none, "y")});
  const std::string text = make_jaxpr(f)(Ramp({8, 4}, 0.3), Ramp({4}, 0.7)).ToString();
  EXPECT_EQ(Count(text, "psum_invariant["), 1) << text;
  EXPECT_EQ(Count(text, "pmax["), 1) << text;
  EXPECT_EQ(Count(text, "pmin["), 1) << text;
  // a: f32[2,2]{V:(x,y)}, b: f32[1]{V:x}; psum over x leaves y on a's result only.
  EXPECT_THAT(text, ContainsRegex("[a-z]+:f32\\[2,2\\]\\{V:y\\} [a-z]+:f32\\[1\\] = psum_invariant\\[axes=\\('x',\\)\\] "
                                  "[a-z]+ [a-z]+\n"))
      << text;
  EXPECT_THAT(text, ContainsRegex("= pmin\\[axes=\\('x', 'y'\\)\\] [a-z]+ [a-z]+\n")) << text;
}

// pvary of several arrays: one equation; psum of several inserts each leaf's own pvary (only
// the axes that leaf is invariant over), as JAX's insert_collective_pvary does per leaf.
TEST_F(VariadicCollectivesTest, PvaryOfSeveralArraysAndPsumOfInvariantLeaves) {
  auto f = shard_map(
      [](const Array& a, const Array& b) {
        std::vector<Array> v = lax::pvary(std::vector<Array>{a, b}, "y");
        std::vector<Array> s = lax::psum(std::vector<Array>{v[0], v[1]}, AxisNames{"x", "y"});
        return s[0] + s[1];
      },
      mesh_, in_specs{P("x"), P()}, out_specs{P()});
  const Array a = Ramp({8}, 0.3), b = Ramp({2}, 0.9);
  const std::string text = make_jaxpr(f)(a, b).ToString();
  EXPECT_THAT(text, ContainsRegex("= pvary\\[axes=\\('y',\\)\\] [a-z]+ [a-z]+\n")) << text;
  EXPECT_THAT(text, ContainsRegex("= pvary\\[axes=\\('x',\\)\\] [a-z]+\n")) << text;  // b only
  EXPECT_EQ(Count(text, "psum_invariant["), 1) << text;
  // psum over (x, y) of a's blocks (varying over x, invariant over y: doubled) and of b
  // (invariant over both: 8 times it).
  const Array want = jnp::sum(a.reshape({4, 2}), 0) * 2.0f + b * 8.0f;
  ExpectClose(f(a, b), want);
}

// The per-device program straight from the lowering (no passes run): one tuple all-reduce for
// the f32 operands of the psum, one for the pmax, and one per element type for a psum of mixed
// types; the compiled pod program's results equal eager shard_map's.
TEST_F(VariadicCollectivesTest, LowersToOneAllReduceOfAllOperands) {
  auto mesh = std::make_shared<CollectiveMesh>(std::vector<std::string>{"x", "y"}, std::vector<int64_t>{4, 2},
                                               std::vector<std::string>{"x", "y"});
  ClosedJaxpr jaxpr = [&] {
    shard_map_internal::ManualContextScope scope({mesh, /*check_vma=*/false});
    return make_jaxpr([](const Array& a, const Array& b, const Array& i) {
      std::vector<Array> s = lax::psum(std::vector<Array>{a, b}, "y");
      std::vector<Array> m = lax::pmax(std::vector<Array>{a, b}, "x");
      std::vector<Array> mixed = lax::psum(std::vector<Array>{a, i, b}, "x");
      return std::vector<Array>{s[0], s[1], m[0], m[1], mixed[0], mixed[1], mixed[2]};
    })(jnp::zeros({4, 8}), jnp::zeros({3}), jnp::zeros({2}, int32));
  }();
  EXPECT_EQ(jaxpr.jaxpr->eqns.size(), 3u) << jaxpr.ToString();
  auto lowered = pod_.client().Lower(jaxpr, {.name = "spmd", .device_assignment = pod_.devices()});
  const std::string hlo = lowered->as_text();
  EXPECT_EQ(Count(hlo, " all-reduce("), 4) << hlo;
  EXPECT_THAT(hlo, ContainsRegex("\\(f32\\[4,8\\]\\{[^}]*\\}, f32\\[3\\]\\{[^}]*\\}\\) all-reduce\\([^\n]*"
                                 "replica_groups=\\{\\{0,1\\},\\{2,3\\},\\{4,5\\},\\{6,7\\}\\}[^\n]*to_apply=%?add"))
      << hlo;
  EXPECT_THAT(hlo, ContainsRegex("\\(f32\\[4,8\\]\\{[^}]*\\}, f32\\[3\\]\\{[^}]*\\}\\) all-reduce\\([^\n]*to_apply=%?maximum"))
      << hlo;
  EXPECT_THAT(hlo, ContainsRegex("= s32\\[2\\]\\{0\\} all-reduce\\(")) << hlo;

  // Run on the chips through shard_map (compiled once under jit) against eager shard_map.
  auto body = [](const Array& a, const Array& b, const Array& i) {
    std::vector<Array> s = lax::psum(std::vector<Array>{a, i, b}, "x");
    std::vector<Array> m = lax::pmin(std::vector<Array>{a, b}, "y");
    return std::make_tuple(s[0], s[1], s[2], m[0], m[1]);
  };
  auto sm = shard_map(body, mesh_, in_specs{P("x", "y"), P("x"), P("y")},
                      out_specs{P(none, "y"), P("y"), P(), P("x"), P("x")});
  const Array a = Ramp({16, 8}, 0.3), b = Ramp({12}, 0.7), i = jnp::arange(4, int32);
  const std::vector<Array> eager = tree::flatten(sm(a, b, i)).first;
  const std::vector<Array> compiled = tree::flatten(jit(sm)(a, b, i)).first;
  ASSERT_EQ(compiled.size(), 5u);
  const Device* host = devices("cpu")[0];
  for (size_t k = 0; k < 5; ++k) {
    EXPECT_TRUE(jnp::allclose(device_put(compiled[k], host), device_put(eager[k], host), 1e-6, 1e-6))
        << k << ": " << compiled[k] << "\nvs\n" << eager[k];
  }
  // By hand: i's blocks along y are [0, 1] and [2, 3]; summed over the 4 x-devices: x4.
  EXPECT_EQ(device_put(eager[1], host).to_vector<int32_t>(), (std::vector<int32_t>{0, 4, 8, 12}));
}

// jvp and grad of the variadic forms equal those of the collectives taken one array at a time;
// grad's transpose of the psum is one pvary of both cotangents.
TEST_F(VariadicCollectivesTest, JvpAndGradEqualOneArrayAtATime) {
  auto loss_of = [this](bool together) {
    return shard_map(
        [together](const Array& a, const Array& b) {
          std::vector<Array> s, m;
          if (together) {
            s = lax::psum(std::vector<Array>{jnp::sin(a), b * b}, "x");
            m = lax::pmax(std::vector<Array>{a * 3.0f, jnp::cos(b)}, "x");
          } else {
            s = {lax::psum(jnp::sin(a), "x"), lax::psum(b * b, "x")};
            m = {lax::pmax(a * 3.0f, "x"), lax::pmax(jnp::cos(b), "x")};
          }
          return lax::psum(jnp::sum(s[0] * m[0]) + jnp::sum(s[1] * m[1]), "y");
        },
        mesh_, in_specs{P("x", "y"), P("x")}, out_specs{P()});
  };
  auto together = loss_of(true), apart = loss_of(false);
  const Array a = Ramp({8, 4}, 0.3), b = Ramp({8}, 0.7);
  auto [ga, gb] = grad([&](const Array& x, const Array& y) { return together(x, y); }, argnums{0, 1})(a, b);
  auto [ra, rb] = grad([&](const Array& x, const Array& y) { return apart(x, y); }, argnums{0, 1})(a, b);
  ExpectClose(ga, ra);
  ExpectClose(gb, rb);
  const Array ta = Ramp({8, 4}, 1.1), tb = Ramp({8}, 1.3);
  auto [y1, t1] = jvp([&](const Array& x, const Array& y) { return together(x, y); }, std::make_tuple(a, b),
                      std::make_tuple(ta, tb));
  auto [y2, t2] = jvp([&](const Array& x, const Array& y) { return apart(x, y); }, std::make_tuple(a, b),
                      std::make_tuple(ta, tb));
  ExpectClose(y1, y2);
  ExpectClose(t1, t2);

  // The backward pass inside the body: psum's transpose is one pvary of its two cotangents.
  auto body_grad = shard_map(
      [](const Array& a, const Array& b) {
        auto [g1, g2] = grad(
            [](const Array& x, const Array& y) {
              std::vector<Array> s = lax::psum(std::vector<Array>{x * x, jnp::sin(y)}, "x");
              return jnp::sum(s[0]) + jnp::sum(s[1]);
            },
            argnums{0, 1})(a, b);
        return std::make_tuple(g1, g2);
      },
      mesh_, in_specs{P("x", "y"), P("x")}, out_specs{P("x", "y"), P("x")});
  const std::string text = make_jaxpr(body_grad)(a, b).ToString();
  EXPECT_THAT(text, ContainsRegex("= pvary\\[axes=\\('x',\\)\\] [a-z0-9_]+ [a-z0-9_]+\n")) << text;
  const auto [g1, g2] = body_grad(a, b);
  // d/dx of sum(psum(x*x)) on each device: 2x (the invariant cotangent 1 pvaried back). The
  // loss varies over y (a's half) and b is invariant over y: the pvary that joined sum(s[1])
  // to it transposes to a psum over y's 2 devices, so b's gradient is 2 cos(b), as in JAX.
  ExpectClose(g1, a * 2.0f);
  ExpectClose(g2, jnp::cos(b) * 2.0f);
}

// vmap of a shard_map whose body psums two arrays, and vmap inside the body over a psum of two
// arrays with one unbatched: each batch dimension stays where it is.
TEST_F(VariadicCollectivesTest, VmapOfVariadicPsum) {
  auto f = shard_map(
      [](const Array& a, const Array& b) {
        std::vector<Array> s = lax::psum(std::vector<Array>{jnp::sum(a, 1), b}, "y");
        return s[0] * s[1];
      },
      mesh_, in_specs{P("x", "y"), P("x")}, out_specs{P("x")});
  const Array a = Ramp({3, 8, 4}, 0.5), b = Ramp({3, 8}, 0.9);
  ExpectClose(vmap(f)(a, b), jnp::sum(a, 2) * b * 2.0f);

  auto inner = shard_map(
      [](const Array& a, const Array& b) {
        return vmap(
            [&b](const Array& row) {
              std::vector<Array> s = lax::psum(std::vector<Array>{row, b}, "x");
              return s[0] + s[1];
            })(a);
      },
      mesh_, in_specs{P(none, "x"), P("x")}, out_specs{P()});
  const Array m = Ramp({3, 8}, 0.4), v = Ramp({8}, 0.6);
  const Array want = jnp::sum(m.reshape({3, 4, 2}), 1) + jnp::sum(v.reshape({4, 2}), 0);
  ExpectClose(inner(m, v), want);
}

}  // namespace
}  // namespace jx::variadic_collectives_test

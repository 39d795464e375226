// JAX's explicit sharding mode for eager ops (jax.sharding.AxisType.Explicit): an op on arrays
// sharded over Explicit mesh axes gives the result its sharding rule types (reductions drop
// the reduced dims' axes; the result is replicated over them), raises the rule's TypeError
// where the operands' shardings conflict (never resharding implicitly), and gradients are
// typed as their primals. Arrays over Auto axes keep resharding as the compiler chooses.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "jx/jx.h"
#include "jx/sharding/spmd/reshard.h"
#include "jx/sharding/spmd/spmd_program.h"
#include "jx/transforms/staging.h"

namespace jx::explicit_eager_test {
namespace {

namespace jnp = jx::numpy;
using ::testing::HasSubstr;
using ::testing::Not;

template <typename T>
std::string Str(const T& v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

struct V5e {
  tpu::Pod pod = tpu::make_pod("v5e", {4, 2});
  Mesh mesh = make_mesh({4, 2}, {"x", "y"}, pod.devices());
  Array Put(const Array& x, PartitionSpec spec) const { return device_put(x, NamedSharding(mesh, std::move(spec))); }
};

// A value with repeated extremes in different blocks (ties) and mixed signs.
Array Data() {
  std::vector<float> v(32);
  for (int i = 0; i < 32; ++i) v[i] = static_cast<float>((i * 7) % 11) - 5.0f;
  return jnp::array(v).reshape({8, 4});
}

struct ReductionCase {
  std::string name;
  std::function<Array(const Array&, const Axis&)> op;
  bool exact;  // integer or boolean result (or a pick): equal, else allclose
};

std::vector<ReductionCase> Reductions() {
  return {
      {"sum", [](const Array& x, const Axis& a) { return jnp::sum(x, a); }, false},
      {"prod", [](const Array& x, const Axis& a) { return jnp::prod(x * 0.5f, a); }, false},
      {"max", [](const Array& x, const Axis& a) { return jnp::max(x, a); }, true},
      {"min", [](const Array& x, const Axis& a) { return jnp::min(x, a); }, true},
      {"all", [](const Array& x, const Axis& a) { return jnp::all(x > -4.0f, a); }, true},
      {"any", [](const Array& x, const Axis& a) { return jnp::any(x > 4.0f, a); }, true},
  };
}

// Every reduction over every dim of f32[8@x,4@y]: the result is typed with the reduced dims'
// axes dropped, and equals the op on the unsharded array.
TEST(ExplicitEagerTest, ReductionsDropTheReducedDimsAxes) {
  V5e v;
  const Array x = Data();
  const Array xs = v.Put(x, P("x", "y"));
  const std::vector<std::pair<Axis, std::string>> axes = {
      {Axis(0), "[4@y]"}, {Axis(1), "[8@x]"}, {Axis({0, 1}), "[]"}};
  for (const ReductionCase& c : Reductions()) {
    for (const auto& [axis, type] : axes) {
      SCOPED_TRACE(c.name + " over " + type);
      const Array got = c.op(xs, axis);
      const Array want = c.op(x, axis);
      EXPECT_THAT(Str(typeof(got)), HasSubstr(type));
      if (c.exact) {
        EXPECT_TRUE(jnp::array_equal(got, want)) << got << " vs " << want;
      } else {
        EXPECT_TRUE(jnp::allclose(got, want, 1e-5, 1e-5)) << got << " vs " << want;
      }
    }
  }
}

// argmax/argmin over a sharded dim pick the first extreme of the whole dim: ties across blocks
// go to the lowest index, and the first NaN wins, as on one device.
TEST(ExplicitEagerTest, ArgReductionsOverShardedDimsKeepTheFirstIndex) {
  V5e v;
  const Array x = Data();
  const Array xs = v.Put(x, P("x", "y"));
  for (int64_t axis : {0, 1}) {
    EXPECT_TRUE(jnp::array_equal(jnp::argmax(xs, axis), jnp::argmax(x, axis))) << jnp::argmax(xs, axis);
    EXPECT_TRUE(jnp::array_equal(jnp::argmin(xs, axis), jnp::argmin(x, axis))) << jnp::argmin(xs, axis);
  }
  EXPECT_EQ(Str(typeof(jnp::argmax(xs, 0))), "int32[4@y]");
  EXPECT_EQ(Str(typeof(jnp::argmin(xs, 1))), "int32[8@x]");
  // Over two axes at once: (x, y) split the 32 elements into 8 blocks of 4.
  const Array flat = v.Put(jnp::ones({32}), P({"x", "y"}));
  std::vector<float> vals(32, 1.0f);
  vals[9] = 3.0f;   // block 2
  vals[21] = 3.0f;  // block 5: a tie, the earlier index wins
  vals[30] = std::numeric_limits<float>::quiet_NaN();
  const Array ties = v.Put(jnp::array(vals).reshape({32}), P({"x", "y"}));
  EXPECT_EQ(jnp::argmax(ties, 0).item<int32_t>(), 30);  // the NaN
  vals[30] = 1.0f;
  vals[12] = -2.0f;
  vals[28] = -2.0f;
  const Array no_nan = v.Put(jnp::array(vals), P({"x", "y"}));
  EXPECT_EQ(jnp::argmax(no_nan, 0).item<int32_t>(), 9);
  EXPECT_EQ(jnp::argmin(no_nan, 0).item<int32_t>(), 12);
  EXPECT_EQ(Str(typeof(jnp::argmax(flat, 0))), "int32[]");
}

// The partitioner combines the per-device partial results (all-gathered, reduced again); it
// does not gather the operand.
TEST(ExplicitEagerTest, PartialResultsAreGatheredNotTheOperand) {
  V5e v;
  const ClosedJaxpr global = TraceToJaxpr(
      [](absl::Span<const Array> x) { return Arrays{jnp::prod(x[0], 0), jnp::argmax(x[0], 0)}; },
      {ShapedArray{{8, 4}, float32}}, "reduce");
  const spmd::MaybeSharding in[] = {DimShardings{{"x"}, {"y"}}};
  const auto program = spmd::SpmdProgram::Build(global, v.mesh, in, {});
  const std::string log = ::testing::PrintToString(program->log());
  EXPECT_THAT(log, HasSubstr("reduce_prod: partial results over 'x' all-gathered and reduced"));
  EXPECT_THAT(log, HasSubstr("argmax: partial results over 'x' all-gathered and reduced"));
  // Each device's operand block stays [2, 2]; what is gathered is one row per device.
  const std::string local = Str(program->local_jaxpr());
  EXPECT_THAT(local, HasSubstr("f32[4,2]{V:x} = all_gather"));
  EXPECT_THAT(local, Not(HasSubstr("f32[8,2]")));
  const Array x = Data();
  const Arrays got = program->Run({v.Put(x, P("x", "y"))});
  EXPECT_TRUE(jnp::allclose(got[0], jnp::prod(x, 0)));
  EXPECT_TRUE(jnp::array_equal(got[1], jnp::argmax(x, 0)));
}

TEST(ExplicitEagerTest, AllcloseOnShardedArrays) {
  V5e v;
  const Array x = Data();
  const Array xs = v.Put(x, P("x", "y"));
  EXPECT_TRUE(jnp::allclose(xs, x));
  EXPECT_TRUE(jnp::allclose(xs, v.Put(x * 1.0000001f, P("x", "y"))));
  EXPECT_FALSE(jnp::allclose(xs, x + 0.5f));
  EXPECT_TRUE(jnp::allclose(jnp::sin(xs), jnp::sin(x), 1e-6, 1e-6));
}

// Results are sharded as their types say: JAX's broadcasting rule takes the sharded entry of
// a dim where the other operand leaves it whole; a transpose moves the axes with the dims.
TEST(ExplicitEagerTest, ResultsAreShardedAsTyped) {
  V5e v;
  const Array x = Data();
  const Array a = v.Put(x, P("x", none));
  const Array b = v.Put(x, P(none, "y"));
  const Array sum = a + b;
  EXPECT_EQ(Str(typeof(sum)), "float32[8@x,4@y]");
  EXPECT_TRUE(sum.sharding()->Equals(NamedSharding(v.mesh, P("x", "y"))));
  EXPECT_TRUE(jnp::allclose(sum, x + x));
  const Array t = jnp::sin(v.Put(x, P("x", "y"))).T();
  EXPECT_EQ(Str(typeof(t)), "float32[4@y,8@x]");
  EXPECT_TRUE(jnp::allclose(t, jnp::sin(x).T(), 1e-6, 1e-6));
  // A host array is replicated in the type: the sharded operand's axes carry over.
  EXPECT_EQ(Str(typeof(a * x)), "float32[8@x,4]");
  // A jit call's results are sharded as its traced program types them.
  auto f = jit([](const Array& p) { return jnp::sum(p, 0) * 2.0f; });
  const Array out = f(v.Put(x, P("x", "y")));
  EXPECT_EQ(Str(typeof(out)), "float32[4@y]");
  EXPECT_TRUE(jnp::allclose(out, jnp::sum(x, 0) * 2.0f));
}

std::string TypeErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const TypeError& e) {
    return e.what();
  }
  return "no TypeError";
}

// Shardings the rule cannot reconcile are a TypeError naming the op, the operands' types and
// the mesh axes; nothing is resharded implicitly.
TEST(ExplicitEagerTest, ConflictingShardingsAreTypeErrors) {
  V5e v;
  const Array x = Data();
  const Array xy = v.Put(x, P("x", "y"));
  const Array yx = v.Put(x, P("y", none));
  std::string e = TypeErrorOf([&] { xy + yx; });
  EXPECT_THAT(e, HasSubstr("[add] operation with inputs: f32[8@x,4@y], f32[8@y,4]"));
  EXPECT_THAT(e, HasSubstr("sharded as 'x' and as 'y'"));
  // One mesh axis on two dims of the result.
  e = TypeErrorOf([&] { v.Put(x, P("x", none)) * v.Put(x, P(none, "x")); });
  EXPECT_THAT(e, HasSubstr("[mul] operation with inputs: f32[8@x,4], f32[8,4@x]"));
  EXPECT_THAT(e, HasSubstr("mesh axis 'x' shards two different dimensions"));
  // A sharded contraction without out_sharding is ambiguous (JAX's dot_general error).
  e = TypeErrorOf([&] { jnp::matmul(v.Put(x, P(none, "y")), v.Put(x.T(), P("y", none))); });
  EXPECT_THAT(e, HasSubstr("[dot_general] operation with inputs: f32[8,4@y], f32[4@y,8]"));
  EXPECT_THAT(e, HasSubstr("contracting dimensions are sharded (over 'y')"));
  // A cumulative op needs its axis whole.
  e = TypeErrorOf([&] { jnp::cumsum(xy, 0); });
  EXPECT_THAT(e, HasSubstr("[cumsum] operation with inputs: f32[8@x,4@y]"));
  EXPECT_THAT(e, HasSubstr("shards a dimension of size 8 over 'x' that this op needs whole"));
}

// On a mesh of Auto axes the shardings are the compiler's: operands that disagree are
// resharded, and an op keeps its operand's layout.
TEST(ExplicitEagerTest, AutoAxesReshardAsBefore) {
  V5e v;
  const Mesh mesh = make_mesh({4, 2}, {"x", "y"}, v.pod.devices(), {AxisType::kAuto, AxisType::kAuto});
  const Array x = Data();
  const Array a = device_put(x, NamedSharding(mesh, P("x", "y")));
  const Array b = device_put(x, NamedSharding(mesh, P("y", none)));
  EXPECT_EQ(Str(typeof(a)), "float32[8,4]");
  const Array sum = a + b;
  EXPECT_TRUE(jnp::allclose(sum, x + x));
  const Array s = jnp::sin(a);
  EXPECT_TRUE(s.sharding()->Equals(*a.sharding())) << s.sharding()->ToString();
  EXPECT_TRUE(jnp::allclose(jnp::cumsum(a, 0), jnp::cumsum(x, 0)));
  // A mesh with an Explicit and an Auto axis: the Explicit one is typed and checked, the Auto
  // one left to propagation.
  const Mesh mixed = make_mesh({4, 2}, {"x", "y"}, v.pod.devices(), {AxisType::kExplicit, AxisType::kAuto});
  const Array c = device_put(x, NamedSharding(mixed, P("x", "y")));
  const Array d = device_put(x, NamedSharding(mixed, P("y", none)));
  EXPECT_EQ(Str(typeof(c)), "float32[8@x,4]");
  EXPECT_TRUE(jnp::allclose(c + d, x + x));
  const std::string e = TypeErrorOf([&] { c * device_put(x, NamedSharding(mixed, P(none, "x"))); });
  EXPECT_THAT(e, HasSubstr("[mul] operation with inputs: f32[8@x,4], f32[8,4@x]"));
}

// A training step on explicitly sharded params (data parallel over x, the hidden dim over y):
// the gradients are typed as the params (dot_general's transpose asks for the param's
// sharding), the update keeps the params' shardings, and the values equal the unsharded step.
TEST(ExplicitEagerTest, TrainingStepOnExplicitlyShardedParams) {
  V5e v;
  default_matmul_precision highest("highest");  // the chips' f32 matmuls, as the host's
  struct Params {
    Array w1, b1, w2;
  };
  const Array x = jnp::arange(32, float32).reshape({8, 4}) / 32.0f;
  const Array t = jnp::linspace(-1.0, 1.0, 8);
  const Params init{jnp::arange(64, float32).reshape({4, 16}) / 64.0f - 0.5f, jnp::zeros({16}),
                    jnp::linspace(-0.5, 0.5, 16)};
  auto loss = [](const Array& w1, const Array& b1, const Array& w2, const Array& xb, const Array& tb) {
    const Array h = jnp::tanh(jnp::matmul(xb, w1) + b1);
    return jnp::mean(jnp::square(jnp::sum(h * w2, 1) - tb));
  };
  auto step = [&](const Params& p, const Array& xb, const Array& tb) {
    auto [l, g] = value_and_grad(loss, argnums{0, 1, 2})(p.w1, p.b1, p.w2, xb, tb);
    const auto& [g1, gb, g2] = g;
    return std::make_pair(l, Params{p.w1 - 0.5f * g1, p.b1 - 0.5f * gb, p.w2 - 0.5f * g2});
  };
  Params sharded{v.Put(init.w1, P(none, "y")), v.Put(init.b1, P("y")), v.Put(init.w2, P("y"))};
  const Array xs = v.Put(x, P("x", none));
  const Array ts = v.Put(t, P("x"));
  Params host = init;
  Array first_loss;
  for (int i = 0; i < 3; ++i) {
    auto [ls, next] = step(sharded, xs, ts);
    auto [lh, next_host] = step(host, x, t);
    EXPECT_EQ(Str(typeof(ls)), "float32[]");
    EXPECT_TRUE(jnp::allclose(ls, lh, 1e-5, 1e-6)) << ls << " vs " << lh;
    if (i == 0) first_loss = lh;
    sharded = next;
    host = next_host;
  }
  EXPECT_EQ(Str(typeof(sharded.w1)), "float32[4,16@y]");
  EXPECT_EQ(Str(typeof(sharded.b1)), "float32[16@y]");
  EXPECT_EQ(Str(typeof(sharded.w2)), "float32[16@y]");
  EXPECT_TRUE(sharded.w1.sharding()->Equals(NamedSharding(v.mesh, P(none, "y"))));
  EXPECT_TRUE(jnp::allclose(sharded.w1, host.w1, 1e-5, 1e-6));
  EXPECT_TRUE(jnp::allclose(sharded.b1, host.b1, 1e-5, 1e-6));
  EXPECT_TRUE(jnp::allclose(sharded.w2, host.w2, 1e-5, 1e-6));
  EXPECT_LT(loss(host.w1, host.b1, host.w2, x, t).item<float>(), first_loss.item<float>());
  // The same step under jit, on the sharded params: equal values, the params' shardings kept.
  auto jitted = jit([&](const Array& w1, const Array& b1, const Array& w2, const Array& xb, const Array& tb) {
    auto [l, p] = step(Params{w1, b1, w2}, xb, tb);
    return std::make_tuple(l, p.w1, p.b1, p.w2);
  });
  const auto [lj, w1j, b1j, w2j] = jitted(sharded.w1, sharded.b1, sharded.w2, xs, ts);
  const auto [le, next_eager] = step(sharded, xs, ts);
  EXPECT_TRUE(jnp::allclose(lj, le, 1e-5, 1e-6)) << lj << " vs " << le;
  EXPECT_TRUE(jnp::allclose(w1j, next_eager.w1, 1e-5, 1e-6));
  EXPECT_TRUE(jnp::allclose(w2j, next_eager.w2, 1e-5, 1e-6));
  EXPECT_EQ(Str(typeof(w1j)), "float32[4,16@y]");
  EXPECT_TRUE(w1j.sharding()->Equals(NamedSharding(v.mesh, P(none, "y"))));
  EXPECT_EQ(Str(typeof(b1j)), "float32[16@y]");
  // The backward dot of w1 contracts the batch (sharded over x): its out_sharding is w1's,
  // in the product's dim order (then transposed to w1's).
  const std::string jaxpr = Str(make_jaxpr(grad(loss))(sharded.w1, sharded.b1, sharded.w2, xs, ts));
  EXPECT_THAT(jaxpr, HasSubstr("f32[16@y,4] = dot_general[\n      dimension_numbers=(([0], [0]), ([], []))\n"
                               "      out_sharding=P('y', None)"));
  EXPECT_THAT(jaxpr, HasSubstr("f32[4,16@y] = transpose[permutation=(1, 0)]"));
}

// jx::reshard (JAX's jax.sharding.reshard) is the explicit way to change a sharding: its
// result is typed and laid out by its destination, eagerly and under jit, and its transpose
// gives the cotangent the operand's type.
TEST(ExplicitEagerTest, ReshardChangesTheTypedSharding) {
  V5e v;
  const Array x = Data();
  const Array xy = v.Put(x, P("x", "y"));
  const Array yx = v.Put(x, P("y", none));
  EXPECT_THAT(TypeErrorOf([&] { xy + yx; }), HasSubstr("Reshard one of the operands (jx::reshard)"));
  const NamedSharding both(v.mesh, P("x", "y"));
  const Array moved = reshard(yx, both);
  EXPECT_EQ(Str(typeof(moved)), "float32[8@x,4@y]");
  EXPECT_TRUE(moved.sharding()->Equals(both));
  const Array sum = xy + moved;
  EXPECT_EQ(Str(typeof(sum)), "float32[8@x,4@y]");
  EXPECT_TRUE(jnp::allclose(sum, x + x));
  // Under jit: the jaxpr shows it and its type; the result is laid out there.
  const NamedSharding cols(v.mesh, P(none, "y"));
  auto f = [&](const Array& a) { return reshard(a, cols) * 2.0f; };
  const Array rows = v.Put(x, P("x", none));
  const std::string jaxpr = Str(make_jaxpr(f)(rows));
  EXPECT_THAT(jaxpr, HasSubstr("b:f32[8,4@y] = reshard[\n      dst_sharding=NamedSharding(mesh=Mesh('x': 4, 'y': 2, "
                               "axis_types=(Explicit, Explicit)), spec=PartitionSpec(None, 'y'))\n    ] a"));
  const Array out = jit(f)(rows);
  EXPECT_EQ(Str(typeof(out)), "float32[8,4@y]");
  EXPECT_TRUE(out.sharding()->Equals(cols));
  EXPECT_TRUE(jnp::allclose(out, x * 2.0f));
  // The gradient is typed as the primal (the cotangent resharded back).
  const Array g = grad([&](const Array& a) { return jnp::sum(jnp::square(reshard(a, cols))); })(rows);
  EXPECT_EQ(Str(typeof(g)), "float32[8@x,4]");
  EXPECT_TRUE(jnp::allclose(g, x * 2.0f));
  // with_sharding_constraint cannot retype an explicitly sharded value: JAX's ValueError,
  // eagerly and under jit (it stays the way to constrain Auto axes and untyped programs).
  for (const bool jitted : {false, true}) {
    auto constrain = [&](const Array& a) { return lax::with_sharding_constraint(a * 2.0f, cols); };
    try {
      jitted ? jit(constrain)(rows) : constrain(rows);
      FAIL() << "expected ValueError";
    } catch (const ValueError& e) {
      EXPECT_THAT(std::string(e.what()), HasSubstr("[sharding_constraint] The spec of NamedSharding passed to "
                                                   "with_sharding_constraint can only refer to Auto axes of the mesh. "
                                                   "Got spec=PartitionSpec(None, 'y')"));
      EXPECT_THAT(std::string(e.what()), HasSubstr("You probably meant to use jx::reshard"));
    }
  }
  // vmap: the batch dim is left whole.
  const Array batched = vmap([&](const Array& a) { return reshard(a, NamedSharding(v.mesh, P("y"))); })(x.T());
  EXPECT_EQ(Str(typeof(batched)), "float32[4,8@y]");
  EXPECT_TRUE(jnp::array_equal(batched, x.T()));
  // A destination that does not divide the shape names reshard.
  try {
    reshard(jnp::ones({6, 4}), both);
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_THAT(std::string(e.what()), HasSubstr("[reshard]"));
  }
}

// Control flow and checkpoint on explicitly sharded values: results typed by their bodies
// (a loop's carry keeps its sharding) and laid out that way.
TEST(ExplicitEagerTest, ControlFlowKeepsTheCarrysSharding) {
  V5e v;
  const Array x = Data();
  const Array rows = v.Put(x, P("x", none));
  const Array looped = lax::fori_loop(0, 3, [](const Array&, const Array& c) { return c * 2.0f; }, rows);
  EXPECT_EQ(Str(typeof(looped)), "float32[8@x,4]");
  EXPECT_TRUE(looped.sharding()->Equals(*rows.sharding()));
  EXPECT_TRUE(jnp::allclose(looped, x * 8.0f));
  const Array branch = lax::cond(
      Array(true), [](const Array& c) { return c + 1.0f; }, [](const Array& c) { return c - 1.0f; }, rows);
  EXPECT_TRUE(branch.sharding()->Equals(*rows.sharding()));
  EXPECT_TRUE(jnp::allclose(branch, x + 1.0f));
  auto f = [](const Array& a) { return jnp::sum(jnp::sin(a)); };
  const Array g = grad(checkpoint(f))(rows);
  EXPECT_EQ(Str(typeof(g)), "float32[8@x,4]");
  EXPECT_TRUE(jnp::allclose(g, jnp::cos(x), 1e-6, 1e-6));
}

}  // namespace
}  // namespace jx::explicit_eager_test

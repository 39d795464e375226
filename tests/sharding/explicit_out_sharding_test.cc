// JAX's explicit sharding mode, the rest of the ops: out_sharding= on dot_general, matmul and
// einsum (a contraction over sharded dims is reduced into the sharding the caller names; vmap
// and jit keep it), the sharding rules of pad, dynamic_slice, dynamic_update_slice, sort and
// top_k, reduce_window, conv and gather (the dims they need whole are a TypeError when sharded,
// the others pass through), and
// JAX's "sharding rule for <op> is not implemented" TypeError for a lax op without one.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <sstream>
#include <string>

#include "jx/jx.h"
#include "jx/sharding/spmd/spmd_program.h"
#include "jx/transforms/staging.h"

namespace jx {
namespace {

namespace jnp = jx::numpy;
using ::testing::HasSubstr;

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

template <typename E>
std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "no error of the expected type";
}

// f32[8,4] and f32[4,16] with distinct values (the contraction is over the 4).
Array Lhs() { return jnp::arange(32, float32).reshape({8, 4}) / 8.0f - 1.0f; }
Array Rhs() { return jnp::arange(64, float32).reshape({4, 16}) / 16.0f - 2.0f; }

// A contraction over a dim sharded over y: without out_sharding a TypeError (JAX's), with it
// the result is typed and laid out as asked (all-reduced for replicated, reduce-scattered into
// a dim that takes y), with the unsharded product's values.
TEST(ExplicitOutShardingTest, ShardedContractionIsReducedIntoTheGivenSharding) {
  V5e v;
  default_matmul_precision highest("highest");
  const Array x = Lhs(), w = Rhs();
  const Array xs = v.Put(x, P("x", "y")), ws = v.Put(w, P("y", none));
  const Array want = jnp::matmul(x, w);
  EXPECT_THAT(ErrorOf<TypeError>([&] { jnp::matmul(xs, ws); }), HasSubstr("contracting dimensions are sharded"));
  struct Case {
    OutSharding out;
    std::string type;
    PartitionSpec layout;
  };
  const Case cases[] = {
      {P("x", none), "float32[8@x,16]", P("x", none)},
      {P(), "float32[8,16]", P()},
      {NamedSharding(v.mesh, P("x", "y")), "float32[8@x,16@y]", P("x", "y")},
  };
  for (const Case& c : cases) {
    const Array out = jnp::matmul(xs, ws, c.out);
    EXPECT_EQ(Str(typeof(out)), c.type);
    EXPECT_TRUE(out.sharding()->Equals(NamedSharding(v.mesh, c.layout))) << out.sharding()->ToString();
    EXPECT_TRUE(jnp::allclose(out, want, 1e-5, 1e-5)) << c.type;
  }
  // lax::dot_general takes it too, and the jaxpr prints it as JAX does.
  const lax::DotDimensionNumbers mm{{1}, {0}, {}, {}};
  const Array d = lax::dot_general(xs, ws, mm, P(none, "y"));
  EXPECT_EQ(Str(typeof(d)), "float32[8,16@y]");
  EXPECT_TRUE(jnp::allclose(d, want, 1e-5, 1e-5));
  const std::string jaxpr =
      Str(make_jaxpr([&](const Array& a, const Array& b) { return lax::dot_general(a, b, mm, P("x", none)); })(xs, ws));
  EXPECT_THAT(jaxpr, HasSubstr("f32[8@x,16] = dot_general["));
  EXPECT_THAT(jaxpr, HasSubstr("out_sharding=P('x', None)"));
  // An out_sharding longer than the result's rank names the op.
  EXPECT_THAT(ErrorOf<ValueError>([&] { lax::dot_general(xs, ws, mm, P("x", none, none)); }),
              HasSubstr("[dot_general] out_sharding has 3 entries for a result of rank 2"));
}

// matmul's out_sharding is in the result's dim order (batch dims broadcast, vectors squeezed);
// einsum's in its output's label order.
TEST(ExplicitOutShardingTest, MatmulAndEinsumTakeTheResultsOrder) {
  V5e v;
  default_matmul_precision highest("highest");
  const Array x = Lhs(), w = Rhs();
  const Array ws = v.Put(w, P("y", none));
  // A batch of lhs over the rhs matrix: f32[2,8,4] @ f32[4,16] -> f32[2,8@x,16].
  const Array xb = jnp::stack({x, x * 2.0f});
  const Array batched = jnp::matmul(v.Put(xb, P(none, none, "y")), ws, P(none, "x", none));
  EXPECT_EQ(Str(typeof(batched)), "float32[2,8@x,16]");
  EXPECT_TRUE(jnp::allclose(batched, jnp::matmul(xb, w), 1e-5, 1e-5));
  // A vector lhs: f32[4@y] @ f32[4@y,16] -> f32[16@x].
  const Array vec = jnp::matmul(v.Put(x[0], P("y")), ws, P("x"));
  EXPECT_EQ(Str(typeof(vec)), "float32[16@x]");
  EXPECT_TRUE(jnp::allclose(vec, jnp::matmul(x[0], w), 1e-5, 1e-5));
  // einsum: "ij,jk->ki" names the transposed result's dims.
  const Array xs = v.Put(x, P(none, "y"));
  const Array e = jnp::einsum("ij,jk->ki", {xs, ws}, P(none, "x"));
  EXPECT_EQ(Str(typeof(e)), "float32[16,8@x]");
  EXPECT_TRUE(e.sharding()->Equals(NamedSharding(v.mesh, P(none, "x"))));
  EXPECT_TRUE(jnp::allclose(e, jnp::matmul(x, w).T(), 1e-5, 1e-5));
  EXPECT_THAT(ErrorOf<TypeError>([&] { jnp::einsum("ij,jk->ik", xs, ws); }),
              HasSubstr("contracting dimensions are sharded"));
  // Three operands: the last contraction (over k, sharded over y in the third) takes it.
  const Array c = jnp::arange(32, float32).reshape({16, 2}) / 32.0f;
  const Array e3 = jnp::einsum("ij,jk,kl->il", {v.Put(x, P("x", none)), w, v.Put(c, P("y", none))}, P("x", none));
  EXPECT_EQ(Str(typeof(e3)), "float32[8@x,2]");
  EXPECT_TRUE(jnp::allclose(e3, jnp::matmul(jnp::matmul(x, w), c), 1e-4, 1e-4));
  // One operand has no contraction to type.
  EXPECT_THAT(ErrorOf<ValueError>([&] { jnp::einsum("ij->ji", {xs}, P()); }),
              HasSubstr("out_sharding needs a contraction"));
}

// Under jit the dot's result is laid out as typed (not left to propagation), and vmap adds the
// batch dim whole to the out_sharding.
TEST(ExplicitOutShardingTest, JitAndVmapKeepIt) {
  V5e v;
  default_matmul_precision highest("highest");
  const Array x = Lhs(), w = Rhs();
  const Array xs = v.Put(x, P(none, "y")), ws = v.Put(w, P("y", none));
  auto f = [](const Array& a, const Array& b) { return jnp::matmul(a, b, P("x", none)) * 2.0f; };
  const Array out = jit(f)(xs, ws);
  EXPECT_EQ(Str(typeof(out)), "float32[8@x,16]");
  EXPECT_TRUE(out.sharding()->Equals(NamedSharding(v.mesh, P("x", none))));
  EXPECT_TRUE(jnp::allclose(out, jnp::matmul(x, w) * 2.0f, 1e-5, 1e-5));
  const Array replicated = jit([](const Array& a, const Array& b) { return jnp::matmul(a, b, P()); })(xs, ws);
  EXPECT_EQ(Str(typeof(replicated)), "float32[8,16]");
  EXPECT_TRUE(replicated.sharding()->is_fully_replicated());
  EXPECT_TRUE(jnp::allclose(replicated, jnp::matmul(x, w), 1e-5, 1e-5));
  // vmap over a stack of lhs matrices: f32[3,8,4@y] -> f32[3,8@x,16].
  const Array stack = jnp::stack({x, x + 1.0f, x - 1.0f});
  auto per = [&](const Array& a) { return jnp::matmul(a, ws, P("x", none)); };
  const Array mapped = vmap(per)(v.Put(stack, P(none, none, "y")));
  EXPECT_EQ(Str(typeof(mapped)), "float32[3,8@x,16]");
  EXPECT_TRUE(jnp::allclose(mapped, jnp::matmul(stack, w), 1e-5, 1e-5));
  EXPECT_THAT(Str(make_jaxpr(vmap(per))(v.Put(stack, P(none, none, "y")))),
              HasSubstr("out_sharding=P(None, 'x', None)"));
}

// In a typed program the dot's result is laid out as typed: each device computes its block of
// rows of f32[8@x,16] (a [2,16] block), not the whole product.
TEST(ExplicitOutShardingTest, PropagationKeepsTheTypedLayout) {
  V5e v;
  default_matmul_precision highest("highest");
  const use_mesh in_context(v.mesh);
  const ShapedArray a{{8, 4}, float32, false, {{}, {"y"}}};
  const ShapedArray b{{4, 16}, float32, false, {{"y"}, {}}};
  const ClosedJaxpr global = TraceToJaxpr(
      [](absl::Span<const Array> in) { return Arrays{jnp::sum(jnp::matmul(in[0], in[1], P("x", none)), 1)}; },
      {a, b}, "typed_dot");
  const spmd::MaybeSharding in[] = {a.spec, b.spec};
  const auto program = spmd::SpmdProgram::Build(global, v.mesh, in, {});
  EXPECT_THAT(Str(program->local_jaxpr()), HasSubstr("f32[2,16]"));
  const Arrays got = program->Run({v.Put(Lhs(), P(none, "y")), v.Put(Rhs(), P("y", none))});
  EXPECT_TRUE(jnp::allclose(got[0], jnp::sum(jnp::matmul(Lhs(), Rhs()), 1), 1e-4, 1e-4));
}

// pad, dynamic_slice, dynamic_update_slice: the dims they keep whole pass their sharding
// through; a padded or sliced dim that is sharded is a TypeError.
TEST(ExplicitOutShardingTest, SlicingOpsPassWholeDimsThrough) {
  V5e v;
  const Array x = Lhs();
  const Array rows = v.Put(x, P("x", none));
  const Array padded = lax::pad(rows, jnp::array(0.0f), {{0, 0, 0}, {1, 2, 0}});
  EXPECT_EQ(Str(typeof(padded)), "float32[8@x,7]");
  EXPECT_TRUE(jnp::array_equal(padded, lax::pad(x, jnp::array(0.0f), {{0, 0, 0}, {1, 2, 0}})));
  EXPECT_THAT(ErrorOf<TypeError>([&] { lax::pad(rows, jnp::array(0.0f), {{1, 0, 0}, {0, 0, 0}}); }),
              HasSubstr("[pad] operation with inputs: f32[8@x,4], f32[] shards a dimension of size 8 over 'x' "
                        "that this op needs whole"));
  const std::vector<Array> start{jnp::array(3), jnp::array(1)};
  const Array sliced = lax::dynamic_slice(rows, start, {8, 2});
  EXPECT_EQ(Str(typeof(sliced)), "float32[8@x,2]");
  EXPECT_TRUE(sliced.sharding()->Equals(NamedSharding(v.mesh, P("x", none))));
  EXPECT_TRUE(jnp::array_equal(sliced, lax::dynamic_slice(x, start, {8, 2})));
  EXPECT_THAT(ErrorOf<TypeError>([&] { lax::dynamic_slice(rows, start, {4, 2}); }),
              HasSubstr("[dynamic_slice] operation with inputs: f32[8@x,4]"));
  const Array update = v.Put(jnp::ones({8, 2}), P("x", none));
  const Array updated = lax::dynamic_update_slice(rows, update, start);
  EXPECT_EQ(Str(typeof(updated)), "float32[8@x,4]");
  EXPECT_TRUE(jnp::array_equal(updated, lax::dynamic_update_slice(x, jnp::ones({8, 2}), start)));
  EXPECT_THAT(ErrorOf<TypeError>([&] { lax::dynamic_update_slice(rows, jnp::ones({4, 4}), start); }),
              HasSubstr("[dynamic_update_slice]"));
  // Under jit too.
  const Array jitted = jit([&](const Array& a) { return lax::dynamic_slice(a, start, {8, 2}) * 2.0f; })(rows);
  EXPECT_EQ(Str(typeof(jitted)), "float32[8@x,2]");
  EXPECT_TRUE(jnp::array_equal(jitted, lax::dynamic_slice(x, start, {8, 2}) * 2.0f));
}

// sort and top_k need their sorted dim whole; the others pass through.
TEST(ExplicitOutShardingTest, SortNeedsTheSortedDimWhole) {
  V5e v;
  const Array x = jnp::array(std::vector<float>{3, 1, 2, 0, 5, 7, 6, 4, 9, 8, 11, 10, 1, 1, 0, 2,
                                                4, 3, 2, 1, 0, 9, 9, 8, 7, 7, 1, 2, 5, 4, 3, 6})
                      .reshape({8, 4});
  const Array rows = v.Put(x, P("x", none));
  const Array sorted = lax::sort(rows, 1);
  EXPECT_EQ(Str(typeof(sorted)), "float32[8@x,4]");
  EXPECT_TRUE(jnp::array_equal(sorted, lax::sort(x, 1)));
  EXPECT_THAT(ErrorOf<TypeError>([&] { lax::sort(rows, 0); }),
              HasSubstr("[sort] operation with inputs: f32[8@x,4] shards a dimension of size 8 over 'x'"));
  const auto [vals, idx] = lax::top_k(rows, 2);
  EXPECT_EQ(Str(typeof(vals)), "float32[8@x,2]");
  EXPECT_EQ(Str(typeof(idx)), "int32[8@x,2]");
  const auto [want_vals, want_idx] = lax::top_k(x, 2);
  EXPECT_TRUE(jnp::array_equal(vals, want_vals));
  EXPECT_TRUE(jnp::array_equal(idx, want_idx));
  EXPECT_THAT(ErrorOf<TypeError>([&] { lax::top_k(v.Put(x, P(none, "y")), 2); }), HasSubstr("[top_k]"));
}

// reduce_window passes the dims its window leaves alone through (pooling keeps the batch's
// sharding); a sharded dim the window spans is a TypeError.
TEST(ExplicitOutShardingTest, ReduceWindowPassesUnwindowedDimsThrough) {
  V5e v;
  const Array x = jnp::sin(jnp::arange(128, float32)).reshape({8, 4, 4});
  const Array batch = v.Put(x, P("x", none, none));
  const Array pooled = lax::reduce_window_max(batch, {1, 2, 2}, {1, 2, 2}, {{0, 0}, {0, 0}, {0, 0}});
  EXPECT_EQ(Str(typeof(pooled)), "float32[8@x,2,2]");
  EXPECT_TRUE(jnp::array_equal(pooled, lax::reduce_window_max(x, {1, 2, 2}, {1, 2, 2}, {{0, 0}, {0, 0}, {0, 0}})));
  EXPECT_THAT(ErrorOf<TypeError>([&] {
                lax::reduce_window_sum(v.Put(x, P(none, "y", none)), {1, 2, 1}, {1, 1, 1}, {{0, 0}, {0, 0}, {0, 0}});
              }),
              HasSubstr("[reduce_window_sum] operation with inputs: f32[8,4@y,4] shards a dimension of size 4"));
}

// conv_general_dilated passes the batch (lhs) and output-feature (rhs) dims through; a sharded
// spatial or input-feature dim is a TypeError.
TEST(ExplicitOutShardingTest, ConvPassesBatchAndOutputFeaturesThrough) {
  V5e v;
  default_matmul_precision highest("highest");
  const Array img = jnp::sin(jnp::arange(8 * 3 * 6 * 6, float32)).reshape({8, 3, 6, 6});
  const Array k = jnp::cos(jnp::arange(4 * 3 * 3 * 3, float32)).reshape({4, 3, 3, 3});
  const Array out = lax::conv_general_dilated(v.Put(img, P("x")), v.Put(k, P("y")), {1, 1}, lax::Padding::Valid());
  EXPECT_EQ(Str(typeof(out)), "float32[8@x,4@y,4,4]");
  EXPECT_TRUE(jnp::allclose(out, lax::conv_general_dilated(img, k, {1, 1}, lax::Padding::Valid()), 1e-5, 1e-5));
  EXPECT_THAT(ErrorOf<TypeError>([&] {
                lax::conv_general_dilated(v.Put(img, P(none, none, "y")), k, {1, 1}, lax::Padding::Valid());
              }),
              HasSubstr("[conv_general_dilated] operation with inputs: f32[8,3,6@y,6]"));
}

// gather passes the indices' batch dims and the operand dims it takes whole through (an
// embedding lookup keeps the tokens' and the table's shardings); an indexed dim that is sharded
// is a TypeError.
TEST(ExplicitOutShardingTest, GatherPassesBatchAndWholeDimsThrough) {
  V5e v;
  const Array table = jnp::arange(64, float32).reshape({16, 4});
  const Array tokens = jnp::array(std::vector<int32_t>{3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3,
                                                       2, 3, 8, 4, 6, 2, 6, 4})
                           .reshape({8, 3});
  const Array looked_up = jnp::take(v.Put(table, P(none, "y")), v.Put(tokens, P("x", none)), 0);
  EXPECT_EQ(Str(typeof(looked_up)), "float32[8@x,3,4@y]");
  EXPECT_TRUE(looked_up.sharding()->Equals(NamedSharding(v.mesh, P("x", none, "y"))));
  EXPECT_TRUE(jnp::array_equal(looked_up, jnp::take(table, tokens, 0)));
  EXPECT_THAT(ErrorOf<TypeError>([&] { jnp::take(v.Put(table, P("x", none)), tokens, 0); }),
              HasSubstr("[gather] operation with inputs: f32[16@x,4]"));
}

// A lax op without a sharding rule is JAX's TypeError on explicitly sharded operands, never a
// silently replicated result; resharding to replicated first works.
TEST(ExplicitOutShardingTest, OpsWithoutARuleRaise) {
  V5e v;
  const Array x = Lhs();
  const Array rows = v.Put(x, P("x", none));
  const Array idx = jnp::array(std::vector<int32_t>{2, 0});
  const std::string e = ErrorOf<TypeError>([&] { rows.at(idx).add(1.0f); });
  EXPECT_THAT(e, HasSubstr("sharding rule for scatter_add is not implemented (operation with inputs: f32[8@x,4]"));
  EXPECT_THAT(e, HasSubstr("jx::reshard"));
  const Array whole = reshard(rows, NamedSharding(v.mesh, P()));
  EXPECT_TRUE(jnp::array_equal(whole.at(idx).add(1.0f), x.at(idx).add(1.0f)));
}

}  // namespace
}  // namespace jx

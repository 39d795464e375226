// JAX's explicit sharding mode, the rest of the ops: out_sharding= on dot_general, matmul and
// einsum (a contraction over sharded dims is reduced into the sharding the caller names; vmap
// and jit keep it), the sharding rules of pad, dynamic_slice, dynamic_update_slice, sort and
// top_k, reduce_window, conv, gather, scatter, bitcast_convert_type and lax.linalg (the dims they
// need whole are a TypeError when sharded, the others pass through; the gradient of a sharded
// embedding lookup), an out_sharding's mesh checked against the operands', and
// JAX's "sharding rule for <op> is not implemented" TypeError for a lax op without one.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <sstream>
#include <string>

#include "jx/jx.h"
#include "jx/sharding/spmd/spmd_program.h"
#include "jx/transforms/staging.h"

namespace jx::explicit_out_sharding_test {
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
  const Array x = jnp::arange(8, uint32).reshape({8});
  const Array k = jnp::zeros({}, uint32);
  const Array rows = v.Put(x, P("x"));
  const std::string e = ErrorOf<TypeError>([&] { lax::threefry2x32(k, k, rows, rows); });
  EXPECT_THAT(e, HasSubstr("sharding rule for threefry2x32 is not implemented (operation with inputs: u32[], u32[], "
                           "u32[8@x]"));
  EXPECT_THAT(e, HasSubstr("jx::reshard"));
  const Array whole = reshard(rows, NamedSharding(v.mesh, P()));
  EXPECT_TRUE(jnp::array_equal(lax::threefry2x32(k, k, whole, whole).first, lax::threefry2x32(k, k, x, x).first));
}

// bitcast_convert_type keeps the dims both dtypes have (JAX's rule); the trailing dim a width
// change adds is whole, and one it consumes must be.
TEST(ExplicitOutShardingTest, BitcastConvertTypeKeepsTheLeadingDims) {
  V5e v;
  const Array x = Lhs();
  const Array same = lax::bitcast_convert_type(v.Put(x, P("x", "y")), int32);
  EXPECT_EQ(Str(typeof(same)), "int32[8@x,4@y]");
  EXPECT_TRUE(jnp::array_equal(same, lax::bitcast_convert_type(x, int32)));
  const Array halves = lax::bitcast_convert_type(v.Put(x, P("x", "y")), uint16);
  EXPECT_EQ(Str(typeof(halves)), "uint16[8@x,4@y,2]");
  EXPECT_TRUE(jnp::array_equal(halves, lax::bitcast_convert_type(x, uint16)));
  const Array back = jit([](const Array& h) { return lax::bitcast_convert_type(h, float32); })(halves);
  EXPECT_EQ(Str(typeof(back)), "float32[8@x,4@y]");
  EXPECT_TRUE(jnp::array_equal(back, x));
  EXPECT_THAT(ErrorOf<TypeError>([&] {
                lax::bitcast_convert_type(v.Put(lax::bitcast_convert_type(x, uint16), P(none, none, "y")), float32);
              }),
              HasSubstr("[bitcast_convert_type] operation with inputs: u16[8,4,2@y] shards a dimension of size 2"));
}

// lax.linalg's ops decompose a batch of matrices sharded over its batch dims device by device
// (JAX's linalg_sharding_rule); a sharded matrix dim, or operands whose batch dims are sharded
// differently, is JAX's TypeError.
TEST(ExplicitOutShardingTest, LinalgShardsTheBatchOnly) {
  V5e v;
  default_matmul_precision highest("highest");
  const Array m = jnp::sin(jnp::arange(8 * 4 * 4, float32)).reshape({8, 4, 4});
  const Array spd = jnp::matmul(m, jnp::swapaxes(m, 1, 2)) + 4.0f * jnp::eye(4);
  const Array chol = lax::linalg::cholesky(v.Put(spd, P("x")));
  EXPECT_EQ(Str(typeof(chol)), "float32[8@x,4,4]");
  EXPECT_TRUE(chol.sharding()->Equals(NamedSharding(v.mesh, P("x"))));
  EXPECT_TRUE(jnp::allclose(chol, lax::linalg::cholesky(spd), 1e-6, 1e-6));
  const auto [vecs, vals] = jit([](const Array& a) {
    auto [u, w] = lax::linalg::eigh(a);
    return std::make_tuple(u, w);
  })(v.Put(spd, P("x")));
  EXPECT_EQ(Str(typeof(vecs)), "float32[8@x,4,4]");
  EXPECT_EQ(Str(typeof(vals)), "float32[8@x,4]");
  EXPECT_TRUE(jnp::allclose(vals, lax::linalg::eigh(spd).second, 1e-5, 1e-5));
  const Array b = jnp::cos(jnp::arange(8 * 4 * 2, float32)).reshape({8, 4, 2});
  const Array solved = lax::linalg::triangular_solve(chol, v.Put(b, P("x")), {.left_side = true, .lower = true});
  EXPECT_EQ(Str(typeof(solved)), "float32[8@x,4,2]");
  EXPECT_TRUE(jnp::allclose(
      solved, lax::linalg::triangular_solve(lax::linalg::cholesky(spd), b, {.left_side = true, .lower = true}), 1e-5,
      1e-5));
  EXPECT_THAT(ErrorOf<TypeError>([&] { lax::linalg::cholesky(v.Put(spd, P(none, "y")), /*symmetrize_input=*/false); }),
              HasSubstr("[cholesky] Input 0 to cholesky must be unsharded on non-batch dimensions, but got "
                        "P(None, 'y', None)"));
  EXPECT_THAT(ErrorOf<TypeError>([&] {
                lax::linalg::triangular_solve(chol, v.Put(b, P("y")), {.left_side = true, .lower = true});
              }),
              HasSubstr("All inputs to triangular_solve must have the same batch sharding, but got f32[8@x,4,4], "
                        "f32[8@y,4,2]"));
}

// A NamedSharding out_sharding on another mesh than the operands' is JAX's ValueError (the
// context mesh, here the operands', must be the sharding's).
TEST(ExplicitOutShardingTest, OutShardingMeshMustBeTheOperands) {
  V5e v;
  const Mesh other = make_mesh({2, 4}, {"x", "y"}, v.pod.devices());
  const Array xs = v.Put(Lhs(), P("x", none)), ws = v.Put(Rhs(), P());
  const std::string e = ErrorOf<ValueError>([&] { jnp::matmul(xs, ws, NamedSharding(other, P("x", none))); });
  EXPECT_THAT(e, HasSubstr("[matmul] Context mesh AbstractMesh('x': 4, 'y': 2) should match the mesh of sharding "
                           "AbstractMesh('x': 2, 'y': 4) passed to matmul"));
  EXPECT_THAT(ErrorOf<ValueError>([&] {
                const lax::DotDimensionNumbers mm{{1}, {0}, {}, {}};
                jit([&](const Array& a, const Array& b) {
                  return lax::dot_general(a, b, mm, OutSharding(NamedSharding(other, P())));
                })(xs, ws);
              }),
              HasSubstr("passed to dot_general"));
  const Array same = jnp::matmul(xs, ws, NamedSharding(v.mesh, P("x", none)));
  EXPECT_EQ(Str(typeof(same)), "float32[8@x,16]");
}

// f32[16,4] rows scattered at 8 indices (one row each; 3 and 5 repeat).
struct RowScatter {
  Array table = jnp::arange(64, float32).reshape({16, 4}) / 4.0f;
  Array ids = jnp::array(std::vector<int32_t>{3, 1, 4, 1, 5, 9, 2, 5}).reshape({8, 1});
  Array rows = jnp::arange(32, float32).reshape({8, 4}) - 16.0f;
  lax::ScatterDimensionNumbers dn{{1}, {0}, {0}, {}, {}};
};

// scatter (every kind) is typed as its operand where each device can update its own block: the
// window dim it covers whole keeps its axes (JAX's _scatter_sharding_rule), eagerly and under
// jit, with the host's values.
TEST(ExplicitScatterTest, ResultIsShardedAsTheOperand) {
  V5e v;
  const RowScatter s;
  const Array table = v.Put(s.table, P(none, "y")), rows = v.Put(s.rows, P(none, "y"));
  using Fn = Array (*)(const Array&, const Array&, const Array&, const lax::ScatterDimensionNumbers&,
                       lax::GatherScatterMode);
  for (Fn op : {Fn{lax::scatter}, Fn{lax::scatter_add}, Fn{lax::scatter_min}, Fn{lax::scatter_max}}) {
    const Array out = op(table, s.ids, rows, s.dn, lax::GatherScatterMode::kFillOrDrop);
    EXPECT_EQ(Str(typeof(out)), "float32[16,4@y]");
    EXPECT_TRUE(out.sharding()->Equals(NamedSharding(v.mesh, P(none, "y"))));
    EXPECT_TRUE(jnp::array_equal(out, op(s.table, s.ids, s.rows, s.dn, lax::GatherScatterMode::kFillOrDrop)));
    const Array jitted = jit([&](const Array& t, const Array& i, const Array& u) {
      return op(t, i, u, s.dn, lax::GatherScatterMode::kFillOrDrop);
    })(table, s.ids, rows);
    EXPECT_EQ(Str(typeof(jitted)), "float32[16,4@y]");
    EXPECT_TRUE(jnp::array_equal(jitted, out));
  }
  const Array mul = lax::scatter_mul(table, s.ids, rows, s.dn);
  EXPECT_EQ(Str(typeof(mul)), "float32[16,4@y]");
  EXPECT_TRUE(jnp::array_equal(mul, lax::scatter_mul(s.table, s.ids, s.rows, s.dn)));
  // .at[].set through jnp's indexing, and .at[].apply (scatter with an update computation).
  const Array set = table.at(s.ids.reshape({8})).set(rows);
  EXPECT_EQ(Str(typeof(set)), "float32[16,4@y]");
  EXPECT_TRUE(jnp::array_equal(set, s.table.at(s.ids.reshape({8})).set(s.rows)));
  // A scalar's broadcast is replicated: each device slices its block of it.
  const Array plus_one = table.at(s.ids.reshape({8})).add(1.0f);
  EXPECT_EQ(Str(typeof(plus_one)), "float32[16,4@y]");
  EXPECT_TRUE(jnp::array_equal(plus_one, s.table.at(s.ids.reshape({8})).add(1.0f)));
  const Array applied = table.at(s.ids.reshape({8})).apply([](const Array& a) { return a * 2.0f; });
  EXPECT_EQ(Str(typeof(applied)), "float32[16,4@y]");
  EXPECT_TRUE(jnp::array_equal(applied, s.table.at(s.ids.reshape({8})).apply([](const Array& a) { return a * 2.0f; })));
}

// Shardings the rule cannot resolve are JAX's TypeError naming the reason and the types:
// unbatched queries sharded (two devices may write one row), an indexed operand dim sharded,
// a window dim sharded in the updates only.
TEST(ExplicitScatterTest, UnresolvableShardingsRaise) {
  V5e v;
  const RowScatter s;
  const std::string queries =
      ErrorOf<TypeError>([&] { lax::scatter_add(s.table, v.Put(s.ids, P("x")), v.Put(s.rows, P("x")), s.dn); });
  EXPECT_THAT(queries, HasSubstr("[scatter_add] the scatter's out sharding could not be resolved unambiguously"));
  EXPECT_THAT(queries, HasSubstr("updates dim 0 (a scatter dim that is not a batching dim) is sharded over 'x'. "
                                 "Got operand=f32[16,4], indices=i32[8@x,1], updates=f32[8@x,4]"));
  EXPECT_THAT(ErrorOf<TypeError>([&] { lax::scatter_add(s.table, v.Put(s.ids, P("x")), s.rows, s.dn); }),
              HasSubstr("indices dim 0 (not a batching dim) is sharded over 'x'"));
  EXPECT_THAT(ErrorOf<TypeError>([&] { v.Put(s.table, P("x")).at(s.ids.reshape({8})).add(s.rows); }),
              HasSubstr("operand dim 0 is indexed (an inserted window dim) and sharded over 'x'"));
  EXPECT_THAT(ErrorOf<TypeError>([&] { lax::scatter(s.table, s.ids, v.Put(s.rows, P(none, "y")), s.dn); }),
              HasSubstr("window dim 1 of the operand is sharded over None and updates dim 1 over 'y'"));
  EXPECT_THAT(ErrorOf<TypeError>([&] {
                const Array half = lax::slice(s.rows, {0, 0}, {8, 2});
                jit([&](const Array& t) { return lax::scatter_max(t, s.ids, half, s.dn); })(v.Put(s.table, P(none, "y")));
              }),
              HasSubstr("operand dim 1 (size 4, 'y') is updated in windows of 2"));
}

// vmap of a row update over a batch sharded over x: the batch dims of operand, indices and
// updates are paired (batching dims) and keep their axes, so each device updates its rows.
TEST(ExplicitScatterTest, VmapPairsShardedBatchingDims) {
  V5e v;
  const Array x = jnp::arange(64, float32).reshape({8, 8});
  const Array at = jnp::array(std::vector<int32_t>{0, 7, 3, 3, 1, 6, 2, 5});
  const Array val = jnp::arange(8, float32) * -1.0f;
  auto f = [](const Array& row, const Array& i, const Array& u) { return row.at(i).add(u); };
  const Array out = vmap(f)(v.Put(x, P("x")), v.Put(at, P("x")), v.Put(val, P("x")));
  EXPECT_EQ(Str(typeof(out)), "float32[8@x,8]");
  EXPECT_TRUE(jnp::array_equal(out, vmap(f)(x, at, val)));
}

// The gradient of an embedding lookup w.r.t. the table (gather's transpose, a scatter_add of
// the lookups' cotangents) is typed as the table, with the host's values: eagerly, under jit,
// and per example under vmap. The ids are sharded over x (the batch), the table's features
// over y; the cotangent's rows, sharded over x, are taken whole by the scatter (JAX computes
// it under the operand's out_sharding).
TEST(ExplicitScatterTest, EmbeddingGradientIsTypedAsTheTable) {
  V5e v;
  const Array table = jnp::sin(jnp::arange(64, float32)).reshape({16, 4});
  const Array ids = jnp::array(std::vector<int32_t>{3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3});
  const Array w = jnp::cos(jnp::arange(64, float32)).reshape({16, 4});
  auto loss = [](const Array& t, const Array& i, const Array& wt) { return jnp::sum(jnp::take(t, i, 0) * wt); };
  const Array ts = v.Put(table, P(none, "y")), is = v.Put(ids, P("x")), ws = v.Put(w, P("x", "y"));
  const Array want = grad(loss)(table, ids, w);
  const Array g = grad(loss)(ts, is, ws);
  EXPECT_EQ(Str(typeof(g)), "float32[16,4@y]");
  EXPECT_TRUE(g.sharding()->Equals(NamedSharding(v.mesh, P(none, "y"))));
  EXPECT_TRUE(jnp::allclose(g, want, 1e-6, 1e-6)) << g << " vs " << want;
  const Array gj = jit(grad(loss))(ts, is, ws);
  EXPECT_EQ(Str(typeof(gj)), "float32[16,4@y]");
  EXPECT_TRUE(jnp::allclose(gj, want, 1e-6, 1e-6));
  EXPECT_THAT(Str(make_jaxpr(grad(loss))(ts, is, ws)), HasSubstr("out_sharding=P(None, 'y')"));
  // Per-example gradients: vmap over rows of ids and weights.
  auto per = [&](const Array& i, const Array& wt) { return grad(loss)(ts, i, wt); };
  const Array gv = vmap(per)(is.reshape({8, 2}), ws.reshape({8, 2, 4}));
  EXPECT_EQ(Str(typeof(gv)), "float32[8,16,4@y]");
  const Array want_v = vmap([&](const Array& i, const Array& wt) { return grad(loss)(table, i, wt); })(
      ids.reshape({8, 2}), w.reshape({8, 2, 4}));
  EXPECT_TRUE(jnp::allclose(gv, want_v, 1e-6, 1e-6));
}

}  // namespace
}  // namespace jx::explicit_out_sharding_test

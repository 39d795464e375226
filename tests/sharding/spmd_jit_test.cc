// SPMD jit: jit(f, in_shardings, out_shardings) partitions f into a per-device program with
// collectives; results equal the unsharded program. Each dot_general case (non-contracting,
// batch, contracting sharded on one side or both) gives the unsharded result and the
// collectives the interconnect's costs choose; the choice flips with the sizes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "absl/strings/str_join.h"
#include "jx/jx.h"
#include "jx/sharding/spmd/sharding_constraint.h"
#include "jx/sharding/spmd/spmd_jit.h"

namespace jx::spmd_jit_test {
namespace {

namespace jnp = jx::numpy;
using ::testing::HasSubstr;
using ::testing::Not;

struct V5e {
  tpu::Pod pod = tpu::make_pod("v5e", {4, 2});
  Mesh mesh = make_mesh({4, 2}, {"x", "y"}, pod.devices());
  NamedSharding S(PartitionSpec p) const { return NamedSharding(mesh, std::move(p)); }
};

Array Iota(std::vector<int64_t> shape, float scale = 0.01f) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return (jnp::arange(n, float32) * scale).reshape(shape);
}

// The unsharded reference runs on one chip of the pod: the same TPU numerics (bf16 MXU passes
// at default precision, f32 accumulation) as the partitioned program's chips.
Array Chip(const V5e& v, const Array& x) { return device_put(x, v.pod.devices()[0]); }

void ExpectClose(const Array& got, const Array& want) {
  ASSERT_EQ(got.shape(), want.shape());
  EXPECT_TRUE(jnp::allclose(device_put(got, DefaultDevice()), device_put(want, DefaultDevice()), 1e-4, 1e-4))
      << got << "\nvs\n" << want;
}

auto Matmul = [](const Array& a, const Array& b) { return jnp::matmul(a, b); };

TEST(SpmdJitTest, NonContractingDimsNeedNoCollective) {
  V5e v;
  Array a = Iota({8, 16}), b = Iota({16, 4});
  auto f = jit(Matmul, in_shardings{v.S(P("x", none)), v.S(P(none, "y"))});
  Array c = f(a, b);
  ExpectClose(c, jnp::matmul(Chip(v, a), Chip(v, b)));
  EXPECT_EQ(c.sharding()->ToString(), v.S(P("x", "y")).ToString());
  const std::string text = f.lower(a, b).compile().as_text();
  EXPECT_THAT(text, HasSubstr("dot_general"));
  EXPECT_THAT(text, Not(HasSubstr("psum")));
  EXPECT_THAT(text, Not(HasSubstr("all_gather")));
  EXPECT_THAT(text, HasSubstr("f32[2,16]"));  // the per-device lhs
}

TEST(SpmdJitTest, BatchDimSharded) {
  V5e v;
  Array a = Iota({4, 8, 16}), b = Iota({4, 16, 8});
  auto f = jit([](const Array& x, const Array& y) { return jnp::einsum("bij,bjk->bik", x, y); },
               in_shardings{v.S(P("x", none, none)), v.S(P("x", none, none))});
  ExpectClose(f(a, b), jnp::einsum("bij,bjk->bik", Chip(v, a), Chip(v, b)));
  const std::string text = f.lower(a, b).compile().as_text();
  EXPECT_THAT(text, Not(HasSubstr("psum")));
  EXPECT_THAT(text, Not(HasSubstr("all_gather")));
}

TEST(SpmdJitTest, SmallResultOfALongContractionReducesAfter) {
  // Output 8x8 (256 B) vs operands 8x4096 (128 KiB): all-reducing partial products beats
  // gathering the operands.
  V5e v;
  Array a = Iota({8, 4096}, 1e-4f), b = Iota({4096, 8}, 1e-4f);
  auto f = jit(Matmul, in_shardings{v.S(P(none, "x")), v.S(P("x", none))});
  ExpectClose(f(a, b), jnp::matmul(Chip(v, a), Chip(v, b)));
  const auto compiled = f.lower(a, b).compile();
  EXPECT_THAT(compiled.as_text(), HasSubstr("psum"));
  EXPECT_THAT(compiled.as_text(), Not(HasSubstr("all_gather")));
  ASSERT_FALSE(compiled.program().log().empty());
  EXPECT_THAT(absl::StrJoin(compiled.program().log(), "\n"), HasSubstr("multiply then all-reduce"));
  // The compiled per-device HLO (one program for the 8 chips) has the all-reduce, made
  // asynchronous (a start/done pair) by the TPU pipeline.
  EXPECT_THAT(compiled.as_text(), HasSubstr("all-reduce-start("));
  EXPECT_THAT(compiled.as_text(), HasSubstr("all-reduce-done("));
}

TEST(SpmdJitTest, LargeResultOfAShortContractionGathersFirst) {
  // Output 1024x1024 (4 MiB) vs operands 1024x16 (64 KiB): gathering the operands beats
  // reducing the partial products.
  V5e v;
  Array a = Iota({1024, 16}, 1e-4f), b = Iota({16, 1024}, 1e-4f);
  auto f = jit(Matmul, in_shardings{v.S(P(none, "x")), v.S(P("x", none))});
  ExpectClose(f(a, b), jnp::matmul(Chip(v, a), Chip(v, b)));
  const auto compiled = f.lower(a, b).compile();
  EXPECT_THAT(compiled.as_text(), HasSubstr("all_gather"));
  EXPECT_THAT(compiled.as_text(), Not(HasSubstr("psum")));
  EXPECT_THAT(absl::StrJoin(compiled.program().log(), "\n"), HasSubstr("all-gather first"));
}

TEST(SpmdJitTest, ContractionShardedOnOneSideSlicesTheOther) {
  V5e v;
  // Gathering lhs (8x65536, 2 MiB) costs more than all-reducing the 8x8 partial products;
  // rhs is replicated, so each device just takes its block of the contraction.
  Array a = Iota({8, 65536}, 1e-5f), b = Iota({65536, 8}, 1e-5f);
  auto f = jit(Matmul, in_shardings{v.S(P(none, "x")), v.S(P())});
  ExpectClose(f(a, b), jnp::matmul(Chip(v, a), Chip(v, b)));
  const std::string text = f.lower(a, b).compile().as_text();
  EXPECT_THAT(text, HasSubstr("dynamic_slice"));  // rhs's block of the contraction, locally
  EXPECT_THAT(text, HasSubstr("psum"));
}

TEST(SpmdJitTest, ShardedResultOfAContractionIsReduceScattered) {
  V5e v;
  Array a = Iota({8, 4096}, 1e-4f), b = Iota({4096, 8}, 1e-4f);
  auto f = jit(Matmul, in_shardings{v.S(P(none, "x")), v.S(P("x", none))}, out_shardings{v.S(P("x", none))});
  Array c = f(a, b);
  ExpectClose(c, jnp::matmul(Chip(v, a), Chip(v, b)));
  EXPECT_EQ(c.sharding()->ToString(), v.S(P("x", none)).ToString());
  EXPECT_THAT(f.lower(a, b).compile().as_text(), HasSubstr("reduce_scatter"));
}

TEST(SpmdJitTest, ReductionsReshapesAndConstraints) {
  V5e v;
  Array x = Iota({8, 4});
  auto f = jit(
      [&](const Array& a) {
        Array y = lax::with_sharding_constraint(jnp::sin(a) * 2.0f, v.S(P(none, "y")));
        return jnp::sum(y.reshape({32}) + 1.0f);
      },
      in_shardings{v.S(P("x", none))});
  ExpectClose(f(x), jnp::sum((jnp::sin(x) * 2.0f).reshape({32}) + 1.0f));
  const std::string text = f.lower(x).compile().as_text();
  // x leaves dim 0 and y splits dim 1 locally (the constraint); the merged [32] cannot be
  // y-sharded (strided pieces), so y is gathered before the reshape.
  EXPECT_THAT(text, HasSubstr("all_gather[all_gather_dimension=0 axis_name=x"));
  EXPECT_THAT(text, HasSubstr("dynamic_slice"));
  EXPECT_THAT(text, HasSubstr("all_gather[all_gather_dimension=1 axis_name=y"));
}

TEST(SpmdJitTest, ReshardingAnAxisBetweenDimsIsAnAllToAll) {
  V5e v;
  Array x = Iota({8, 8});
  auto f = jit([&](const Array& a) { return jnp::cos(lax::with_sharding_constraint(jnp::sin(a), v.S(P(none, "x")))); },
               in_shardings{v.S(P("x", none))});
  Array y = f(x);
  ExpectClose(y, jnp::cos(jnp::sin(x)));
  EXPECT_EQ(y.sharding()->ToString(), v.S(P(none, "x")).ToString());
  EXPECT_THAT(f.lower(x).compile().as_text(), HasSubstr("all_to_all"));
}

TEST(SpmdJitTest, ReshapeOfAMinorShardedDimIsNotMisread) {
  // [8, 4] sharded on its minor dim: the merged [32] cannot be y-sharded (the pieces are
  // strided), so the values are gathered first and the result is right.
  V5e v;
  Array x = Iota({8, 4});
  auto f = jit([](const Array& a) { return jnp::cumsum(a.reshape({32}), 0); }, in_shardings{v.S(P(none, "y"))});
  ExpectClose(f(x), jnp::cumsum(x.reshape({32}), 0));
}

TEST(SpmdJitTest, GradsEqualTheUnshardedGrads) {
  V5e v;
  Array w = Iota({16, 8}), x = Iota({8, 16});
  auto loss = [](const Array& w, const Array& x) { return jnp::sum(jnp::tanh(jnp::matmul(x, w))); };
  auto g = jit([&](const Array& w, const Array& x) { return grad(loss)(w, x); },
               in_shardings{v.S(P(none, "y")), v.S(P("x", none))});
  ExpectClose(g(w, x), grad(loss)(Chip(v, w), Chip(v, x)));
}

TEST(SpmdJitTest, CacheIsKeyedOnShardings) {
  V5e v;
  Array a = Iota({8, 16}), b = Iota({16, 4});
  auto f = jit(Matmul, out_shardings{v.S(P("x", none))});
  Array as = device_put(a, v.S(P("x", none)));
  Array as2 = device_put(a, v.S(P("y", none)));
  setenv("JX_EXPLAIN_CACHE_MISSES", "1", 1);
  ::testing::internal::CaptureStderr();
  f(as, b);
  f(as, b);
  f(as2, b);
  const std::string err = ::testing::internal::GetCapturedStderr();
  unsetenv("JX_EXPLAIN_CACHE_MISSES");
  EXPECT_THAT(err, HasSubstr("first call"));
  EXPECT_THAT(err, HasSubstr("argument 0: f32[8,16] sharded PartitionSpec('y', None) (was f32[8,16] sharded "
                             "PartitionSpec('x', None))"));
  ExpectClose(f(as2, b), jnp::matmul(Chip(v, a), Chip(v, b)));
}

TEST(SpmdJitTest, ErrorsNameTheArgument) {
  V5e v;
  Array a = Iota({6, 16}), b = Iota({16, 4});
  auto f = jit(Matmul, in_shardings{v.S(P("x", none)), v.S(P())});
  EXPECT_THROW(f(a, b), ValueError);  // 6 rows over 4 devices
  auto g = jit(Matmul, in_shardings{v.S(P("x", none))} );
  EXPECT_NO_THROW(g(Iota({8, 16}), b));  // one entry is a prefix for every argument
  EXPECT_THROW(jit(Matmul, in_shardings{v.S(P()), v.S(P()), v.S(P())})(Iota({8, 16}), b), ValueError);
}

TEST(SpmdEagerTest, OpsOnShardedArraysGiveShardedResults) {
  V5e v;
  spmd::RegisterSpmdPrimitives();
  Array x = Iota({8, 4});
  Array xs = device_put(x, v.S(P("x", none)));
  Array y = jnp::sin(xs);
  EXPECT_EQ(y.sharding()->ToString(), v.S(P("x", none)).ToString());
  ExpectClose(y, jnp::sin(x));
  Array w = Iota({4, 2});
  ExpectClose(jnp::matmul(xs, w), jnp::matmul(Chip(v, x), Chip(v, w)));
}

}  // namespace
}  // namespace jx::spmd_jit_test

namespace jx::spmd_jit_test {
namespace {

TEST(SpmdEagerTest, PlainJitOnShardedArgumentsPartitions) {
  V5e v;
  spmd::RegisterSpmdPrimitives();
  Array a = Iota({8, 16}), b = Iota({16, 4});
  Array as = device_put(a, v.S(P("x", none)));
  auto f = jit([](const Array& x, const Array& y) { return jnp::tanh(jnp::matmul(x, y)); });
  Array c = f(as, b);
  ExpectClose(c, jnp::tanh(jnp::matmul(Chip(v, a), Chip(v, b))));
  EXPECT_EQ(c.sharding()->ToString(), v.S(P("x", none)).ToString());
}

TEST(ExplicitShardingTypesTest, JaxprsPrintShardedTypes) {
  V5e v;
  spmd::RegisterSpmdPrimitives();
  Array xs = device_put(Iota({8, 4}), v.S(P("x", none)));
  const std::string text = make_jaxpr([](const Array& x) { return jnp::sin(x) * 2.0f; })(xs).ToString();
  EXPECT_THAT(text, HasSubstr("a:f32[8@x,4]"));
  EXPECT_THAT(text, HasSubstr("b:f32[8@x,4] = sin a"));
}

}  // namespace
}  // namespace jx::spmd_jit_test

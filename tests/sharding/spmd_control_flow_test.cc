// SPMD jit through control flow and inner calls: scan, while, cond and an inner jit carry
// shardings into their bodies, and the partitioner partitions each body, so a scan over
// stacked layer weights sharded on their non-leading dims runs on the shards (no full-size
// weight in the per-device program) and gives the unsharded result. On a mesh that is not one
// TPU slice the partitioned program runs in lockstep, collectives in bodies included.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "jx/jx.h"
#include "jx/sharding/spmd/propagation.h"
#include "jx/sharding/spmd/spmd_jit.h"
#include "jx/transforms/jaxpr_util.h"

namespace jx::spmd_control_flow_test {
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
  return jnp::sin(jnp::arange(n, float32) * scale).reshape(shape);
}

Array Chip(const V5e& v, const Array& x) { return device_put(x, v.pod.devices()[0]); }

void ExpectClose(const Array& got, const Array& want) {
  ASSERT_EQ(got.shape(), want.shape());
  EXPECT_TRUE(jnp::allclose(device_put(got, DefaultDevice()), device_put(want, DefaultDevice()), 1e-4, 1e-4))
      << got << "\nvs\n" << want;
}

// The per-device jaxpr of a compiled sharded jit (the text before the HLO).
template <typename F, typename... Args>
std::string LocalProgram(F& f, const Args&... args) {
  const std::string text = f.lower(args...).compile().as_text();
  return text.substr(0, text.find("HloModule"));
}

// A residual MLP over 3 stacked layers: h += tanh(h @ w1[l]) @ w2[l].
Array ScannedMlp(const Array& h0, const Array& w1, const Array& w2) {
  auto layer = [](const Array& h, const std::pair<Array, Array>& w) {
    Array out = h + jnp::matmul(jnp::tanh(jnp::matmul(h, w.first)), w.second);
    return std::pair<Array, Array>{out, jnp::sum(out)};
  };
  return lax::scan(layer, h0, std::pair<Array, Array>{w1, w2}).first;
}

TEST(SpmdControlFlowTest, ScanOverTensorParallelStackedWeightsStaysSharded) {
  // Megatron's split per layer: w1 by columns and w2 by rows over 'y', the batch over 'x'.
  V5e v;
  Array h = Iota({8, 16}), w1 = Iota({3, 16, 32}, 0.003f), w2 = Iota({3, 32, 16}, 0.005f);
  auto f = jit(ScannedMlp, in_shardings{v.S(P("x", none)), v.S(P(none, none, "y")), v.S(P(none, "y", none))});
  Array out = f(h, w1, w2);
  ExpectClose(out, ScannedMlp(Chip(v, h), Chip(v, w1), Chip(v, w2)));
  EXPECT_EQ(out.sharding()->ToString(), v.S(P("x", none)).ToString());
  const std::string local = LocalProgram(f, h, w1, w2);
  EXPECT_THAT(local, HasSubstr("scan["));
  EXPECT_THAT(local, HasSubstr("f32[3,16,16]"));  // the stacked per-device shards of w1 and w2
  EXPECT_THAT(local, Not(HasSubstr("f32[3,16,32]")));
  EXPECT_THAT(local, Not(HasSubstr("f32[3,32,16]")));
  EXPECT_THAT(local, Not(HasSubstr("f32[16,32]")));  // nor one whole layer
  EXPECT_THAT(local, Not(HasSubstr("all_gather")));
  EXPECT_THAT(local, HasSubstr("psum"));  // the row-split product, once per layer
}

TEST(SpmdControlFlowTest, ScanOverFsdpStackedWeightsGathersOneLayerAtATime) {
  // FSDP: each layer's weight rows split over 'x' like the batch; the body all-gathers one
  // layer's weight per iteration, never the stack.
  V5e v;
  Array h = Iota({8, 16}), w1 = Iota({3, 16, 16}, 0.003f), w2 = Iota({3, 16, 16}, 0.005f);
  auto f = jit(ScannedMlp, in_shardings{v.S(P("x", none)), v.S(P(none, "x", none)), v.S(P(none, "x", none))});
  ExpectClose(f(h, w1, w2), ScannedMlp(Chip(v, h), Chip(v, w1), Chip(v, w2)));
  const std::string local = LocalProgram(f, h, w1, w2);
  EXPECT_THAT(local, HasSubstr("f32[3,4,16]"));
  EXPECT_THAT(local, Not(HasSubstr("f32[3,16,16]")));
  EXPECT_THAT(local, HasSubstr("all_gather"));
}

TEST(SpmdControlFlowTest, GradOfTheScannedMlpEqualsTheUnshardedGrad) {
  V5e v;
  Array h = Iota({8, 16}), w1 = Iota({3, 16, 32}, 0.003f), w2 = Iota({3, 32, 16}, 0.005f);
  auto loss = [](const Array& w1, const Array& w2, const Array& h) { return jnp::sum(ScannedMlp(h, w1, w2)); };
  auto g = jit([&](const Array& w1, const Array& w2, const Array& h) { return grad(loss)(w1, w2, h); },
               in_shardings{v.S(P(none, none, "y")), v.S(P(none, "y", none)), v.S(P("x", none))});
  Array dw1 = g(w1, w2, h);
  ExpectClose(dw1, grad(loss)(Chip(v, w1), Chip(v, w2), Chip(v, h)));
  const std::string local = LocalProgram(g, w1, w2, h);
  EXPECT_THAT(local, Not(HasSubstr("f32[3,16,32]")));
  EXPECT_THAT(local, Not(HasSubstr("f32[8,16]")));  // the cotangent carry stays batch-sharded
}

TEST(SpmdControlFlowTest, PropagationReachesTheScanBody) {
  V5e v;
  Array h = Iota({8, 16}), w1 = Iota({3, 16, 32}), w2 = Iota({3, 32, 16});
  ClosedJaxpr j = make_jaxpr(ScannedMlp)(h, w1, w2);
  const spmd::ShardingPlan plan = spmd::PropagateShardings(
      *j.jaxpr, v.mesh.abstract_mesh(), {DimShardings{{"x"}, {}}, DimShardings{{}, {}, {"y"}}, std::nullopt}, {});
  size_t scan = 0;
  while (scan < j.jaxpr->eqns.size() && j.jaxpr->eqns[scan].primitive.name() != "scan") ++scan;
  ASSERT_LT(scan, j.jaxpr->eqns.size());
  ASSERT_EQ(plan.regions[scan].size(), 1u);  // the scan's body
  const spmd::ShardingPlan& body = plan.regions[scan][0];
  const Jaxpr& b = *GetJaxpr(j.jaxpr->eqns[scan].params, "jaxpr").jaxpr;
  EXPECT_EQ(body.sharding(b.invars[0]), (DimShardings{{"x"}, {}}));       // the carry
  EXPECT_EQ(body.sharding(b.invars[1]), (DimShardings{{}, {"y"}}));       // w1[l]
  EXPECT_EQ(body.sharding(b.invars[2]), (DimShardings{{"y"}, {}}));       // w2[l], from the dot
  EXPECT_EQ(plan.sharding(j.jaxpr->invars[2]), (DimShardings{{}, {"y"}, {}}));  // back out to xs
}

TEST(SpmdControlFlowTest, WhileLoopCarriesAShardedValue) {
  V5e v;
  Array x = Iota({8, 16}), w = Iota({16, 16}, 0.02f);
  auto f = [](const Array& x, const Array& w, const Array& n) {
    using Carry = std::pair<Array, Array>;
    return lax::while_loop([&](const Carry& c) { return c.first < n; },
                           [&](const Carry& c) { return Carry{c.first + 1, jnp::tanh(jnp::matmul(c.second, w))}; },
                           Carry{Array(0), x})
        .second;
  };
  auto g = jit(f, in_shardings{v.S(P("x", none)), v.S(P(none, "y")), v.S(P())});
  Array n = Array(3);
  Array out = g(x, w, n);
  ExpectClose(out, f(Chip(v, x), Chip(v, w), n));
  const std::string local = LocalProgram(g, x, w, n);
  EXPECT_THAT(local, HasSubstr("while["));
  EXPECT_THAT(local, Not(HasSubstr("f32[8,16]")));  // the carry stays batch-sharded
}

TEST(SpmdControlFlowTest, CondBranchesRunOnTheShards) {
  V5e v;
  Array x = Iota({8, 16});
  auto f = [](const Array& x, const Array& p) {
    return lax::cond(p > 0, [](const Array& a) { return jnp::sin(a) * 2.0f; }, [](const Array& a) { return -a; }, x);
  };
  auto g = jit(f, in_shardings{v.S(P("x", "y")), v.S(P())});
  for (float p : {1.0f, -1.0f}) {
    Array out = g(x, Array(p));
    ExpectClose(out, f(Chip(v, x), Array(p)));
    EXPECT_EQ(out.sharding()->ToString(), v.S(P("x", "y")).ToString());
  }
  const std::string local = LocalProgram(g, x, Array(1.0f));
  EXPECT_THAT(local, HasSubstr("cond["));
  EXPECT_THAT(local, Not(HasSubstr("all_gather")));
}

TEST(SpmdControlFlowTest, InnerJitIsPartitionedInline) {
  V5e v;
  Array a = Iota({8, 16}), b = Iota({16, 8});
  auto inner = jit([](const Array& a, const Array& b) { return jnp::tanh(jnp::matmul(a, b)); });
  auto f = jit([&](const Array& a, const Array& b) { return inner(a, b) * 2.0f; },
               in_shardings{v.S(P("x", none)), v.S(P(none, "y"))});
  Array out = f(a, b);
  ExpectClose(out, jnp::tanh(jnp::matmul(Chip(v, a), Chip(v, b))) * 2.0f);
  EXPECT_EQ(out.sharding()->ToString(), v.S(P("x", "y")).ToString());
  const std::string local = LocalProgram(f, a, b);
  EXPECT_THAT(local, Not(HasSubstr("all_gather")));
  EXPECT_THAT(local, HasSubstr("f32[2,4]"));
}

// SPMD jit on meshes that are not one TPU slice (chips of two pods, the host CPU): the
// partitioned program runs in lockstep, loop and branch bodies with their collectives
// included, and equals the program run on one device.

// Four chips, two from each of two v5e pods: no one slice holds them, so the partitioned
// program runs in lockstep (chip by chip, collectives moved between the chips' buffers).
struct TwoPods {
  tpu::Pod a = tpu::make_pod("v5e", {2, 1}), b = tpu::make_pod("v5e", {2, 1});
  Mesh mesh = Mesh(Chips(), {2, 2}, {"x", "y"});
  std::vector<const Device*> Chips() const {
    std::vector<const Device*> chips = a.devices();
    for (const Device* d : b.devices()) chips.push_back(d);
    return chips;
  }
  NamedSharding S(PartitionSpec p) const { return NamedSharding(mesh, std::move(p)); }
  // The reference on one chip (chips multiply at the TPU's default precision).
  Array OnChip(const Array& x) const { return device_put(x, a.devices()[0]); }
};

TEST(SpmdLockstepMeshTest, ScanBodyWithCollectivesOnChipsOfTwoPods) {
  // Megatron's split per layer: the body's row-split product is psum'd once per layer.
  TwoPods m;
  Array h = Iota({8, 16}), w1 = Iota({3, 16, 32}, 0.003f), w2 = Iota({3, 32, 16}, 0.005f);
  auto f = jit(ScannedMlp, in_shardings{m.S(P("x", none)), m.S(P(none, none, "y")), m.S(P(none, "y", none))});
  Array out = f(h, w1, w2);
  ExpectClose(out, ScannedMlp(m.OnChip(h), m.OnChip(w1), m.OnChip(w2)));
  EXPECT_EQ(out.sharding()->ToString(), m.S(P("x", none)).ToString());
  const std::string program = f.lower(h, w1, w2).compile().as_text();
  EXPECT_THAT(program, HasSubstr("scan["));
  EXPECT_THAT(program, HasSubstr("psum"));
  EXPECT_THAT(program, Not(HasSubstr("HloModule")));  // no pod program: lockstep
}

TEST(SpmdLockstepMeshTest, WhileAndCondBodiesWithCollectivesOnChipsOfTwoPods) {
  // w's columns split over 'y' against a batch-split carry: the body gathers w's columns
  // (or reduces the product) each trip; the branch taken must agree on every chip.
  TwoPods m;
  Array x = Iota({8, 16}), w = Iota({16, 16}, 0.02f);
  auto f = [](const Array& x, const Array& w, const Array& n) {
    using Carry = std::pair<Array, Array>;
    Array y = lax::while_loop([&](const Carry& c) { return c.first < n; },
                              [&](const Carry& c) { return Carry{c.first + 1, jnp::tanh(jnp::matmul(c.second, w))}; },
                              Carry{Array(0), x})
                  .second;
    return lax::cond(n > 2, [&](const Array& a) { return jnp::matmul(a, w.T()); }, [](const Array& a) { return -a; }, y);
  };
  auto g = jit(f, in_shardings{m.S(P("x", none)), m.S(P("y", none)), m.S(P())});
  for (int n : {3, 1}) {
    ExpectClose(g(x, w, Array(n)), f(m.OnChip(x), m.OnChip(w), Array(n)));
  }
  const std::string local = LocalProgram(g, x, w, Array(3));
  EXPECT_THAT(local, HasSubstr("while["));
  EXPECT_THAT(local, HasSubstr("cond["));
  EXPECT_THAT(local, ::testing::AnyOf(HasSubstr("all_gather"), HasSubstr("psum")));
}

TEST(SpmdLockstepMeshTest, JitOfAShardMapWithCollectivesInAScanOffOneTpuSlice) {
  // No one program runs on chips of two pods: jit(shard_map) runs its body in lockstep, the
  // psum inside the scan included, and equals the eager shard_map.
  TwoPods m;
  Mesh line(m.Chips(), {4}, {"i"});
  auto body = [](const Array& x) {
    auto step = [](const Array& c, const Array& row) { return std::pair<Array, Array>{c + lax::psum(row, "i"), c}; };
    return lax::scan(step, jnp::zeros({3}), x).first;
  };
  auto sm = shard_map(body, line, in_specs{P("i")}, out_specs{P("i")});
  const Array x = jnp::arange(24, float32).reshape({8, 3});
  const Array got = jit(sm)(x);
  EXPECT_EQ(got.sharding()->ToString(), NamedSharding(line, P("i")).ToString());
  // Each chip's carry: the rows summed over the chips, 2 steps: (0+6+12+18 + 3+9+15+21) + (0, 1, 2) x 8.
  const std::vector<float> want = {84, 92, 100};
  const std::vector<float> values = device_put(got, DefaultDevice()).to_vector<float>();
  for (size_t k = 0; k < values.size(); ++k) EXPECT_EQ(values[k], want[k % 3]) << k;
  EXPECT_EQ(values, device_put(sm(x), DefaultDevice()).to_vector<float>());
  // The host as a one-device mesh: one carry of every row.
  Mesh host({jx::devices("cpu")[0]}, {1}, {"i"});
  auto on_host = shard_map(body, host, in_specs{P("i")}, out_specs{P("i")});
  EXPECT_EQ(device_put(jit(on_host)(x), DefaultDevice()).to_vector<float>(), want);
}

TEST(SpmdLockstepMeshTest, ScanBodyWithCollectivesOnTheHost) {
  // The host CPU as a one-device mesh: the same program runs there (the collectives over
  // axes of size 1 move nothing) and equals the host's unsharded result.
  Mesh mesh({jx::devices("cpu")[0]}, {1, 1}, {"x", "y"});
  auto S = [&](PartitionSpec p) { return NamedSharding(mesh, std::move(p)); };
  Array h = Iota({8, 16}), w1 = Iota({3, 16, 32}, 0.003f), w2 = Iota({3, 32, 16}, 0.005f);
  auto f = jit(ScannedMlp, in_shardings{S(P("x", none)), S(P(none, none, "y")), S(P(none, "y", none))});
  ExpectClose(f(h, w1, w2), ScannedMlp(h, w1, w2));
}

}  // namespace
}  // namespace jx::spmd_control_flow_test

// SPMD jit on meshes that are not one TPU slice (chips of two pods, the host CPU): the
// partitioned program runs in lockstep over the devices, loop and branch bodies with their
// collectives included, and equals the program run on one device.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "jx/jx.h"

namespace jx {
namespace {

namespace jnp = jx::numpy;

Array Iota(std::vector<int64_t> shape, float scale = 0.01f) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return jnp::sin(jnp::arange(n, float32) * scale).reshape(shape);
}

// A residual MLP over 3 stacked layers: h += tanh(h @ w1[l]) @ w2[l].
Array ScannedMlp(const Array& h0, const Array& w1, const Array& w2) {
  auto layer = [](const Array& h, const std::pair<Array, Array>& w) {
    Array out = h + jnp::matmul(jnp::tanh(jnp::matmul(h, w.first)), w.second);
    return std::pair<Array, Array>{out, jnp::sum(out)};
  };
  return lax::scan(layer, h0, std::pair<Array, Array>{w1, w2}).first;
}

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

void ExpectClose(const Array& got, const Array& want) {
  ASSERT_EQ(got.shape(), want.shape());
  EXPECT_TRUE(jnp::allclose(device_put(got, DefaultDevice()), device_put(want, DefaultDevice()), 1e-4, 1e-4))
      << got << "\nvs\n" << want;
}

// The per-device jaxpr of a compiled sharded jit.
template <typename F, typename... Args>
std::string LocalProgram(F& f, const Args&... args) {
  return f.lower(args...).compile().as_text();
}

TEST(SpmdLockstepMeshTest, ScanBodyWithCollectivesOnChipsOfTwoPods) {
  // Megatron's split per layer: the body's row-split product is psum'd once per layer.
  TwoPods m;
  Array h = Iota({8, 16}), w1 = Iota({3, 16, 32}, 0.003f), w2 = Iota({3, 32, 16}, 0.005f);
  auto f = jit(ScannedMlp, in_shardings{m.S(P("x", none)), m.S(P(none, none, "y")), m.S(P(none, "y", none))});
  Array out = f(h, w1, w2);
  ExpectClose(out, ScannedMlp(m.OnChip(h), m.OnChip(w1), m.OnChip(w2)));
  EXPECT_EQ(out.sharding()->ToString(), m.S(P("x", none)).ToString());
  const std::string local = LocalProgram(f, h, w1, w2);
  EXPECT_THAT(local, ::testing::HasSubstr("scan["));
  EXPECT_THAT(local, ::testing::HasSubstr("psum"));
  EXPECT_THAT(local, ::testing::Not(::testing::HasSubstr("HloModule")));  // no pod program: lockstep
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
  EXPECT_THAT(local, ::testing::HasSubstr("while["));
  EXPECT_THAT(local, ::testing::HasSubstr("cond["));
  EXPECT_THAT(local, ::testing::AnyOf(::testing::HasSubstr("all_gather"), ::testing::HasSubstr("psum")));
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
}  // namespace jx

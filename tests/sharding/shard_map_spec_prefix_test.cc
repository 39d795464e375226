// shard_map in_specs and out_specs as pytree prefixes (JAX's rule): an entry is a spec for
// every leaf of its value or a specs_by_path prefix giving each leaf the spec of the longest
// path prefix of its key path (or of a function of the path). A Megatron-split params struct
// goes in with its own spec per field and comes back out the same way.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "jx/jx.h"

namespace jx::shard_map_spec_prefix_test {
namespace {

namespace jnp = jx::numpy;
using ::testing::HasSubstr;

struct Mlp {
  BOOST_HANA_DEFINE_STRUCT(Mlp, (Array, w1), (Array, b1), (Array, w2));
};

Array Host(const Array& x) { return device_put(x, DefaultDevice()); }

class ShardMapSpecPrefixTest : public ::testing::Test {
 protected:
  tpu::Pod pod_ = tpu::make_pod("v5e", {4, 2});
  Mesh mesh_ = make_mesh({4, 2}, {"data", "model"}, pod_.devices());
  Mlp params_{jnp::sin(jnp::arange(48, float32)).reshape({8, 6}) * 0.3f, jnp::cos(jnp::arange(6, float32)) * 0.1f,
              jnp::sin(jnp::arange(30, float32) * 0.7f).reshape({6, 5}) * 0.3f};
  Array x_ = jnp::cos(jnp::arange(64, float32) * 0.2f).reshape({8, 8});
};

// The per-device step: column-split w1/b1, row-split w2, the batch over "data".
std::tuple<Mlp, Array> LocalStep(const Mlp& p, const Array& x) {
  Array h = jnp::tanh(jnp::matmul(x, p.w1) + p.b1);
  Array out = lax::psum(jnp::matmul(h, p.w2), "model");
  Mlp scaled{p.w1 * 2.0f, p.b1 * 2.0f, p.w2 * 2.0f};
  return {scaled, out};
}

Array Reference(const Mlp& p, const Array& x) { return jnp::matmul(jnp::tanh(jnp::matmul(x, p.w1) + p.b1), p.w2); }

TEST_F(ShardMapSpecPrefixTest, SpecsByPathSplitEachField) {
  default_matmul_precision highest("highest");
  const specs_by_path megatron{{".w1", P(none, "model")}, {".b1", P("model")}, {".w2", P("model", none)}};
  auto f = shard_map(LocalStep, mesh_, in_specs{megatron, P("data", none)}, out_specs{megatron, P("data", none)});
  auto [p2, out] = f(params_, x_);
  EXPECT_TRUE(jnp::allclose(Host(out), Reference(params_, x_), 1e-5, 1e-5));
  EXPECT_EQ(p2.w1.sharding()->ToString(), NamedSharding(mesh_, P(none, "model")).ToString());
  EXPECT_EQ(p2.b1.sharding()->ToString(), NamedSharding(mesh_, P("model")).ToString());
  EXPECT_EQ(p2.w2.sharding()->ToString(), NamedSharding(mesh_, P("model", none)).ToString());
  EXPECT_TRUE(jnp::allclose(Host(p2.w2), params_.w2 * 2.0f, 1e-6, 1e-6));
  // A function of the path gives the same, and so does jit of it.
  const specs_by_path by_fn([](const std::string& path) {
    return path == ".w1" ? P(none, "model") : path == ".b1" ? P("model") : P("model", none);
  });
  auto g = jit(shard_map(LocalStep, mesh_, in_specs{by_fn, P("data", none)}, out_specs{by_fn, P("data", none)}));
  auto [q2, out2] = g(params_, x_);
  EXPECT_TRUE(jnp::allclose(Host(out2), Host(out), 1e-6, 1e-6));
  EXPECT_TRUE(jnp::allclose(Host(q2.b1), params_.b1 * 2.0f, 1e-6, 1e-6));
}

TEST_F(ShardMapSpecPrefixTest, TheLongestPrefixWinsAndTheEmptyPathCoversAll) {
  default_matmul_precision highest("highest");
  // "" covers every field replicated; ".w1" and ".w2" then override it (b1 stays whole).
  const specs_by_path specs{{"", P()}, {".w1", P(none, "model")}, {".w2", P("model", none)}};
  auto f = shard_map(
      [](const Mlp& p, const Array& x) {
        // b1 is whole on every chip: each takes its column block by its model index.
        Array b = lax::dynamic_slice(p.b1, {lax::axis_index("model") * 3}, {3});
        return lax::psum(jnp::matmul(jnp::tanh(jnp::matmul(x, p.w1) + b), p.w2), "model");
      },
      mesh_, in_specs{specs, P("data", none)}, out_specs{P("data", none)});
  EXPECT_TRUE(jnp::allclose(Host(f(params_, x_)), Reference(params_, x_), 1e-5, 1e-5));
}

TEST_F(ShardMapSpecPrefixTest, ALeafNoEntryCoversIsAnError) {
  const specs_by_path partial{{".w1", P(none, "model")}};
  auto f = shard_map([](const Mlp& p) { return p.w1; }, mesh_, in_specs{partial}, out_specs{P(none, "model")});
  try {
    f(params_);
    FAIL() << "expected a ValueError";
  } catch (const ValueError& e) {
    EXPECT_THAT(e.what(), HasSubstr("in_specs gives no spec for the leaf at '.b1'"));
    EXPECT_THAT(e.what(), HasSubstr("'.w1'"));
  }
}

}  // namespace
}  // namespace jx::shard_map_spec_prefix_test

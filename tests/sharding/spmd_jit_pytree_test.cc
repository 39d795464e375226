// SPMD jit over pytrees (JAX's in_shardings/out_shardings as pytree prefixes): a params
// struct and a batch go in, a tuple of (new params, loss) comes out, each in_shardings entry
// covering all leaves of its argument and each out_shardings entry one element of the tuple.
#include <gtest/gtest.h>

#include <tuple>

#include "jx/jx.h"

namespace jx::spmd_jit_pytree_test {
namespace {

namespace jnp = jx::numpy;

struct Layer {
  BOOST_HANA_DEFINE_STRUCT(Layer, (Array, w), (Array, b));
};

Array Host(const Array& x) { return device_put(x, DefaultDevice()); }

TEST(SpmdJitPytreeTest, DataParallelStepOverAParamsStruct) {
  tpu::Pod pod = tpu::make_pod("v5e", {2, 2});
  Mesh mesh = make_mesh({4}, {"data"}, pod.devices());
  NamedSharding replicated(mesh, P()), rows(mesh, P("data", none));
  auto loss = [](const Layer& p, const Array& x) { return jnp::mean(jnp::tanh(jnp::matmul(x, p.w) + p.b)); };
  auto step = [&](const Layer& p, const Array& x) {
    auto [l, g] = jx::value_and_grad(loss)(p, x);
    Layer next{p.w - g.w * 0.1f, p.b - g.b * 0.1f};
    return std::tuple{next, l};
  };
  Layer p{jnp::arange(12, float32).reshape({4, 3}) * 0.05f, jnp::ones({3}) * 0.1f};
  Array x = jnp::arange(32, float32).reshape({8, 4}) * 0.01f;
  auto sharded = jit(step, in_shardings{replicated, rows}, out_shardings{replicated, replicated});
  auto [next, l] = sharded(p, x);
  auto [want_next, want_l] = jit([&](const Layer& p_, const Array& x_) {
    return step(p_, x_);
  })(Layer{device_put(p.w, pod.devices()[0]), device_put(p.b, pod.devices()[0])}, device_put(x, pod.devices()[0]));
  EXPECT_TRUE(jnp::allclose(Host(next.w), Host(want_next.w), 1e-5, 1e-5));
  EXPECT_TRUE(jnp::allclose(Host(next.b), Host(want_next.b), 1e-5, 1e-5));
  EXPECT_NEAR(Host(l).item<float>(), Host(want_l).item<float>(), 1e-5);
  EXPECT_EQ(next.w.sharding()->ToString(), replicated.ToString());
  // A second call with the same structure hits the cache; another structure traces anew.
  auto [next2, l2] = sharded(next, x);
  EXPECT_LT(Host(l2).item<float>(), Host(l).item<float>());
}

TEST(SpmdJitPytreeTest, OutShardingsCountIsCheckedAgainstTheTuple) {
  tpu::Pod pod = tpu::make_pod("v5e", {2, 2});
  Mesh mesh = make_mesh({4}, {"data"}, pod.devices());
  NamedSharding r(mesh, P());
  auto f = jit([](const Array& x) { return std::tuple{x, x * 2.f, x * 3.f}; }, in_shardings{r}, out_shardings{r, r});
  try {
    f(jnp::ones({4}));
    FAIL() << "expected a ValueError";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("out_shardings has 2 entries but the function returns 3 outputs"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace jx::spmd_jit_pytree_test

// A generic lax::reduce (https://docs.jax.dev/en/latest/_autosummary/jax.lax.reduce.html) on a
// simulated chip: the TPU pipeline fuses the reduce before the chip's host half compiles, and
// the CPU backend expands the fused reduce into native code, so it runs with the evaluator
// fallback forbidden and equals eager on the host bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <tuple>

#include "jx/jx.h"
#include "tests/scoped_env.h"

namespace jx::tpu::generic_reduce_on_chip_test {
namespace {

namespace jnp = jx::numpy;


// log(exp(a) + exp(b)), identity -inf: no monoid primitive, so one generic reduce equation.
Array LogAddExp(const Array& a, const Array& b) {
  Array m = lax::max(a, b);
  Array safe = lax::select(lax::eq(m, Array::Scalar(-INFINITY, m.dtype())), Array::Scalar(0, m.dtype()), m);
  Array ea = lax::exp(lax::sub(a, safe));
  Array eb = lax::exp(lax::sub(b, safe));
  return lax::add(safe, lax::log(lax::add(ea, eb)));
}

TEST(GenericReduceOnChipTest, LogSumExpRunsNativelyAndEqualsEager) {
  Pod pod = make_pod("v5e", {1, 1});
  const Device* chip = pod.devices()[0];
  const Array x = jnp::sin(jnp::arange(6 * 37, float32).reshape({6, 37}));
  auto lse = [](const Array& v) { return lax::reduce(v, Array(-INFINITY), LogAddExp, {1}); };
  const Array want = lse(x);
  jx::testing::ScopedEnv forbid("JX_CPU_FALLBACK", "error");
  const Array got = jit(lse)(device_put(x, chip));
  EXPECT_EQ(got.committed_device(), chip);
  EXPECT_EQ(got.to_vector<float>(), want.to_vector<float>());
}

// Three operands: a variadic reducer no kernel knows, whose fused root is a tuple.
TEST(GenericReduceOnChipTest, VariadicPickRunsNativelyAndEqualsEager) {
  Pod pod = make_pod("v5e", {1, 1});
  const Device* chip = pod.devices()[0];
  const Array x = jnp::sin(jnp::arange(5 * 9, float32).reshape({5, 9}));
  const Array y = jnp::cos(jnp::arange(5 * 9, float32).reshape({5, 9}));
  const Array idx = lax::broadcasted_iota(int32, {5, 9}, 1);
  using Triple = std::tuple<Array, Array, Array>;
  // The (x, y, index) whose x + y is largest, the smaller index on ties.
  auto pick = [](const Triple& a, const Triple& b) {
    Array sa = std::get<0>(a) + std::get<1>(a), sb = std::get<0>(b) + std::get<1>(b);
    Array take_b = lax::bitwise_or(lax::gt(sb, sa),
                                   lax::bitwise_and(lax::eq(sb, sa), lax::lt(std::get<2>(b), std::get<2>(a))));
    return Triple{lax::select(take_b, std::get<0>(b), std::get<0>(a)),
                  lax::select(take_b, std::get<1>(b), std::get<1>(a)),
                  lax::select(take_b, std::get<2>(b), std::get<2>(a))};
  };
  auto f = [&](const Array& a, const Array& b, const Array& i) {
    return lax::reduce(Triple{a, b, i}, Triple{Array(-INFINITY), Array(-INFINITY), Array::Scalar(0, int32)}, pick, {1});
  };
  const Triple want = f(x, y, idx);
  jx::testing::ScopedEnv forbid("JX_CPU_FALLBACK", "error");
  const Triple got = jit(f)(device_put(x, chip), device_put(y, chip), device_put(idx, chip));
  EXPECT_EQ(std::get<0>(got).to_vector<float>(), std::get<0>(want).to_vector<float>());
  EXPECT_EQ(std::get<1>(got).to_vector<float>(), std::get<1>(want).to_vector<float>());
  EXPECT_EQ(std::get<2>(got).to_vector<int32_t>(), std::get<2>(want).to_vector<int32_t>());
}

}  // namespace
}  // namespace jx::tpu::generic_reduce_on_chip_test

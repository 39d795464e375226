// Control flow under jx::jit on the CPU backend: loop bodies are compiled once (counted),
// and scan, fori_loop, while_loop, cond and switch_ compile with the evaluator fallback
// turned into an error (JX_CPU_FALLBACK=error) and agree with eager.
#include <cmath>
#include <cstdlib>
#include <vector>

#include <gtest/gtest.h>
#include <jx/jx.h>

#include "jx/compiler/backend/cpu/cpu_executable.h"
#include "jx/devices/cpu/cpu_compiler.h"

namespace jx::control_flow_jit_test {
namespace {

namespace jnp = jx::numpy;

void ExpectAllClose(const Array& got, const Array& want, double tol = 1e-5) {
  ASSERT_EQ(got.shape(), want.shape());
  ASSERT_EQ(got.dtype(), want.dtype());
  const std::vector<double> g = got.astype(float64).to_vector<double>();
  const std::vector<double> w = want.astype(float64).to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) {
    EXPECT_NEAR(g[i], w[i], tol * (1 + std::fabs(w[i]))) << "element " << i;
  }
}

// JX_CPU_FALLBACK=error for the scope: a compile that needs the evaluator fails.
class NoEvaluatorFallback {
 public:
  NoEvaluatorFallback() { setenv("JX_CPU_FALLBACK", "error", 1); }
  ~NoEvaluatorFallback() { unsetenv("JX_CPU_FALLBACK"); }
};

TEST(ControlFlowJitTest, ForiLoopBodyIsCompiledOnce) {
  NoEvaluatorFallback no_fallback;
  // A shape no other test compiles, so the first call must compile.
  const Array x = jnp::arange(37, float32) * 0.01f;
  auto f = [](const Array& x) {
    return lax::fori_loop(0, 1000, [](const Array& i, const Array& c) { return jnp::sin(c) + 0.001f; }, x);
  };
  auto jf = jit(f);
  const int64_t before = cpu::ComputationsCompiled();
  const CpuJitStats stats_before = GetCpuJitStats();
  const Array got = jf(x);
  EXPECT_EQ(GetCpuJitStats().compiles - stats_before.compiles, 1);
  // The entry, the loop condition and the loop body: once each, not per iteration.
  EXPECT_EQ(cpu::ComputationsCompiled() - before, 3);
  ExpectAllClose(got, f(x));
  const Array again = jf(x * 2.0f);
  EXPECT_EQ(cpu::ComputationsCompiled() - before, 3);
  ExpectAllClose(again, f(x * 2.0f));
}

TEST(ControlFlowJitTest, ScanForiWhileCondSwitchCompileWithoutFallback) {
  NoEvaluatorFallback no_fallback;
  const Array w = jnp::arange(64, float32).reshape({8, 8}) * 0.01f;
  const Array xs = jnp::sin(jnp::arange(80, float32).reshape({10, 8}));
  const Array h0 = jnp::zeros({8});
  auto rnn = [](const Array& w, const Array& h0, const Array& xs) {
    auto [h, hs] = lax::scan(
        [&](const Array& h, const Array& x) {
          Array hn = jnp::tanh(jnp::matmul(h, w) + x);
          return std::pair{hn, hn * 2.0f};
        },
        h0, xs);
    return std::pair{h, hs};
  };
  auto [h, hs] = jit(rnn)(w, h0, xs);
  auto [eh, ehs] = rnn(w, h0, xs);
  ExpectAllClose(h, eh);
  ExpectAllClose(hs, ehs);

  // Reverse scan.
  auto rev = [](const Array& xs) {
    return lax::scan([](const Array& c, const Array& x) { return std::pair{c + x, c * x}; }, jnp::zeros({8}), xs,
                     {.reverse = true})
        .second;
  };
  ExpectAllClose(jit(rev)(xs), rev(xs));

  // while_loop with a traced bound (a real while, not a scan), integer carry.
  auto collatz_steps = [](const Array& n) {
    auto [m, steps] = lax::while_loop(
        [](const std::pair<Array, Array>& s) { return s.first > 1; },
        [](const std::pair<Array, Array>& s) {
          Array m = s.first;
          Array next = jnp::where(m % 2 == 0, jnp::floor_divide(m, 2), 3 * m + 1);
          return std::pair{next, s.second + 1};
        },
        std::pair{n, Array(0)});
    return steps;
  };
  for (int n : {1, 7, 27}) {
    const Array a = Array(n);
    EXPECT_EQ(jit(collatz_steps)(a).item<int32_t>(), collatz_steps(a).item<int32_t>()) << n;
  }

  // cond and switch_ (index out of range clamps), inside and outside a loop.
  auto branchy = [](const Array& x, const Array& k) {
    Array a = lax::cond(jnp::sum(x) > 0, [](const Array& v) { return v * 2.0f; }, [](const Array& v) { return -v; }, x);
    std::vector<std::function<Array(const Array&)>> branches = {
        [](const Array& v) { return v + 1.0f; }, [](const Array& v) { return v * v; },
        [](const Array& v) { return jnp::exp(v); }};
    Array b = lax::switch_(k, branches, a);
    return lax::fori_loop(0, 4, [&](const Array& i, const Array& c) {
      return lax::cond(i % 2 == 0, [](const Array& v) { return v * 0.5f; }, [](const Array& v) { return v + 1.0f; }, c);
    }, b);
  };
  for (int k : {-1, 0, 1, 2, 5}) {
    for (float s : {1.0f, -1.0f}) {
      const Array x = jnp::arange(8, float32) * (0.1f * s);
      ExpectAllClose(jit(branchy)(x, Array(k)), branchy(x, Array(k)));
    }
  }

  // Nested: a scan inside a fori_loop, dynamic slices of a traced index.
  auto nested = [](const Array& xs) {
    return lax::fori_loop(0, 3, [&](const Array& i, const Array& acc) {
      auto [c, ys] = lax::scan([](const Array& c, const Array& x) { return std::pair{c + x, c}; }, acc, xs);
      return c + lax::dynamic_slice(xs, {i, Array(0)}, {1, 8}).reshape({8});
    }, jnp::zeros({8}));
  };
  ExpectAllClose(jit(nested)(xs), nested(xs));
}

// A donated operand of dynamic_update_slice holds the result: same memory, window updated.
TEST(ControlFlowJitTest, DynamicUpdateSliceIntoADonatedArgumentIsInPlace) {
  NoEvaluatorFallback no_fallback;
  auto put = [](const Array& x, const Array& u, const Array& i) { return lax::dynamic_update_slice(x, u, {i, Array(0)}); };
  auto jput = jit(put, static_argnums{}, donate_argnums{0});
  const Array u = jnp::full({2, 16}, 7.0f);
  Array x = jnp::arange(256, float32).reshape({16, 16});
  const Array want = put(x, u, Array(20));  // the start clamps to 14
  const void* memory = x.data();
  const Array got = jput(x, u, Array(20));
  ExpectAllClose(got, want, 0);
  EXPECT_EQ(got.data(), memory);
  EXPECT_TRUE(x.is_deleted());
  EXPECT_EQ(jput.lower(got, u, Array(3)).compile().memory_analysis().alias_size_in_bytes, 256 * 4);
}

// A scan's dynamic-slice of xs and dynamic-update-slice of ys walk one row a step, forward or
// in reverse; the kernels hint the next row to the cache one step ahead (the hint stops at
// either end of the array) and the values stay eager's, on repeated runs too.
TEST(ControlFlowJitTest, ScanRowWalksForwardAndReverseMatchEager) {
  NoEvaluatorFallback no_fallback;
  for (const Shape& shape : {Shape{37, 5}, Shape{37, 3, 4}}) {
    Array xs = jnp::arange(0.0, static_cast<double>(shape[0] * (shape.size() == 2 ? shape[1] : 12)))
                   .reshape(shape) * 0.25f;
    for (bool reverse : {false, true}) {
      auto f = [reverse](const Array& init, const Array& x) {
        return lax::scan([](const Array& c, const Array& row) {
          Array next = c * 0.5f + row;
          return std::pair{next, next};
        }, init, x, {.reverse = reverse}).second;
      };
      Array init = jnp::zeros(Shape(shape.begin() + 1, shape.end()));
      const Array want = f(init, xs);
      auto jf = jit(f);
      for (int run = 0; run < 2; ++run) ExpectAllClose(jf(init, xs), want, 0.0);
    }
  }
}

}  // namespace
}  // namespace jx::control_flow_jit_test

// jx::debug::print and jx::debug::callback (jax.debug.print / jax.debug.callback) in eager
// mode and under jit, vmap and grad, with the outputs JAX's documentation prints:
// https://docs.jax.dev/en/latest/debugging/print_breakpoint.html ("Compiled prints and
// breakpoints") and JAX's tests/debugging_primitives_test.py.
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <jx/jx.h>

namespace jx::debug_test {
namespace {

namespace jnp = jx::numpy;
using ::testing::internal::CaptureStdout;
using ::testing::internal::GetCapturedStdout;

// test_simple_debug_print_works_in_eager_mode: f(2) prints "x: 2".
TEST(DebugPrint, EagerMode) {
  CaptureStdout();
  debug::print("x: {}", 2);
  EXPECT_EQ(GetCapturedStdout(), "x: 2\n");
}

// The page's first example: under jit, both prints run when the program runs, with the
// values the compiled code computed, every call.
TEST(DebugPrint, UnderJitRunsEveryCall) {
  auto f = jit([](const Array& x) {
    debug::print("🤯 {} 🤯", x);
    Array y = jnp::sin(x);
    debug::print("🤯 {} 🤯", y);
    return y;
  });
  CaptureStdout();
  Array y = f(Array(2.0f));

  EXPECT_EQ(GetCapturedStdout(), "🤯 2.0 🤯\n🤯 0.9092974 🤯\n");
  CaptureStdout();
  f(Array(2.0f));
  EXPECT_EQ(GetCapturedStdout(), "🤯 2.0 🤯\n🤯 0.9092974 🤯\n");
}

// The page's "Why debug print?" example: vmap calls the print once per element, all x's
// before all y's.
TEST(DebugPrint, UnderVmapPrintsEachElement) {
  auto f = [](const Array& x) {
    debug::print("x: {}", x);
    Array y = jnp::sin(x);
    debug::print("y: {}", y);
    return y;
  };
  const std::string want = "x: 0.0\nx: 1.0\nx: 2.0\ny: 0.0\ny: 0.841471\ny: 0.9092974\n";
  CaptureStdout();
  vmap(f)(jnp::arange(3.0));
  EXPECT_EQ(GetCapturedStdout(), want);
  CaptureStdout();
  jit(vmap(f))(jnp::arange(3.0));
  EXPECT_EQ(GetCapturedStdout(), want);
}

// Under grad the print runs in the forward pass with the primal value (JAX's
// debugging_primitives_test: test_debug_print_with_grad).
TEST(DebugPrint, UnderGradPrintsThePrimal) {
  auto f = [](const Array& x) {
    debug::print("x: {}", x);
    return x * x;
  };
  CaptureStdout();
  Array g = grad(f)(Array(1.0f));
  EXPECT_EQ(GetCapturedStdout(), "x: 1.0\n");
  EXPECT_FLOAT_EQ(g.item<float>(), 2.0f);
  CaptureStdout();
  g = jit(grad(f))(Array(3.0f));
  EXPECT_EQ(GetCapturedStdout(), "x: 3.0\n");
  EXPECT_FLOAT_EQ(g.item<float>(), 6.0f);
}

// Staged with its effect; the equation has no outputs and nothing uses it, and it still runs.
TEST(DebugPrint, StagedAsAnEffect) {
  auto f = [](const Array& x) {
    debug::print("x: {}", x);
    return x * 2.0f;
  };
  EXPECT_EQ(make_jaxpr(f)(Array(1.0f)).ToString(),
            "{ lambda ; a:f32[]. let\n"
            "    debug_callback[callback=<debug print 'x: {}'> effect=Debug] a\n"
            "    b:f32[] = mul a 2.0:f32[]\n"
            "  in (b,) }");
}

TEST(DebugPrint, PositionalFieldsAndBraces) {
  CaptureStdout();
  debug::print("{1} then {0} {{literal}}", jnp::array(std::vector<float>{1, 2}), 3);
  EXPECT_EQ(GetCapturedStdout(), "3 then [1. 2.] {literal}\n");
}

TEST(DebugPrint, BadFormatIsAValueErrorAtTheCall) {
  EXPECT_THROW(debug::print("x: {} {}", 1), ValueError);
  EXPECT_THROW(debug::print("x: {name}", 1), ValueError);
  EXPECT_THROW(debug::print("x: {", 1), ValueError);
  EXPECT_THROW(debug::print("{} {0}", 1), ValueError);
}

// jax.debug.callback under jit inside a loop: the host function sees each iteration's value.
TEST(DebugCallback, RunsInsideCompiledLoops) {
  std::vector<float> seen;
  auto f = jit([&](const Array& x) {
    return lax::fori_loop(0, 3, [&](const Array&, const Array& c) {
      debug::callback([&](absl::Span<const Array> v) { seen.push_back(v[0].item<float>()); }, {c});
      return c + 1.0f;
    }, x);
  });
  f(Array(10.0f));
  EXPECT_EQ(seen, (std::vector<float>{10, 11, 12}));
}

}  // namespace
}  // namespace jx::debug_test

// jit through the compiler: programs compile once per distinct program, AOT lowering and
// compilation (as_text, cost_analysis, memory_analysis, calling a Compiled), ShapeDtypeStruct
// arguments, JX_DUMP_TO, and errors.
#include "jx/devices/cpu/cpu_compiler.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <jx/jx.h>

namespace jx::cpu_jit_test {
namespace {

namespace jnp = jx::numpy;

Array Iota(Shape shape, double scale = 0.01) {
  return jnp::arange(NumElements(shape), float32).reshape(shape) * scale;
}

void ExpectAllClose(const Array& got, const Array& want, double tol = 1e-5) {
  ASSERT_EQ(got.shape(), want.shape());
  ASSERT_EQ(got.dtype(), want.dtype());
  const std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], w[i], tol * (1 + std::fabs(w[i]))) << "element " << i;
}

TEST(CpuJitBackendTest, CompilesEachDistinctProgramOnce) {
  auto f = [](const Array& x, const Array& y) { return lax::tanh(x * 1.5 + 0.5) * y - lax::exp(-x * x); };
  const Array x = Iota({4, 8}), y = Iota({4, 8}, 0.02);
  const CpuJitStats before = GetCpuJitStats();
  auto jf = jit(f);
  ExpectAllClose(jf(x, y), f(x, y));
  ExpectAllClose(jf(x, y), f(x, y));
  const CpuJitStats after_one = GetCpuJitStats();
  EXPECT_EQ(after_one.compiles - before.compiles, 1);
  // A second jit object of the same function traces again but finds the compiled program.
  auto jf2 = jit(f);
  ExpectAllClose(jf2(x, y), f(x, y));
  const CpuJitStats after_two = GetCpuJitStats();
  EXPECT_EQ(after_two.compiles, after_one.compiles);
  EXPECT_EQ(after_two.cache_hits - after_one.cache_hits, 1);
  // New shapes are a new program.
  ExpectAllClose(jf(Iota({3}), Iota({3})), f(Iota({3}), Iota({3})));
  EXPECT_EQ(GetCpuJitStats().compiles - after_two.compiles, 1);
}

// The cache keys on the lowered module's fingerprint: two jits of one function share a
// program, and programs that differ only in a constant or in operand order do not.
TEST(CpuJitBackendTest, ProgramCacheMissesOnAConstantOrOperandOrder) {
  const Array x = Iota({8}), y = Iota({8}, 0.02);
  auto run = [&](auto f) {
    const CpuJitStats before = GetCpuJitStats();
    ExpectAllClose(jit(f)(x, y), f(x, y));
    const CpuJitStats after = GetCpuJitStats();
    return std::make_pair(after.compiles - before.compiles, after.cache_hits - before.cache_hits);
  };
  auto f = [](const Array& a, const Array& b) { return lax::sin(a - b) * 1.5; };
  run(f);
  EXPECT_EQ(run(f), std::make_pair(int64_t{0}, int64_t{1}));
  auto other_constant = [](const Array& a, const Array& b) { return lax::sin(a - b) * 2.5; };
  EXPECT_EQ(run(other_constant), std::make_pair(int64_t{1}, int64_t{0}));
  auto swapped = [](const Array& a, const Array& b) { return lax::sin(b - a) * 1.5; };
  EXPECT_EQ(run(swapped), std::make_pair(int64_t{1}, int64_t{0}));
  // The lowering still prints its module.
  EXPECT_NE(jit(f).lower(x, y).as_text().find("sine("), std::string::npos);
}

TEST(CpuJitBackendTest, LowerAndCompileAheadOfTime) {
  auto dense = [](const Array& x, const Array& w, const Array& b) { return lax::tanh(jnp::matmul(x, w) + b); };
  const Array w = Iota({16, 8}), b = Iota({8});
  auto lowered = jit(dense).lower(ShapeDtypeStruct{{4, 16}, float32}, w, b);
  const std::string hlo = lowered.as_text();
  EXPECT_NE(hlo.find("HloModule jit_"), std::string::npos) << hlo;
  EXPECT_NE(hlo.find("dot("), std::string::npos) << hlo;
  EXPECT_NE(hlo.find("tanh("), std::string::npos) << hlo;
  auto compiled = lowered.compile();
  const std::string optimized = compiled.as_text();
  EXPECT_NE(optimized.find("fusion"), std::string::npos) << optimized;

  const CostAnalysis cost = compiled.cost_analysis();
  EXPECT_GE(cost.flops, 2.0 * 4 * 16 * 8);  // the dot, plus the bias add
  EXPECT_LE(cost.flops, 2.0 * 4 * 16 * 8 + 4 * 8 * 4);
  EXPECT_EQ(cost.transcendentals, 4 * 8);   // tanh per output element
  ASSERT_EQ(cost.bytes_accessed_operand.size(), 3u);
  EXPECT_EQ(cost.bytes_accessed_operand[0], 4 * 16 * 4);
  EXPECT_EQ(cost.bytes_accessed_operand[1], 16 * 8 * 4);
  EXPECT_EQ(cost.bytes_accessed_output, 4 * 8 * 4);

  const MemoryAnalysis mem = compiled.memory_analysis();
  EXPECT_EQ(mem.argument_size_in_bytes, (4 * 16 + 16 * 8 + 8) * 4);
  EXPECT_EQ(mem.output_size_in_bytes, 4 * 8 * 4);
  EXPECT_GE(mem.peak_memory_in_bytes, mem.argument_size_in_bytes + mem.output_size_in_bytes);

  const Array x = Iota({4, 16});
  ExpectAllClose(compiled(x, w, b), dense(x, w, b));
  EXPECT_THROW(compiled(Iota({5, 16}), w, b), TypeError);  // not the lowered shape
  EXPECT_THROW(compiled(x, w), TypeError);                 // missing argument
  ExpectAllClose(compiled(x, w, b), dense(x, w, b));       // still usable
}

TEST(CpuJitBackendTest, CompiledTakesOnlyTheDynamicArguments) {
  auto scale = [](const Array& x, int k) { return x * static_cast<double>(k); };
  auto compiled = jit(scale, static_argnums{1}).lower(ShapeDtypeStruct{{3}, float32}, 4).compile();
  ExpectAllClose(compiled(Iota({3})), Iota({3}) * 4.0);
}

TEST(CpuJitBackendTest, PytreeArgumentsAndOutputs) {
  auto f = [](const std::vector<Array>& xs) { return std::pair{xs[0] + xs[1], jnp::sum(xs[0] * xs[1])}; };
  const std::vector<Array> xs = {Iota({2, 3}), Iota({2, 3}, 0.5)};
  auto [s, dot] = jit(f)(xs);
  auto [s_ref, dot_ref] = f(xs);
  ExpectAllClose(s, s_ref);
  ExpectAllClose(dot, dot_ref);
  auto compiled = jit(f).lower(xs).compile();
  auto [s2, dot2] = compiled(xs);
  ExpectAllClose(s2, s_ref);
  ExpectAllClose(dot2, dot_ref);
}

TEST(CpuJitBackendTest, DumpToWritesJaxprHloPerPassAndDot) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "jx_dump_test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  setenv("JX_DUMP_TO", dir.c_str(), 1);
  auto f = [](const Array& x) { return lax::exp(x * 2.0 + 1.0) - x; };
  Array y = jit(f)(Iota({1000}, 0.001));
  unsetenv("JX_DUMP_TO");
  ExpectAllClose(y, f(Iota({1000}, 0.001)));
  bool jaxpr = false, lowered = false, fusion_pass = false, dot = false;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    if (name.find(".jaxpr.txt") != std::string::npos) jaxpr = text.str().find("exp") != std::string::npos;
    if (name.find(".lowered.txt") != std::string::npos) lowered = text.str().find("HloModule") != std::string::npos;
    if (name.find(".fusion.txt") != std::string::npos) fusion_pass = text.str().find("kind=kLoop") != std::string::npos;
    if (name.ends_with(".dot")) dot = text.str().find("subgraph cluster_") != std::string::npos;
  }
  EXPECT_TRUE(jaxpr);
  EXPECT_TRUE(lowered);
  EXPECT_TRUE(fusion_pass);
  EXPECT_TRUE(dot);
  std::filesystem::remove_all(dir);
}

TEST(CpuJitBackendTest, GradAndVmapOfJitAreOneCompiledProgram) {
  auto loss = [](const Array& w, const Array& x) { return jnp::sum(lax::tanh(jnp::matmul(x, w))); };
  const Array w = Iota({3, 2}), xs = Iota({5, 4, 3});
  auto per_example = jit(vmap(grad(loss), in_axes{none, 0}));
  const CpuJitStats before = GetCpuJitStats();
  const Array got = per_example(w, xs);
  EXPECT_EQ(GetCpuJitStats().compiles - before.compiles, 1);
  for (int64_t i = 0; i < 5; ++i) {
    ExpectAllClose(got[i], grad(loss)(w, xs[i]), 1e-5);
  }
}

}  // namespace
}  // namespace jx::cpu_jit_test

namespace jx::cpu_jit_test {
namespace {

TEST(CpuJitBackendTest, DebugNansNamesTheFirstPrimitiveThatMadeOne) {
  auto inner = jit([](const Array& x) { return lax::log(x - 1.0) * 2.0; });
  auto f = [&](const Array& x) { return lax::sin(inner(x)) + 1.0; };
  const Array x = jnp::array(std::vector<float>{0.5f, 2.0f, 3.0f});
  // Without the flag the NaN is just a value.
  EXPECT_TRUE(std::isnan(jit(f)(x).to_vector<float>()[0]));
  config::update("jax_debug_nans", true);  // JX_DEBUG_NANS=1's programmatic switch
  try {
    jit(f)(x);
    ADD_FAILURE() << "expected FloatingPointError";
  } catch (const FloatingPointError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("encountered in log"), std::string::npos) << msg;
    EXPECT_NE(msg.find("/jit("), std::string::npos) << msg;  // inside the nested jit
  }
  EXPECT_THROW(jit(f)(jnp::array(std::vector<float>{NAN})), FloatingPointError);  // NaN argument
  const Array ok = jit(f)(jnp::array(std::vector<float>{2.0f}));                    // still works
  EXPECT_FALSE(std::isnan(ok.to_vector<float>()[0]));
  config::update("jax_debug_nans", false);
}

TEST(CpuJitBackendTest, DonatedArgumentMemoryHoldsTheResult) {
  // An SGD update, w donated: the new w is written where the old one was, which is deleted.
  auto step = jit([](const Array& w, const Array& g) { return w - 0.1 * g; }, donate_argnums{0});
  Array w = Iota({256}), g = Iota({256}, 0.5);
  const Array want = w - 0.1 * g;
  const void* old_memory = w.data();
  const Array w_new = step(w, g);
  ExpectAllClose(w_new, want);
  EXPECT_EQ(w_new.data(), old_memory);
  EXPECT_TRUE(w.is_deleted());
  EXPECT_FALSE(g.is_deleted());
  try {
    (void)w.to_vector<float>();
    ADD_FAILURE() << "expected RuntimeError";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("Array has been deleted with shape=f32[256]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(step(w, g), RuntimeError);  // a deleted array is no argument either
  EXPECT_EQ(w.repr(), "Array(<deleted>, shape=(256,), dtype=float32)");
  // The process goes on: the program runs again on the live result.
  ExpectAllClose(step(w_new, g), want - 0.1 * g);
  EXPECT_EQ(step.lower(w_new, g).compile().memory_analysis().alias_size_in_bytes, 256 * 4);
}

TEST(CpuJitBackendTest, DonationWithoutAUsableOutputOrPassedTwiceLeavesTheArgument) {
  // The output's shape differs from x's: nothing can take x's memory.
  auto sum = jit([](const Array& x) { return lax::reduce_sum(x, {0}); }, donate_argnums{0});
  const Array x = Iota({16});
  ExpectAllClose(sum(x), lax::reduce_sum(x, {0}));
  EXPECT_FALSE(x.is_deleted());
  // The same buffer passed twice: overwriting it would change the other argument mid-run.
  auto add = jit([](const Array& a, const Array& b) { return lax::exp(a) + b; }, donate_argnums{0});
  const Array y = Iota({16});
  ExpectAllClose(add(y, y), lax::exp(y) + y);
  EXPECT_FALSE(y.is_deleted());
  // Without donation the same function's program never overwrites its argument.
  auto plain = jit([](const Array& a, const Array& b) { return lax::exp(a) + b; });
  const Array z = Iota({16});
  ExpectAllClose(plain(z, y), lax::exp(z) + y);
  EXPECT_FALSE(z.is_deleted());
}

TEST(CpuJitBackendTest, DonatedPytreeOfParametersIsUpdatedInPlace) {
  auto sgd = jit(
      [](const std::vector<Array>& params, const std::vector<Array>& grads) {
        std::vector<Array> out;
        for (size_t i = 0; i < params.size(); ++i) out.push_back(params[i] - 0.5 * grads[i]);
        return out;
      },
      donate_argnums{0});
  std::vector<Array> params{Iota({8, 4}), Iota({4})}, grads{Iota({8, 4}, 0.1), Iota({4}, 0.2)};
  const std::vector<const void*> memory{params[0].data(), params[1].data()};
  const std::vector<Array> updated = sgd(params, grads);
  for (size_t i = 0; i < params.size(); ++i) {
    EXPECT_TRUE(params[i].is_deleted());
    EXPECT_EQ(updated[i].data(), memory[i]);
  }
  ExpectAllClose(updated[1], Iota({4}) - 0.5 * grads[1]);
}

}  // namespace
}  // namespace jx::cpu_jit_test

// jit through the compiler: programs compile once per distinct program, AOT lowering and
// compilation (as_text, cost_analysis, memory_analysis, calling a Compiled), ShapeDtypeStruct
// arguments, JX_DUMP_TO, and errors.
#include "jx/compiler/jit/cpu_jit_backend.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <jx/jx.h>

namespace jx {
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
}  // namespace jx

namespace jx {
namespace {

TEST(CpuJitBackendTest, DebugNansNamesTheFirstPrimitiveThatMadeOne) {
  auto inner = jit([](const Array& x) { return lax::log(x - 1.0) * 2.0; });
  auto f = [&](const Array& x) { return lax::sin(inner(x)) + 1.0; };
  const Array x = jnp::array(std::vector<float>{0.5f, 2.0f, 3.0f});
  // Without the flag the NaN is just a value.
  EXPECT_TRUE(std::isnan(jit(f)(x).to_vector<float>()[0]));
  setenv("JX_DEBUG_NANS", "1", 1);
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
  unsetenv("JX_DEBUG_NANS");
}

}  // namespace
}  // namespace jx

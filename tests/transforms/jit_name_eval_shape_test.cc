// jit(f, jx::name{...}) names the program in its HLO, dumps, logs and errors; eval_shape
// returns the output structure's ShapeDtypeStructs without computing; the jit cache keys on
// the call's device.
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>
#include <jx/jx.h>

#include "jx/devices/cpu/cpu_compiler.h"

namespace jx::jit_name_eval_shape_test {
namespace {

namespace jnp = jx::numpy;

struct Layer {
  BOOST_HANA_DEFINE_STRUCT(Layer, (Array, w), (Array, b));
};

TEST(JitNameTest, NamesTheHloModuleLogsAndErrors) {
  auto step = jit([](const Array& x, const Array& y) { return jnp::matmul(x, y); }, name{"train_step"});
  const Array x = jnp::ones({2, 3}), y = jnp::ones({3, 4});
  const std::string hlo = step.lower(x, y).as_text();
  EXPECT_NE(hlo.find("HloModule jit_train_step"), std::string::npos) << hlo;
  EXPECT_NE(step.lower(x, y).compile().as_text().find("jit_train_step"), std::string::npos);

  setenv("JX_LOG_COMPILES", "1", 1);
  ::testing::internal::CaptureStderr();
  step(x, y);
  const std::string log = ::testing::internal::GetCapturedStderr();
  unsetenv("JX_LOG_COMPILES");
  EXPECT_NE(log.find("jx: traced jit(train_step)"), std::string::npos) << log;
  EXPECT_NE(log.find("jx: compiled jit(train_step)"), std::string::npos) << log;
  EXPECT_NE(log.find("CpuDevice(id=0)"), std::string::npos) << log;

  try {
    step(x, jnp::ones({4, 5}));
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("jit(train_step)"), std::string::npos) << e.what();
  }
  try {
    step.lower(x, y).compile()(x, jnp::ones({3, 5}));
    FAIL() << "expected TypeError";
  } catch (const TypeError& e) {
    EXPECT_NE(std::string(e.what()).find("jit(train_step)"), std::string::npos) << e.what();
  }
  // Under a transformation the jit equation carries the name.
  EXPECT_NE(make_jaxpr(step)(x, y).ToString().find("name=train_step"), std::string::npos);
}

TEST(JitNameTest, OptionsComeInAnyOrder) {
  auto f = [](const Array& x, int n) { return x * static_cast<double>(n); };
  auto a = jit(f, name{"scale"}, static_argnums{1});
  auto b = jit(f, static_argnums{1}, name{"scale"});
  EXPECT_EQ(a(jnp::ones({2}), 3).to_vector<float>(), b(jnp::ones({2}), 3).to_vector<float>());
  EXPECT_NE(a.lower(jnp::ones({2}), 3).as_text().find("HloModule jit_scale"), std::string::npos);
}

TEST(JitNameTest, NamesTheDumpFiles) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "jx_jit_name_dump";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  setenv("JX_DUMP_TO", dir.c_str(), 1);
  jit([](const Array& x) { return lax::exp(x) + 1.0; }, name{"dumped_fn"})(jnp::arange(7.0f));
  unsetenv("JX_DUMP_TO");
  int named = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    named += entry.path().filename().string().find("jit_dumped_fn") != std::string::npos;
  }
  EXPECT_GE(named, 3);  // the jaxpr, the lowered HLO, a pass dump, the DOT graph
  std::filesystem::remove_all(dir);
}

TEST(JitDeviceCacheTest, CommittedAndUncommittedCallsAreSeparateEntries) {
  auto jf = jit([](const Array& x) { return x + 1.0; });
  const Array x = jnp::arange(3.0f);
  EXPECT_FALSE(jf(x).committed());
  const Array c = jf(device_put(x, devices()[0]));
  EXPECT_TRUE(c.committed());
  EXPECT_EQ(c.devices(), devices());
  EXPECT_EQ(jf.num_traces(), 2u);
  jf(x);
  jf(device_put(x, devices()[0]));
  EXPECT_EQ(jf.num_traces(), 2u);
}

TEST(JitDeviceCacheTest, ExplainsADeviceChange) {
  setenv("JX_EXPLAIN_CACHE_MISSES", "1", 1);
  auto jf = jit([](const Array& x) { return x * 2.0; }, name{"twice"});
  ::testing::internal::CaptureStderr();
  jf(jnp::ones({2}));
  jf(device_put(jnp::ones({2}), devices()[0]));
  const std::string log = ::testing::internal::GetCapturedStderr();
  unsetenv("JX_EXPLAIN_CACHE_MISSES");
  EXPECT_NE(log.find("jit(twice) cache miss"), std::string::npos) << log;
  EXPECT_NE(log.find("device changed from the default device (uncommitted) to CpuDevice(id=0)"), std::string::npos)
      << log;
}

TEST(EvalShapeTest, ArraysAndShapeDtypeStructsIn) {
  auto f = [](const Array& x, const Array& w) { return jnp::matmul(x, w); };
  const CpuJitStats before = GetCpuJitStats();
  const ShapeDtypeStruct out = eval_shape(f)(ShapeDtypeStruct{{1024, 512}, float32}, jnp::ones({512, 16}));
  EXPECT_EQ(out.shape, (Shape{1024, 16}));
  EXPECT_EQ(out.dtype, float32);
  EXPECT_FALSE(out.weak_type);
  EXPECT_EQ(GetCpuJitStats().compiles, before.compiles);  // nothing compiled
  // A program far larger than this machine's memory: traced only.
  const ShapeDtypeStruct huge =
      eval_shape(f)(ShapeDtypeStruct{{1 << 20, 1 << 16}, bfloat16}, ShapeDtypeStruct{{1 << 16, 1 << 16}, bfloat16});
  EXPECT_EQ(huge.shape, (Shape{1 << 20, 1 << 16}));
  EXPECT_EQ(huge.dtype, bfloat16);
}

TEST(EvalShapeTest, OutputPytreesKeepTheirStructure) {
  auto f = [](const Layer& p, const Array& x) {
    const Array y = jnp::matmul(x, p.w) + p.b;
    std::map<std::string, Array> stats{{"mean", jnp::mean(y)}, {"max", jnp::max(y, 0)}};
    return std::tuple{y, std::vector<Array>{y.astype(float64), jnp::sum(y) * 2.0}, stats, std::optional<Array>(),
                      std::pair{x, p}};
  };
  const Layer p{jnp::ones({3, 4}), jnp::ones({4})};
  auto [y, list, stats, none, pair] = eval_shape(f)(p, ShapeDtypeStruct{{2, 3}, float32});
  EXPECT_EQ(y, (ShapeDtypeStruct{{2, 4}, float32}));
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0], (ShapeDtypeStruct{{2, 4}, float64}));
  EXPECT_EQ(list[1].shape, Shape{});
  EXPECT_EQ(stats.at("mean"), (ShapeDtypeStruct{{}, float32}));
  EXPECT_EQ(stats.at("max"), (ShapeDtypeStruct{{4}, float32}));
  EXPECT_FALSE(none.has_value());
  EXPECT_EQ(pair.first, (ShapeDtypeStruct{{2, 3}, float32}));
  // A struct cannot hold ShapeDtypeStructs: its leaves come back with its structure.
  ASSERT_EQ(pair.second.leaves.size(), 2u);
  EXPECT_EQ(pair.second.leaves[0], (ShapeDtypeStruct{{3, 4}, float32}));
  EXPECT_EQ(pair.second.def.KeyPath(1), ".b");
}

TEST(EvalShapeTest, ErrorsAreThoseOfTracing) {
  auto f = [](const Array& a, const Array& b) { return jnp::matmul(a, b); };
  EXPECT_THROW(eval_shape(f)(ShapeDtypeStruct{{2, 3}, float32}, ShapeDtypeStruct{{4, 5}, float32}), ShapeError);
}

}  // namespace
}  // namespace jx::jit_name_eval_shape_test

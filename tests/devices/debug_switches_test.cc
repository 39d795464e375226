// The debugging switches of issue 13 item 5: jx::config (jax.config.update's names), eager
// jax_debug_nans, and JX_DUMP_TO creating its directory or saying once why it cannot.
// JAX's flags: https://docs.jax.dev/en/latest/debugging/flags.html ("JAX debugging flags").
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <jx/jx.h>

namespace jx::debug_switches_test {
namespace {

namespace jnp = jx::numpy;

TEST(Config, DebugNansInEagerMode) {
  const Array x = jnp::array(std::vector<float>{-1.0f, 2.0f});
  EXPECT_TRUE(std::isnan(jnp::log(x).to_vector<float>()[0]));  // off: NaN is a value
  config::update("jax_debug_nans", true);
  EXPECT_TRUE(config::read("debug_nans"));
  try {
    jnp::log(x);
    ADD_FAILURE() << "expected FloatingPointError";
  } catch (const FloatingPointError& e) {
    EXPECT_NE(std::string(e.what()).find("invalid value (nan) encountered in log"), std::string::npos) << e.what();
  }
  EXPECT_EQ(jnp::log(jnp::array(std::vector<float>{1.0f})).to_vector<float>()[0], 0.0f);  // still works
  config::update("debug_nans", false);
  EXPECT_FALSE(config::read("jax_debug_nans"));
  EXPECT_TRUE(std::isnan(jnp::log(x).to_vector<float>()[0]));
}

TEST(Config, UnknownNamesListTheKnownOnes) {
  try {
    config::update("jax_enable_x64", true);  // jx has no x64 switch: 64-bit types are always on
    ADD_FAILURE() << "expected ValueError";
  } catch (const ValueError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("unrecognized config option 'jax_enable_x64'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'jax_debug_nans'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'jax_log_compiles'"), std::string::npos) << msg;
  }
  EXPECT_THROW(config::read("nans"), ValueError);
}

TEST(DumpTo, CreatesTheDirectory) {
  const std::filesystem::path root = std::filesystem::temp_directory_path() / "jx_dump_mkdir_test";
  std::filesystem::remove_all(root);
  const std::filesystem::path dir = root / "nested" / "dumps";
  setenv("JX_DUMP_TO", dir.c_str(), 1);
  jit([](const Array& x) { return x * 3.0f + 1.0f; })(jnp::ones({7}));
  unsetenv("JX_DUMP_TO");
  ASSERT_TRUE(std::filesystem::is_directory(dir));
  bool jaxpr = false;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    jaxpr |= entry.path().filename().string().ends_with(".jaxpr.txt");
  }
  EXPECT_TRUE(jaxpr);
  std::filesystem::remove_all(root);
}

TEST(DumpTo, AnUnusablePathIsReportedOnce) {
  const std::filesystem::path root = std::filesystem::temp_directory_path() / "jx_dump_bad_test";
  std::filesystem::remove_all(root);
  std::filesystem::create_directories(root);
  const std::filesystem::path file = root / "a_file";
  std::ofstream(file) << "not a directory";
  const std::filesystem::path dir = file / "dumps";  // under a regular file: cannot be created
  setenv("JX_DUMP_TO", dir.c_str(), 1);
  ::testing::internal::CaptureStderr();
  Array a = jit([](const Array& x) { return x - 2.0f; })(jnp::ones({5}));
  Array b = jit([](const Array& x) { return x * 5.0f; })(jnp::ones({6}));
  const std::string err = ::testing::internal::GetCapturedStderr();
  unsetenv("JX_DUMP_TO");
  EXPECT_EQ(a.to_vector<float>()[0], -1.0f);  // the programs still run
  EXPECT_EQ(b.to_vector<float>()[0], 5.0f);
  const std::string line = "jx: JX_DUMP_TO=" + dir.string() + ": cannot create the directory";
  const size_t first = err.find(line);
  EXPECT_NE(first, std::string::npos) << err;
  EXPECT_EQ(err.find(line, first + 1), std::string::npos) << "reported twice:\n" << err;
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace jx::debug_switches_test

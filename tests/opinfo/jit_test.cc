// The "jit" column of the opinfo suite: every record's samples run through jx::jit (traced,
// lowered, optimized by the CPU pipeline, compiled and run by the CPU backend) and must
// equal eager execution within the record's tolerance, outputs' dtypes and weak types
// included. The column compiles with the reference-evaluator fallback turned into an error
// (JX_CPU_FALLBACK=error), so it also proves every primitive runs native CPU kernels on
// every dtype it is sampled in: no primitive is exempt. The collectives' samples compile for
// their mesh's simulated chips instead (one SPMD program run on every chip).
#include <cstdlib>
#include <cstring>
#include <functional>
#include <utility>
#include <vector>
#include <string>

#include <gtest/gtest.h>

#include "opinfo.h"
#include "tests/scoped_env.h"

namespace jx::opinfo::jit_test {
namespace {


class OpInfoJitTest : public ::testing::TestWithParam<std::string> {};

TEST_P(OpInfoJitTest, JitMatchesEager) {
  const OpInfo& info = FindOpInfo(GetParam());
  jx::testing::ScopedEnv forbid("JX_CPU_FALLBACK", "error");
  // A collective's samples are shard_maps over a mesh of chips: jit compiles each into one
  // program for the mesh's chips (its HLO collectives move the data) and the result equals
  // the eager lockstep evaluation.
  int ran = 0;
  for (DType d : info.dtypes) {
    for (const Sample& s : SamplesFor(info, d)) {
      const std::string where = StrCat(info.name, " ", s.description);
      auto jitted = jx::jit([&s](const std::vector<Array>& args) { return s.op(args); });
      std::vector<Array> got;
      try {
        got = jitted(s.args);
      } catch (const std::exception& e) {
        ADD_FAILURE() << where << " jit threw: " << e.what();
        continue;
      }
      const std::vector<Array> want = s.op(s.args);
      ASSERT_EQ(got.size(), want.size()) << where;
      for (size_t k = 0; k < want.size(); ++k) {
        EXPECT_EQ(got[k].aval().weak_type, want[k].aval().weak_type) << where << " output " << k;
        ExpectArraysClose(got[k], want[k], info.tolerance(want[k].dtype()), StrCat(where, " output ", k));
      }
      ++ran;
    }
  }
  EXPECT_GT(ran, 0) << info.name << " has no samples";
}

// Float sums over windows lower to convert -> f64 window -> convert; the CPU backend runs
// that as eager's kernel in the element type, so jit equals eager bit for bit even where the
// two earlier computations differed: an f32 cumsum whose f64 sum cancels (jit compensated
// the f64 scan, eager does not), and f16 sums that round differently once (f64 -> f16) than
// eager's twice (through f32). Their inputs: f32 {1e30, 1, -1e30}, f16 {1, 2^-11, 2^-24}.
TEST(JitWindowSumsTest, EqualEagerBitForBit) {
  const float f32_values[] = {1e30f, 1.0f, -1e30f};
  const double f16_values[] = {1.0, 1.0 / 2048, 1.0 / (1 << 24)};
  const std::vector<Array> inputs = {Array::FromData(f32_values, {3}, float32),
                                     Array::FromData(f16_values, {3}, float64).astype(float16)};
  using Program = std::function<Array(const Array&)>;
  const std::vector<std::pair<std::string, Program>> programs = {
      {"cumsum", [](const Array& x) { return lax::cumsum(x, 0); }},
      {"cumsum reverse", [](const Array& x) { return lax::cumsum(x, 0, /*reverse=*/true); }},
      {"reduce_window_sum", [](const Array& x) { return lax::reduce_window_sum(x, {3}, {1}, {{0, 0}}); }},
  };
  for (const Array& x : inputs) {
    for (const auto& [name, fn] : programs) {
      const Array want = fn(x);
      const Array got = jx::jit(fn)(x);
      ASSERT_EQ(got.nbytes(), want.nbytes());
      EXPECT_EQ(std::memcmp(got.data(), want.data(), static_cast<size_t>(want.nbytes())), 0)
          << name << " of " << x.aval().str() << ": jit " << got.astype(float64).to_vector<double>().back()
          << " eager " << want.astype(float64).to_vector<double>().back();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllOps, OpInfoJitTest, ::testing::ValuesIn(AllOpInfoNames()),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

}  // namespace
}  // namespace jx::opinfo::jit_test

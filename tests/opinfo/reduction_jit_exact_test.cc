// Reductions under jit equal eager bit for bit: both run the kernel library's reductions
// (lax/kernels/reduction.h), the CPU backend through its library reduce kernels. Every
// sample of the reduction records (every dtype, axis layout, empty and size-1 dims, NaNs,
// the parallel paths) runs eagerly and under jit with the evaluator fallback forbidden, and
// the result bytes must be identical (NaN payloads and signed zeros included).
#include <cstdlib>
#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include "opinfo.h"

namespace jx::opinfo::reduction_jit_exact_test {
namespace {

class ReductionJitExactTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ReductionJitExactTest, JitEqualsEagerBitForBit) {
  const OpInfo& info = FindOpInfo(GetParam());
  const char* old = std::getenv("JX_CPU_FALLBACK");
  const std::string saved = old != nullptr ? old : "";
  setenv("JX_CPU_FALLBACK", "error", 1);
  int ran = 0;
  for (DType d : info.dtypes) {
    for (const Sample& s : SamplesFor(info, d)) {
      const std::string where = StrCat(info.name, " ", s.description);
      std::vector<Array> got;
      try {
        got = jx::jit([&s](const std::vector<Array>& args) { return s.op(args); })(s.args);
      } catch (const std::exception& e) {
        ADD_FAILURE() << where << " jit threw: " << e.what();
        continue;
      }
      const std::vector<Array> want = s.op(s.args);
      ASSERT_EQ(got.size(), want.size()) << where;
      for (size_t k = 0; k < want.size(); ++k) {
        ASSERT_EQ(got[k].aval().str(), want[k].aval().str()) << where;
        const bool same = std::memcmp(got[k].data(), want[k].data(), static_cast<size_t>(want[k].nbytes())) == 0;
        EXPECT_TRUE(same) << where << ": jit and eager differ in their bits";
        if (!same) ExpectArraysClose(got[k], want[k], Tolerance{}, where);  // names the elements
      }
      ++ran;
    }
  }
  if (saved.empty()) {
    unsetenv("JX_CPU_FALLBACK");
  } else {
    setenv("JX_CPU_FALLBACK", saved.c_str(), 1);
  }
  EXPECT_GT(ran, 0);
}

INSTANTIATE_TEST_SUITE_P(Reductions, ReductionJitExactTest,
                         ::testing::Values("reduce_sum", "reduce_prod", "reduce_max", "reduce_min", "reduce_and",
                                           "reduce_or", "argmax", "argmin"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

}  // namespace
}  // namespace jx::opinfo::reduction_jit_exact_test

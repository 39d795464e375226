// The "jit" column of the opinfo suite: every record's samples run through jx::jit (traced,
// lowered, optimized by the CPU pipeline, compiled and run by the CPU backend) and must
// equal eager execution within the record's tolerance, outputs' dtypes and weak types
// included. The column compiles with the reference-evaluator fallback turned into an error
// (JX_CPU_FALLBACK=error), so it also proves every primitive runs native CPU kernels on
// every dtype it is sampled in: no primitive is exempt.
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "opinfo.h"

namespace jx::opinfo {
namespace {

// JX_CPU_FALLBACK=error for the scope (restoring what was there).
class ScopedForbidFallback {
 public:
  ScopedForbidFallback() {
    if (const char* v = std::getenv("JX_CPU_FALLBACK")) old_ = v;
    setenv("JX_CPU_FALLBACK", "error", 1);
  }
  ~ScopedForbidFallback() {
    if (old_.empty()) {
      unsetenv("JX_CPU_FALLBACK");
    } else {
      setenv("JX_CPU_FALLBACK", old_.c_str(), 1);
    }
  }

 private:
  std::string old_;
};

class OpInfoJitTest : public ::testing::TestWithParam<std::string> {};

TEST_P(OpInfoJitTest, JitMatchesEager) {
  const OpInfo& info = FindOpInfo(GetParam());
  ScopedForbidFallback forbid;
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

INSTANTIATE_TEST_SUITE_P(AllOps, OpInfoJitTest, ::testing::ValuesIn(AllOpInfoNames()),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

}  // namespace
}  // namespace jx::opinfo

// No silent fallback for the gather/scatter, window, sort, cumulative, reduction and linalg families:
// every sample of their opinfo records compiles under jx::jit with JX_CPU_FALLBACK=error (an
// instruction without a native CPU kernel is a compile error) and equals eager execution,
// exactly where jit runs eager's kernel (lax/kernels/) for the op.
#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "opinfo.h"

namespace jx::opinfo::jit_native_kernels_test {
namespace {

const std::vector<std::string>& NativeFamilyOps() {
  static const std::vector<std::string> ops = {
      "gather", "scatter", "scatter_add", "slice",
      "reduce_window_sum", "reduce_window_max", "reduce_window_min", "sort", "top_k",
      "cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp",
      "reduce_sum", "reduce_prod", "reduce_max", "reduce_min", "reduce_and", "reduce_or", "argmax", "argmin",
      "cholesky", "triangular_solve", "lu", "qr", "eigh", "svd"};
  return ops;
}

// Ops whose compiled form is not exactly the eager kernel agree within the record's
// tolerance: plain reductions (the backend's reduce kernels fold in another order),
// cumlogsumexp (its log-add-exp reducer, in f64), and cumsum/cumprod below f64 (lowered as an
// f64 scan between converts, which compensates f32 sums where eager's are a plain f64 fold,
// and rounds f64 -> f16 once where eager rounds through f32). Everything else here runs
// eager's kernel and must match bit for bit.
bool SharesEagerKernel(const std::string& op, DType d) {
  if (op == "reduce_sum" || op == "reduce_prod" || op == "cumlogsumexp") return false;
  const bool narrow = d == float16 || d == bfloat16 || (op == "cumsum" && d == float32);
  return !((op == "cumsum" || op == "cumprod") && narrow);
}

class NativeKernelsJitTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const char* old = std::getenv("JX_CPU_FALLBACK");
    had_old_ = old != nullptr;
    if (had_old_) old_ = old;
    setenv("JX_CPU_FALLBACK", "error", 1);
  }
  void TearDown() override {
    if (had_old_) {
      setenv("JX_CPU_FALLBACK", old_.c_str(), 1);
    } else {
      unsetenv("JX_CPU_FALLBACK");
    }
  }

 private:
  bool had_old_ = false;
  std::string old_;
};

TEST_P(NativeKernelsJitTest, CompilesWithoutFallbackAndMatchesEager) {
  const OpInfo& info = FindOpInfo(GetParam());
  int ran = 0;
  for (DType d : info.dtypes) {
    for (const Sample& s : SamplesFor(info, d)) {
      const std::string where = StrCat(info.name, " ", s.description);
      auto jitted = jx::jit([&s](const std::vector<Array>& args) { return s.op(args); });
      std::vector<Array> got;
      try {
        got = jitted(s.args);
      } catch (const std::exception& e) {
        ADD_FAILURE() << where << ": " << e.what();
        continue;
      }
      const std::vector<Array> want = s.op(s.args);
      ASSERT_EQ(got.size(), want.size()) << where;
      for (size_t k = 0; k < want.size(); ++k) {
        const Tolerance tol = SharesEagerKernel(info.name, d) ? Tolerance{} : info.tolerance(want[k].dtype());
        ExpectArraysClose(got[k], want[k], tol, StrCat(where, " output ", k));
      }
      ++ran;
    }
  }
  EXPECT_GT(ran, 0) << info.name << " has no samples";
}

INSTANTIATE_TEST_SUITE_P(Families, NativeKernelsJitTest, ::testing::ValuesIn(NativeFamilyOps()),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

}  // namespace
}  // namespace jx::opinfo::jit_native_kernels_test

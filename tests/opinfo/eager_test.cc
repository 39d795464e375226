// Column 1 of the opinfo suite: every record's samples, eager on the CPU, against the
// float64 reference.
#include <cmath>
#include <functional>

#include <gtest/gtest.h>

#include "opinfo.h"

namespace jx::opinfo::eager_test {
namespace {

class OpInfoEagerTest : public ::testing::TestWithParam<std::string> {};

void ExpectClose(const Array& got, const RefArray& want, DType out_dtype, const Tolerance& tol,
                 const std::string& where) {
  ASSERT_EQ(got.shape(), want.shape) << where;
  const std::vector<double> g = got.to_vector<double>();
  int reported = 0;
  for (size_t i = 0; i < g.size() && reported < 5; ++i) {
    const double w = want.data[i];
    // The reference is exact in float64; round it to the output dtype before comparing, so
    // the tolerance measures the kernel, not the output format.
    double w_rounded = w;
    if (IsFloating(out_dtype)) {
      // Through a stack slot: an Array per element made allocation most of this column's time.
      alignas(8) unsigned char slot[8];
      StoreFromDouble(out_dtype, slot, 0, w);
      w_rounded = LoadAsDouble(out_dtype, slot, 0);
    }
    const bool both_nan = std::isnan(g[i]) && std::isnan(w_rounded);
    const bool same_inf = std::isinf(g[i]) && g[i] == w_rounded;
    if (both_nan || same_inf) continue;
    const double err = std::fabs(g[i] - w_rounded);
    if (!(err <= tol.atol + tol.rtol * std::fabs(w_rounded))) {
      ADD_FAILURE() << where << ": element " << i << " got " << g[i] << " want " << w << " (rounded " << w_rounded
                    << "), rtol " << tol.rtol << " atol " << tol.atol;
      ++reported;
    }
  }
}

TEST_P(OpInfoEagerTest, MatchesFloat64Reference) {
  const OpInfo& info = FindOpInfo(GetParam());
  for (DType d : info.dtypes) {
    for (Sample& s : SamplesFor(info, d)) {
      const std::string where = StrCat(info.name, " ", s.description);
      std::vector<Array> outs;
      try {
        outs = s.op(s.args);
      } catch (const std::exception& e) {
        ADD_FAILURE() << where << " threw: " << e.what();
        continue;
      }
      std::vector<RefArray> ref_in;
      for (const Array& a : s.args) ref_in.push_back(ToRef(a));
      const std::vector<RefArray> want = s.reference(ref_in);
      ASSERT_EQ(outs.size(), want.size()) << where;
      for (size_t k = 0; k < outs.size(); ++k) {
        if (k < s.out_dtypes.size()) {
          EXPECT_EQ(outs[k].dtype(), s.out_dtypes[k]) << where << " output " << k;
        }
        ExpectClose(outs[k], want[k], outs[k].dtype(), info.tolerance(outs[k].dtype()), StrCat(where, " output ", k));
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllOps, OpInfoEagerTest, ::testing::ValuesIn(AllOpInfoNames()),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

}  // namespace
}  // namespace jx::opinfo::eager_test

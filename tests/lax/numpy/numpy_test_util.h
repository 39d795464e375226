// Helpers shared by the jnp tests.
#pragma once

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include <jx/jx.h>

namespace jx::numpy_test {

// got's values (read as doubles) equal want's within tol; a NaN in want expects a NaN.
inline void ExpectClose(const Array& got, const std::vector<double>& want, double tol = 1e-6) {
  const std::vector<double> g = got.to_vector<double>();
  ASSERT_EQ(g.size(), want.size());
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(g[i])) << "element " << i << " = " << g[i];
    } else {
      EXPECT_NEAR(g[i], want[i], tol) << "element " << i;
    }
  }
}

}  // namespace jx::numpy_test

#include "jx/nn/functions.h"

#include <gtest/gtest.h>

#include "jx/jx.h"

namespace jx::nn {
namespace {

namespace jnp = jx::numpy;

TEST(NnFunctionsTest, ReluZeroesNegatives) {
  Array y = relu(jnp::array({-1.f, 0.f, 2.f}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{0.f, 0.f, 2.f}));
}

}  // namespace
}  // namespace jx::nn

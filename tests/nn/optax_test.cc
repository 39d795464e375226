#include "jx/nn/optax/optax.h"

#include <gtest/gtest.h>

#include "jx/jx.h"

namespace jx::optax {
namespace {

namespace jnp = jx::numpy;

TEST(OptaxTest, AdamFirstStepIsMinusLearningRateTimesSign) {
  std::vector<Array> params{jnp::array({1.f, -2.f})};
  auto opt = adam(0.1);
  OptState state = opt.init(params);
  auto [updates, new_state] = opt.update(std::vector<Array>{jnp::array({0.5f, -1.f})}, state, params);
  std::vector<float> u = updates[0].to_vector<float>();
  EXPECT_NEAR(u[0], -0.1f, 1e-6);
  EXPECT_NEAR(u[1], 0.1f, 1e-6);
}

}  // namespace
}  // namespace jx::optax

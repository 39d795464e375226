// optimization_barrier (transforms/optimization_barrier.h) and the barrier a rematerialization
// keeps once compiled: without it, CSE merges the backward pass's recomputation with the
// forward pass and remat saves nothing.
#include "jx/transforms/optimization_barrier.h"

#include <string>

#include <gtest/gtest.h>
#include <jx/jx.h>

namespace jx::optimization_barrier_test {
namespace {

namespace jnp = jx::numpy;

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(OptimizationBarrierTest, IsTheIdentityUnderEveryTransform) {
  lax::RegisterAll();
  const Array x = jnp::array({1.0, 2.0, 3.0});
  const Array y = jnp::array({4.0f, 5.0f});
  auto f = [](const Array& a, const Array& b) {
    const Arrays out = OptimizationBarrier({a, b});
    return jnp::sum(jnp::sin(out[0])) + jnp::sum(out[1] * out[1]).astype(float64);
  };
  EXPECT_DOUBLE_EQ(f(x, y).item<double>(), jit(f)(x, y).item<double>());
  const Array g = grad(f)(x, y);
  EXPECT_EQ(g.to_vector<double>(), jnp::cos(x).to_vector<double>());
  check_grads([&](const Array& a) { return f(a, y); }, std::tuple{x}, /*order=*/2);
  const Array batched = vmap([](const Array& a) { return OptimizationBarrier({a})[0] * 2.0; })(jnp::ones({3, 2}));
  EXPECT_EQ(batched.shape(), (Shape{3, 2}));
  EXPECT_NE(make_jaxpr(f)(x, y).ToString().find("optimization_barrier"), std::string::npos);
  EXPECT_NE(jit(f).lower(x, y).as_text().find("opt-barrier"), std::string::npos);
}

// value_and_grad of a checkpointed sin(sin(x)): the compiled program computes the inner sin
// twice (the forward pass and the recomputation behind the opt-barrier); without remat, once.
TEST(OptimizationBarrierTest, CompiledRematerializationIsNotMergedWithTheForwardPass) {
  lax::RegisterAll();
  const Array x = jnp::linspace(0.0, 1.0, 8);
  auto block = [](const Array& a) { return jnp::sin(jnp::sin(a)); };
  auto remat = jit(value_and_grad([&](const Array& a) { return jnp::sum(checkpoint(block)(a)); }));
  auto plain = jit(value_and_grad([&](const Array& a) { return jnp::sum(block(a)); }));
  const std::string remat_hlo = remat.lower(x).compile().as_text();
  const std::string plain_hlo = plain.lower(x).compile().as_text();
  EXPECT_NE(remat_hlo.find("opt-barrier"), std::string::npos) << remat_hlo;
  // The recomputation needs the inner sin only (the cotangent of the outer reads cos(sin(x))).
  EXPECT_EQ(Count(remat_hlo, " sine("), Count(plain_hlo, " sine(") + 1) << remat_hlo << "\n" << plain_hlo;
  EXPECT_EQ(remat(x).second.to_vector<double>(), plain(x).second.to_vector<double>());
}

}  // namespace
}  // namespace jx::optimization_barrier_test

// Printing as JAX prints (issue 13 item 7): a 0-d float array's str() is NumPy's scalar str
// ("4.0", never "4."), reprs keep weak_type=True, and wrapped lines carry no trailing spaces.
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>
#include <jx/jx.h>

namespace jx::printing_fidelity_test {
namespace {

namespace jnp = jx::numpy;

// https://docs.jax.dev/en/latest/automatic-differentiation.html: for
// f = lambda x: x**3 + 2*x**2 - 3*x + 1, print(jax.grad(f)(1.)) prints 4.0, and the second,
// third and fourth derivatives print 10.0, 6.0 and 0.0.
TEST(PrintingFidelity, ZeroDimFloatsPrintAsScalars) {
  auto f = [](const Array& x) { return x * x * x + 2.0f * x * x - 3.0f * x + 1.0f; };
  EXPECT_EQ(grad(f)(Array(1.0f)).str(), "4.0");
  EXPECT_EQ(grad(grad(f))(Array(1.0f)).str(), "10.0");
  EXPECT_EQ(grad(grad(grad(f)))(Array(1.0f)).str(), "6.0");
  EXPECT_EQ(grad(grad(grad(grad(f))))(Array(1.0f)).str(), "0.0");
  EXPECT_EQ(Array::Scalar(4.0, float32).str(), "4.0");
  EXPECT_EQ(Array::Scalar(-0.5, float64).str(), "-0.5");
  EXPECT_EQ(Array::Scalar(1e-5, float32).str(), "1e-05");
  EXPECT_EQ(Array::Scalar(1.5e16, float64).str(), "1.5e+16");
  EXPECT_EQ(Array::Scalar(1e4, float32).str(), "10000.0");
  EXPECT_EQ(Array::Scalar(0.0, bfloat16).str(), "0.0");
  // A 1-element array keeps NumPy's array style.
  EXPECT_EQ(jnp::array(std::vector<float>{4}).str(), "[4.]");
}

// jnp.array(4.) * 1 keeps the weak type JAX reports: Array(4., dtype=float32, weak_type=True).
TEST(PrintingFidelity, ReprShowsWeakType) {
  EXPECT_EQ(Array(4.0f).repr(), "Array(4., dtype=float32, weak_type=True)");
  EXPECT_EQ(Array::Scalar(4.0, float32).repr(), "Array(4., dtype=float32)");
}

// print(tree) in Python shows containers with their leaves' reprs, e.g. the JAX pytrees
// tutorial's print of a params dict (https://docs.jax.dev/en/latest/pytrees.html).
TEST(PrintingFidelity, PytreesPrintWithTheirValues) {
  std::map<std::string, Array> params{{"b", jnp::zeros({2})}, {"w", Array(1.0f)}};
  EXPECT_EQ(tree::str(params),
            "{'b': Array([0., 0.], dtype=float32), 'w': Array(1., dtype=float32, weak_type=True)}");
  std::tuple<Array, std::vector<Array>> t{Array::Scalar(3, int32), {jnp::arange(2), jnp::arange(1)}};
  EXPECT_EQ(tree::str(t), "(Array(3, dtype=int32), [Array([0, 1], dtype=int32), Array([0], dtype=int32)])");
  EXPECT_EQ(tree::str(std::tuple<Array>{Array::Scalar(2.5, float32)}), "(Array(2.5, dtype=float32),)");
}

TEST(PrintingFidelity, WrappedArraysHaveNoTrailingSpaces) {
  std::vector<float> v(40);
  for (int i = 0; i < 40; ++i) v[i] = static_cast<float>(i) + 0.5f;
  const std::string s = jnp::array(v).str();
  ASSERT_NE(s.find('\n'), std::string::npos);
  size_t pos = 0;
  while ((pos = s.find('\n', pos)) != std::string::npos) {
    EXPECT_NE(s[pos - 1], ' ') << s;
    ++pos;
  }
}

}  // namespace
}  // namespace jx::printing_fidelity_test

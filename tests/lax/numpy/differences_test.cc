// jnp.diff and jnp.cross against the examples of NumPy's docs
// (numpy.org/doc/stable/reference/generated/numpy.diff.html, numpy.cross.html), their
// gradients against finite differences, and jit/vmap.
#include <vector>

#include <gtest/gtest.h>

#include <jx/jx.h>

namespace jx::differences_test {
namespace {

namespace jnp = jx::numpy;
using I32 = std::vector<int32_t>;

TEST(DiffTest, NumpyDocsExamples) {
  Array x = jnp::array({1, 2, 4, 7, 0});
  EXPECT_EQ(jnp::diff(x).to_vector<int32_t>(), (I32{1, 2, 3, -7}));
  EXPECT_EQ(jnp::diff(x, 2).to_vector<int32_t>(), (I32{1, 1, -10}));
  Array m = jnp::array({{1, 3, 6, 10}, {0, 5, 6, 8}});
  Array d1 = jnp::diff(m);
  EXPECT_EQ(d1.shape(), (Shape{2, 3}));
  EXPECT_EQ(d1.to_vector<int32_t>(), (I32{2, 3, 4, 5, 1, 2}));
  Array d0 = jnp::diff(m, 1, 0);
  EXPECT_EQ(d0.shape(), (Shape{1, 4}));
  EXPECT_EQ(d0.to_vector<int32_t>(), (I32{-1, 2, 0, -2}));
  // Boolean arrays use not_equal: np.diff([True, False, False]) == [True, False].
  EXPECT_EQ(jnp::diff(jnp::array({true, false, false})).to_vector<bool>(), (std::vector<bool>{true, false}));
}

TEST(DiffTest, PrependAppendAndOrders) {
  Array x = jnp::array({1, 2, 4, 7});
  // diff(cumsum(x), prepend=0) recovers x.
  EXPECT_EQ(jnp::diff(jnp::cumsum(x), 1, -1, 0).to_vector<int32_t>(), (I32{1, 2, 4, 7}));
  EXPECT_EQ(jnp::diff(x, 1, -1, std::nullopt, 10).to_vector<int32_t>(), (I32{1, 2, 3, 3}));
  Array m = jnp::array({{1, 3}, {0, 5}});
  Array p = jnp::diff(m, 1, 0, jnp::array({{1, 1}}));
  EXPECT_EQ(p.to_vector<int32_t>(), (I32{0, 2, -1, 2}));
  EXPECT_EQ(jnp::diff(x, 0).to_vector<int32_t>(), (I32{1, 2, 4, 7}));
  EXPECT_EQ(jnp::diff(x, 5).shape(), Shape{0});
  EXPECT_THROW(jnp::diff(x, -1), ValueError);
  EXPECT_THROW(jnp::diff(jnp::array(1.f)), ValueError);
}

TEST(DiffTest, GradsJitAndVmap) {
  Array x = jnp::array({0.3, -1.2, 2.5, 0.7, 1.1});
  jx::check_grads([](const Array& x) { return jnp::diff(x, 2, -1, 1.0); }, std::tuple{x}, 2);
  Array m = jnp::arange(12.0, std::optional<DType>(float32)).reshape({3, 4});
  Array want = jnp::diff(m, 1, 1);
  EXPECT_TRUE(jnp::array_equal(jx::jit([](const Array& m) { return jnp::diff(m); })(m), want));
  EXPECT_TRUE(jnp::array_equal(jx::vmap([](const Array& r) { return jnp::diff(r); })(m), want));
}

TEST(CrossTest, NumpyDocsExamples) {
  EXPECT_EQ(jnp::cross(jnp::array({1, 2, 3}), jnp::array({4, 5, 6})).to_vector<int32_t>(), (I32{-3, 6, -3}));
  // One vector with dimension 2 (z = 0).
  EXPECT_EQ(jnp::cross(jnp::array({1, 2}), jnp::array({4, 5, 6})).to_vector<int32_t>(), (I32{12, -6, -3}));
  EXPECT_EQ(jnp::cross(jnp::array({1, 2, 0}), jnp::array({4, 5, 6})).to_vector<int32_t>(), (I32{12, -6, -3}));
  // Both with dimension 2: the z component, a 0-d array.
  Array z = jnp::cross(jnp::array({1, 2}), jnp::array({4, 5}));
  EXPECT_EQ(z.shape(), Shape{});
  EXPECT_EQ(z.item<int32_t>(), -3);
  Array x = jnp::array({{1, 2, 3}, {4, 5, 6}});
  Array y = jnp::array({{4, 5, 6}, {1, 2, 3}});
  EXPECT_EQ(jnp::cross(x, y).to_vector<int32_t>(), (I32{-3, 6, -3, 3, -6, 3}));
  Array c0 = jnp::cross(x, y, {.axisc = 0});
  EXPECT_EQ(c0.shape(), (Shape{3, 2}));
  EXPECT_EQ(c0.to_vector<int32_t>(), (I32{-3, 3, 6, -6, -3, 3}));
  Array x3 = jnp::array({{1, 2, 3}, {4, 5, 6}, {7, 8, 9}});
  Array y3 = jnp::array({{7, 8, 9}, {4, 5, 6}, {1, 2, 3}});
  EXPECT_EQ(jnp::cross(x3, y3).to_vector<int32_t>(), (I32{-6, 12, -6, 0, 0, 0, 6, -12, 6}));
  EXPECT_EQ(jnp::cross(x3, y3, {.axisa = 0, .axisb = 0}).to_vector<int32_t>(),
            (I32{-24, 48, -24, -30, 60, -30, -36, 72, -36}));
  EXPECT_EQ(jnp::cross(x3, y3, {.axis = 0}).to_vector<int32_t>(), (I32{-24, -30, -36, 48, 60, 72, -24, -30, -36}));
}

TEST(CrossTest, GradsVmapAndErrors) {
  Array a = jnp::array({{0.5, -1.0, 2.0}, {1.5, 0.25, -0.75}});
  Array b = jnp::array({1.0, 3.0, -2.0});
  jx::check_grads([](const Array& a, const Array& b) { return jnp::cross(a, b); }, std::tuple{a, b}, 2);
  jx::check_grads([](const Array& a, const Array& b) { return jnp::cross(a, b); },
                  std::tuple{jnp::array({0.5, 2.0}), b}, 1);
  auto f = [](const Array& a, const Array& b) { return jnp::cross(a, b); };
  EXPECT_TRUE(jnp::allclose(jx::vmap(f, jx::in_axes{0, jx::none})(a, b), jnp::cross(a, b)));
  EXPECT_TRUE(jnp::allclose(jx::jit(f)(a, b), jnp::cross(a, b)));
  EXPECT_THROW(jnp::cross(jnp::zeros({4}), jnp::zeros({3})), ValueError);
}

}  // namespace
}  // namespace jx::differences_test

// jnp.unique against the examples of NumPy's docs
// (numpy.org/doc/stable/reference/generated/numpy.unique.html) and jnp.unique's `size`
// semantics (docs.jax.dev/en/latest/_autosummary/jax.numpy.unique.html) under jit and vmap.
#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include <jx/jx.h>

namespace jx::sets_test {
namespace {

namespace jnp = jx::numpy;
using I32 = std::vector<int32_t>;

TEST(UniqueTest, NumpyDocsExamples) {
  EXPECT_EQ(jnp::unique(jnp::array({1, 1, 2, 2, 3, 3})).to_vector<int32_t>(), (I32{1, 2, 3}));
  EXPECT_EQ(jnp::unique(jnp::array({{1, 1}, {2, 3}})).to_vector<int32_t>(), (I32{1, 2, 3}));
  // return_index (the docs use ['a', 'b', 'b', 'c', 'a']; the same with ints).
  jnp::UniqueResult r = jnp::unique(jnp::array({1, 2, 2, 3, 1}), {.return_index = true});
  EXPECT_EQ(r.values.to_vector<int32_t>(), (I32{1, 2, 3}));
  ASSERT_TRUE(r.indices);
  EXPECT_EQ(r.indices->to_vector<int32_t>(), (I32{0, 1, 3}));
  EXPECT_FALSE(r.inverse);
  EXPECT_FALSE(r.counts);
  Array a = jnp::array({1, 2, 6, 4, 2, 3, 2});
  r = jnp::unique(a, {.return_inverse = true});
  EXPECT_EQ(r.values.to_vector<int32_t>(), (I32{1, 2, 3, 4, 6}));
  EXPECT_EQ(r.inverse->to_vector<int32_t>(), (I32{0, 1, 4, 3, 1, 2, 1}));
  EXPECT_EQ(r.values[*r.inverse].to_vector<int32_t>(), a.to_vector<int32_t>());
  r = jnp::unique(a, {.return_counts = true});
  EXPECT_EQ(r.counts->to_vector<int32_t>(), (I32{1, 3, 1, 1, 1}));
  // The inverse has the input's shape (NumPy 2), so values[inverse] rebuilds it.
  Array m = jnp::array({{3, 1}, {1, 2}});
  r = jnp::unique(m, {.return_inverse = true});
  EXPECT_EQ(r.inverse->shape(), (Shape{2, 2}));
  EXPECT_EQ(r.values[*r.inverse].to_vector<int32_t>(), m.to_vector<int32_t>());
}

TEST(UniqueTest, NansAndEmpty) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Array x = jnp::array({nan, 1.f, nan, 0.f});
  std::vector<float> v = jnp::unique(x).to_vector<float>();
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0], 0.f);
  EXPECT_EQ(v[1], 1.f);
  EXPECT_TRUE(std::isnan(v[2]));
  EXPECT_EQ(jnp::unique(x, {.equal_nan = false}).values.size(), 4);
  EXPECT_EQ(jnp::unique(jnp::zeros({0})).shape(), Shape{0});
  EXPECT_THROW(jnp::unique(jnp::zeros({0}), {.size = 2}), ValueError);
  EXPECT_EQ(jnp::unique(jnp::zeros({0}), {.size = 2, .fill_value = 7}).values.to_vector<float>(),
            (std::vector<float>{7.f, 7.f}));
}

TEST(UniqueTest, SizeUnderJitAndVmap) {
  Array a = jnp::array({3, 1, 3, 3, 2});
  // size larger than the count: filled with the minimum (default) or fill_value; counts 0;
  // indices of filled entries point at the minimum's.
  auto f = jx::jit([](const Array& x) {
    jnp::UniqueResult r = jnp::unique(x, {.return_index = true, .return_inverse = true, .return_counts = true, .size = 5});
    return std::tuple{r.values, *r.indices, *r.inverse, *r.counts};
  });
  auto [values, indices, inverse, counts] = f(a);
  EXPECT_EQ(values.to_vector<int32_t>(), (I32{1, 2, 3, 1, 1}));
  EXPECT_EQ(indices.to_vector<int32_t>(), (I32{1, 4, 0, 1, 1}));
  EXPECT_EQ(inverse.to_vector<int32_t>(), (I32{2, 0, 2, 2, 1}));
  EXPECT_EQ(counts.to_vector<int32_t>(), (I32{1, 1, 3, 0, 0}));
  auto g = jx::jit([](const Array& x) { return jnp::unique(x, {.size = 4, .fill_value = -1}).values; });
  EXPECT_EQ(g(a).to_vector<int32_t>(), (I32{1, 2, 3, -1}));
  // size smaller than the count: the first `size` values, their counts exact.
  jnp::UniqueResult r = jnp::unique(a, {.return_counts = true, .size = 2});
  EXPECT_EQ(r.values.to_vector<int32_t>(), (I32{1, 2}));
  EXPECT_EQ(r.counts->to_vector<int32_t>(), (I32{1, 1}));
  auto h = jx::vmap([](const Array& row) { return jnp::unique(row, {.size = 3, .fill_value = 0}).values; });
  EXPECT_EQ(h(jnp::array({{2, 2, 1}, {5, 4, 6}})).to_vector<int32_t>(), (I32{1, 2, 0, 4, 5, 6}));
  auto bad = jx::jit([](const Array& x) { return jnp::unique(x); });
  EXPECT_THROW(bad(a), ConcretizationError);
}

TEST(UniqueTest, ArrayApiForms) {
  // jnp.unique_all / unique_counts / unique_inverse / unique_values: NaNs stay distinct.
  Array a = jnp::array({1.f, 2.f, 6.f, 4.f, 2.f, 3.f, 2.f});
  jnp::UniqueAllResult all = jnp::unique_all(a);
  EXPECT_EQ(all.values.to_vector<float>(), (std::vector<float>{1, 2, 3, 4, 6}));
  EXPECT_EQ(all.indices.to_vector<int32_t>(), (I32{0, 1, 5, 3, 2}));
  EXPECT_EQ(all.inverse_indices.to_vector<int32_t>(), (I32{0, 1, 4, 3, 1, 2, 1}));
  EXPECT_EQ(all.counts.to_vector<int32_t>(), (I32{1, 3, 1, 1, 1}));
  auto [values, counts] = jnp::unique_counts(a);
  EXPECT_EQ(counts.to_vector<int32_t>(), (I32{1, 3, 1, 1, 1}));
  auto [v2, inverse] = jnp::unique_inverse(a);
  EXPECT_EQ(v2[inverse].to_vector<float>(), a.to_vector<float>());
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(jnp::unique_values(jnp::array({nan, 1.f, nan})).size(), 3);
  EXPECT_EQ(jnp::unique_values(a, 6, -1.0).to_vector<float>(), (std::vector<float>{1, 2, 3, 4, 6, -1}));
}

}  // namespace
}  // namespace jx::sets_test

// jnp.searchsorted, nonzero, argwhere, flatnonzero against the examples of NumPy's docs
// (numpy.org/doc/stable/reference/generated/numpy.<name>.html) and jnp.nonzero's `size`
// examples (docs.jax.dev/en/latest/_autosummary/jax.numpy.nonzero.html), under jit and vmap.
#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include <jx/jx.h>

namespace jx::searching_test {
namespace {

namespace jnp = jx::numpy;
using I32 = std::vector<int32_t>;

TEST(SearchsortedTest, NumpyDocsExamples) {
  Array a = jnp::array({11, 12, 13, 14, 15});
  EXPECT_EQ(jnp::searchsorted(a, 13).item<int32_t>(), 2);
  EXPECT_EQ(jnp::searchsorted(a, 13, "right").item<int32_t>(), 3);
  Array r = jnp::searchsorted(a, jnp::array({-10, 20, 12, 13}));
  EXPECT_EQ(r.dtype(), int32);
  EXPECT_EQ(r.to_vector<int32_t>(), (I32{0, 5, 1, 2}));
  // sorter: a = [40, 10, 20, 30], sorter = argsort(a); searchsorted(a, 25, sorter=sorter) == 2.
  Array u = jnp::array({40, 10, 20, 30});
  EXPECT_EQ(jnp::searchsorted(u, 25, "left", jnp::argsort(u)).item<int32_t>(), 2);
}

TEST(SearchsortedTest, MatchesLinearScanOnEveryLengthAndSide) {
  // Lengths around powers of two, duplicates, and queries below, between, on and above.
  for (int n : {1, 2, 3, 4, 5, 7, 8, 9, 16, 17}) {
    std::vector<float> a;
    for (int i = 0; i < n; ++i) a.push_back(static_cast<float>(i / 2));  // 0 0 1 1 2 ...
    std::vector<float> q;
    for (float v = -1.f; v <= n / 2.f + 1.f; v += 0.5f) q.push_back(v);
    for (const char* side : {"left", "right"}) {
      const I32 got = jnp::searchsorted(jnp::array(a), jnp::array(q), side).to_vector<int32_t>();
      for (size_t j = 0; j < q.size(); ++j) {
        int32_t want = 0;
        for (float x : a) want += std::string_view(side) == "left" ? (x < q[j]) : (x <= q[j]);
        EXPECT_EQ(got[j], want) << "n=" << n << " side=" << side << " v=" << q[j];
      }
    }
  }
}

TEST(SearchsortedTest, NansSortLastAndTypesPromote) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Array a = jnp::array({1.f, 2.f, nan});
  EXPECT_EQ(jnp::searchsorted(a, jnp::array({nan, 3.f, 0.5f})).to_vector<int32_t>(), (I32{2, 2, 0}));
  EXPECT_EQ(jnp::searchsorted(a, nan, "right").item<int32_t>(), 3);
  // int array, float query: compared as floats.
  EXPECT_EQ(jnp::searchsorted(jnp::array({1, 2, 3}), 2.5).item<int32_t>(), 2);
  EXPECT_EQ(jnp::searchsorted(jnp::zeros({0}), jnp::array({1.f, 2.f})).to_vector<int32_t>(), (I32{0, 0}));
}

TEST(SearchsortedTest, JitAndVmap) {
  Array a = jnp::array({0.f, 1.f, 2.f, 3.f});
  auto f = [](const Array& a, const Array& v) { return jnp::searchsorted(a, v, "right"); };
  Array v = jnp::array({{0.5f, 3.f}, {-1.f, 1.f}});
  EXPECT_EQ(jx::jit(f)(a, v).to_vector<int32_t>(), (I32{1, 4, 0, 2}));
  EXPECT_EQ(jx::vmap(f, jx::in_axes{jx::none, 0})(a, v).to_vector<int32_t>(), (I32{1, 4, 0, 2}));
  // A batch of sorted arrays too.
  Array as = jnp::array({{0.f, 1.f, 2.f}, {10.f, 20.f, 30.f}});
  EXPECT_EQ(jx::vmap(f)(as, jnp::array({1.5f, 25.f})).to_vector<int32_t>(), (I32{2, 2}));
}

TEST(SearchsortedTest, BadArguments) {
  EXPECT_THROW(jnp::searchsorted(jnp::zeros({2, 2}), 1.0), ValueError);
  EXPECT_THROW(jnp::searchsorted(jnp::zeros({2}), 1.0, "middle"), ValueError);
}

TEST(NonzeroTest, NumpyDocsExamples) {
  Array x = jnp::array({{3, 0, 0}, {0, 4, 0}, {5, 6, 0}});
  std::vector<Array> nz = jnp::nonzero(x);
  ASSERT_EQ(nz.size(), 2u);
  EXPECT_EQ(nz[0].dtype(), int32);
  EXPECT_EQ(nz[0].to_vector<int32_t>(), (I32{0, 1, 2, 2}));
  EXPECT_EQ(nz[1].to_vector<int32_t>(), (I32{0, 1, 0, 1}));
  Array a = jnp::array({{1, 2, 3}, {4, 5, 6}, {7, 8, 9}});
  nz = jnp::nonzero(a > 3);
  EXPECT_EQ(nz[0].to_vector<int32_t>(), (I32{1, 1, 1, 2, 2, 2}));
  EXPECT_EQ(nz[1].to_vector<int32_t>(), (I32{0, 1, 2, 0, 1, 2}));
  // numpy.argwhere: x = arange(6).reshape(2, 3); argwhere(x > 1).
  Array w = jnp::argwhere(jnp::arange(6).reshape({2, 3}) > 1);
  EXPECT_EQ(w.shape(), (Shape{4, 2}));
  EXPECT_EQ(w.to_vector<int32_t>(), (I32{0, 2, 1, 0, 1, 1, 1, 2}));
  // numpy.flatnonzero: x = arange(-2, 3).
  EXPECT_EQ(jnp::flatnonzero(jnp::arange(-2, 3)).to_vector<int32_t>(), (I32{0, 1, 3, 4}));
  EXPECT_EQ(jnp::nonzero(jnp::zeros({3}))[0].shape(), Shape{0});
}

TEST(NonzeroTest, JaxSizeExamplesUnderJit) {
  // jax.numpy.nonzero docs: x = [0, 5, 0, 6, 0, 7].
  Array x = jnp::array({0, 5, 0, 6, 0, 7});
  EXPECT_EQ(jnp::nonzero(x, 2)[0].to_vector<int32_t>(), (I32{1, 3}));
  EXPECT_EQ(jnp::nonzero(x, 5)[0].to_vector<int32_t>(), (I32{1, 3, 5, 0, 0}));
  EXPECT_EQ(jnp::nonzero(x, 5, 6)[0].to_vector<int32_t>(), (I32{1, 3, 5, 6, 6}));
  auto f = jx::jit([](const Array& x) { return jnp::flatnonzero(x, 5, -1); });
  EXPECT_EQ(f(x).to_vector<int32_t>(), (I32{1, 3, 5, -1, -1}));
  auto g = jx::jit([](const Array& x) { return jnp::argwhere(x, 3, -1); });
  Array m = jnp::array({{0.f, 1.f}, {2.f, 0.f}});
  EXPECT_EQ(g(m).to_vector<int32_t>(), (I32{0, 1, 1, 0, -1, -1}));
  // vmap with a size: each row's indices.
  auto h = jx::vmap([](const Array& r) { return jnp::flatnonzero(r, 2, 9); });
  EXPECT_EQ(h(m).to_vector<int32_t>(), (I32{1, 9, 0, 9}));
}

TEST(NonzeroTest, TracedWithoutSizeIsAConcretizationError) {
  auto f = jx::jit([](const Array& x) { return jnp::flatnonzero(x); });
  try {
    f(jnp::array({1, 0, 2}));
    FAIL() << "expected ConcretizationError";
  } catch (const ConcretizationError& e) {
    EXPECT_NE(std::string(e.what()).find("size argument of jnp.nonzero must be statically specified"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(jnp::nonzero(jnp::array(3)), ValueError);
  auto v = jx::vmap([](const Array& x) { return jnp::flatnonzero(x); });
  EXPECT_THROW(v(jnp::ones({2, 3})), ConcretizationError);
}

TEST(NonzeroTest, GradReadsTheConcretePrimal) {
  // Under grad (no jit) the values are known, as with JAX's to_concrete_value: no size needed.
  Array x = jnp::array({1.5, -2.0, 0.5, -0.1});
  Array g = jx::grad([](const Array& x) { return jnp::sum(jnp::take(x, jnp::flatnonzero(x > 0.0))); })(x);
  EXPECT_EQ(g.to_vector<double>(), (std::vector<double>{1.0, 0.0, 1.0, 0.0}));
  Array gu = jx::grad([](const Array& x) { return jnp::sum(jnp::unique(x)); })(jnp::array({2.0, 1.0, 2.0}));
  EXPECT_EQ(gu.to_vector<double>(), (std::vector<double>{1.0, 1.0, 0.0}));  // first occurrences
}

}  // namespace
}  // namespace jx::searching_test

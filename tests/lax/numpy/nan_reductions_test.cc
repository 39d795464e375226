// The jnp nan* reductions against the examples of NumPy's docs
// (numpy.org/doc/stable/reference/generated/numpy.nan<name>.html), JAX's all-NaN results,
// gradients (NaN entries get zero), jit and vmap.
#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include <jx/jx.h>

#include "tests/lax/numpy/numpy_test_util.h"

namespace jx::nan_reductions_test {
namespace {

namespace jnp = jx::numpy;
using I32 = std::vector<int32_t>;
const double kNaN = std::numeric_limits<double>::quiet_NaN();

using numpy_test::ExpectClose;

TEST(NanReductionsTest, NumpyDocsExamples) {
  ExpectClose(jnp::nansum(jnp::array({1.0, kNaN})), {1.0});
  Array s = jnp::array({{1.0, 1.0}, {1.0, kNaN}});
  ExpectClose(jnp::nansum(s), {3.0});
  ExpectClose(jnp::nansum(s, 0), {2.0, 1.0});
  ExpectClose(jnp::nanprod(jnp::array({1.0, kNaN})), {1.0});
  Array p = jnp::array({{1.0, 2.0}, {3.0, kNaN}});
  ExpectClose(jnp::nanprod(p), {6.0});
  ExpectClose(jnp::nanprod(p, 0), {3.0, 2.0});
  ExpectClose(jnp::nanmax(p), {3.0});
  ExpectClose(jnp::nanmax(p, 0), {3.0, 2.0});
  ExpectClose(jnp::nanmax(p, 1), {2.0, 3.0});
  ExpectClose(jnp::nanmin(p), {1.0});
  ExpectClose(jnp::nanmin(p, 0), {1.0, 2.0});
  ExpectClose(jnp::nanmin(p, 1), {1.0, 3.0});
  Array m = jnp::array({{1.0, kNaN}, {3.0, 4.0}});
  ExpectClose(jnp::nanmean(m), {2.6666666666666665}, 1e-15);
  ExpectClose(jnp::nanmean(m, 0), {2.0, 4.0});
  ExpectClose(jnp::nanmean(m, 1), {1.0, 3.5});
  ExpectClose(jnp::nanvar(m), {1.5555555555555554}, 1e-15);
  ExpectClose(jnp::nanvar(m, 0), {1.0, 0.0});
  ExpectClose(jnp::nanvar(m, 1), {0.0, 0.25});
  ExpectClose(jnp::nanstd(m), {1.247219128924647}, 1e-15);
  ExpectClose(jnp::nanstd(m, 0), {1.0, 0.0});
  ExpectClose(jnp::nanstd(m, 1), {0.0, 0.5});
  Array g = jnp::array({{kNaN, 4.0}, {2.0, 3.0}});
  EXPECT_EQ(jnp::argmax(g).item<int32_t>(), 0);
  EXPECT_EQ(jnp::nanargmax(g).item<int32_t>(), 1);
  EXPECT_EQ(jnp::nanargmax(g, 0).to_vector<int32_t>(), (I32{1, 0}));
  EXPECT_EQ(jnp::nanargmax(g, 1).to_vector<int32_t>(), (I32{1, 1}));
  EXPECT_EQ(jnp::nanargmin(g).item<int32_t>(), 2);
  EXPECT_EQ(jnp::nanargmin(g, 0).to_vector<int32_t>(), (I32{1, 1}));
  EXPECT_EQ(jnp::nanargmin(g, 1).to_vector<int32_t>(), (I32{1, 0}));
  // numpy.nanmedian / nanquantile: a = [[10, nan, 4], [3, 2, 1]].
  Array q = jnp::array({{10.0, kNaN, 4.0}, {3.0, 2.0, 1.0}});
  ExpectClose(jnp::median(q), {kNaN});
  ExpectClose(jnp::nanmedian(q), {3.0});
  ExpectClose(jnp::nanmedian(q, 0), {6.5, 2.0, 2.5});
  ExpectClose(jnp::nanmedian(q, 1), {7.0, 2.0});
  ExpectClose(jnp::quantile(q, 0.5), {kNaN});
  ExpectClose(jnp::nanquantile(q, 0.5), {3.0});
  ExpectClose(jnp::nanquantile(q, 0.5, 0), {6.5, 2.0, 2.5});
  Array k = jnp::nanquantile(q, 0.5, 1, "linear", true);
  EXPECT_EQ(k.shape(), (Shape{2, 1}));
  ExpectClose(k, {7.0, 2.0});
  ExpectClose(jnp::nanpercentile(q, 50, 1), {7.0, 2.0});
  ExpectClose(jnp::nancumsum(jnp::array({1.0, kNaN, 2.0})), {1.0, 1.0, 3.0});
  ExpectClose(jnp::nancumprod(jnp::array({2.0, kNaN, 3.0})), {2.0, 2.0, 6.0});
}

TEST(NanReductionsTest, AllNanSlicesAndIntegers) {
  Array a = jnp::array({{kNaN, kNaN}, {1.0, kNaN}});
  ExpectClose(jnp::nanmax(a, 1), {kNaN, 1.0});
  ExpectClose(jnp::nanmin(a, 1), {kNaN, 1.0});
  ExpectClose(jnp::nanmean(a, 1), {kNaN, 1.0});
  ExpectClose(jnp::nanvar(a, 1), {kNaN, 0.0});
  ExpectClose(jnp::nanvar(a, 1, false, /*ddof=*/1), {kNaN, kNaN});
  ExpectClose(jnp::nanmedian(a, 1), {kNaN, 1.0});
  EXPECT_EQ(jnp::nanargmax(a, 1).to_vector<int32_t>(), (I32{-1, 0}));  // JAX: -1, NumPy raises
  EXPECT_EQ(jnp::nanargmin(a, 1).to_vector<int32_t>(), (I32{-1, 0}));
  ExpectClose(jnp::nansum(a, 1), {0.0, 1.0});
  // Integers have no NaNs: the plain reductions, with their dtypes.
  Array i = jnp::array({3, 1, 2});
  EXPECT_EQ(jnp::nansum(i).dtype(), int32);
  EXPECT_EQ(jnp::nanmax(i).item<int32_t>(), 3);
  EXPECT_EQ(jnp::nanmean(i).dtype(), float32);
  EXPECT_EQ(jnp::nanargmin(i).item<int32_t>(), 1);
  EXPECT_EQ(jnp::nanmean(jnp::array({1.f, NAN})).dtype(), float32);
  EXPECT_EQ(jnp::nanvar(jnp::array({1.f, NAN}), {}, true).shape(), Shape{1});
}

TEST(NanReductionsTest, GradientsIgnoreNans) {
  Array x = jnp::array({1.0, kNaN, 2.0, 4.0});
  ExpectClose(jx::grad([](const Array& x) { return jnp::nansum(x); })(x), {1.0, 0.0, 1.0, 1.0});
  ExpectClose(jx::grad([](const Array& x) { return jnp::nanmean(x); })(x), {1 / 3.0, 0.0, 1 / 3.0, 1 / 3.0});
  ExpectClose(jx::grad([](const Array& x) { return jnp::nanmax(x); })(x), {0.0, 0.0, 0.0, 1.0});
  // nanmedian of [1, 2, 4] is 2.
  ExpectClose(jx::grad([](const Array& x) { return jnp::nanmedian(x); })(x), {0.0, 0.0, 1.0, 0.0});
  // Finite differences where no NaN sits (the where branches still run).
  Array y = jnp::array({{0.3, -1.2, 2.5}, {1.1, 0.2, -0.4}});
  jx::check_grads([](const Array& y) { return jnp::nanvar(y, 1); }, std::tuple{y}, 2);
  jx::check_grads([](const Array& y) { return jnp::nanstd(y, 0, false, 1); }, std::tuple{y}, 1);
  jx::check_grads([](const Array& y) { return jnp::nanprod(y, 1); }, std::tuple{y}, 2);
  jx::check_grads([](const Array& y) { return jnp::nanquantile(y, 0.3, 1); }, std::tuple{y}, 1);
}

TEST(NanReductionsTest, JitAndVmap) {
  Array x = jnp::array({{1.0, kNaN, 3.0}, {kNaN, kNaN, 2.0}, {4.0, 5.0, 6.0}});
  auto f = [](const Array& r) { return jnp::nanmean(r); };
  ExpectClose(jx::vmap(f)(x), {2.0, 2.0, 5.0});
  ExpectClose(jx::jit([](const Array& x) { return jnp::nanstd(x, 1); })(x), {1.0, 0.0, std::sqrt(2.0 / 3.0)}, 1e-12);
  ExpectClose(jx::vmap([](const Array& r) { return jnp::nanmedian(r); })(x), {2.0, 2.0, 5.0});
  EXPECT_EQ(jx::vmap([](const Array& r) { return jnp::nanargmax(r); })(x).to_vector<int32_t>(), (I32{2, 2, 2}));
}

}  // namespace
}  // namespace jx::nan_reductions_test

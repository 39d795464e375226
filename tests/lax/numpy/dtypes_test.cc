// Every jnp function family on every dtype (small exact values), plus the usage examples of
// the public headers, run as written.
#include <algorithm>
#include <cmath>
#include <sstream>

#include <gtest/gtest.h>

#include <jx/jx.h>

namespace jx::dtypes_test {
namespace {

namespace jnp = jx::numpy;
namespace lax = jx::lax;

const DType kAll[] = {bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float16, bfloat16, float32, float64};

// 2x3 values 0..3 (0/1 for bool): exact in every dtype.
Array Small(DType d) {
  const std::vector<double> v = {1, 3, 0, 2, 1, 3};
  std::vector<double> w = v;
  if (d == bool_) {
    for (double& x : w) x = x > 1 ? 1 : 0;
  }
  return jnp::array(w, {2, 3}).astype(d);
}

std::vector<double> D(const Array& a) { return a.to_vector<double>(); }

TEST(AllDTypesTest, ElementwiseKeepsDtype) {
  for (DType d : kAll) {
    SCOPED_TRACE(dtype_name(d));
    Array x = Small(d);
    const std::vector<double> v = D(x);
    Array s = jnp::add(x, x);
    EXPECT_EQ(s.dtype(), d);
    for (size_t i = 0; i < v.size(); ++i) EXPECT_EQ(D(s)[i], d == bool_ ? (v[i] != 0) : 2 * v[i]);
    Array m = jnp::multiply(x, x);
    EXPECT_EQ(m.dtype(), d);
    EXPECT_EQ(jnp::maximum(x, x).dtype(), d);
    EXPECT_EQ((x == x).dtype(), bool_);
    EXPECT_EQ(D(x == x), std::vector<double>(6, 1.0));
    EXPECT_EQ(jnp::where(x > 1, x, x).dtype(), d);
    EXPECT_EQ(D(jnp::where(x > 1, x, x)), v);
    if (d != bool_) {
      // A weak C++ int keeps every numeric dtype.
      Array p = x + 1;
      EXPECT_EQ(p.dtype(), d);
      for (size_t i = 0; i < v.size(); ++i) EXPECT_EQ(D(p)[i], v[i] + 1);
      EXPECT_EQ(jnp::floor_divide(x, 2).dtype(), d);
      EXPECT_EQ(jnp::remainder(x, 2).dtype(), d);
      EXPECT_EQ(D(jnp::remainder(x, 2)), (std::vector<double>{1, 1, 0, 0, 1, 1}));
      EXPECT_EQ(D(jnp::floor_divide(x, 2)), (std::vector<double>{0, 1, 0, 1, 0, 1}));
      EXPECT_EQ(jnp::abs(x).dtype(), d);
      EXPECT_EQ(jnp::sign(x).dtype(), d);
      EXPECT_EQ(jnp::power(x, 2).dtype(), d);
      EXPECT_EQ(D(jnp::power(x, 2)), (std::vector<double>{1, 9, 0, 4, 1, 9}));
    }
    // Functions on reals: floats keep their dtype, the rest compute in float32.
    EXPECT_EQ(jnp::sqrt(x).dtype(), IsFloating(d) ? d : float32);
    EXPECT_EQ(jnp::true_divide(x, 1).dtype(), IsFloating(d) ? d : float32);
    EXPECT_EQ(jnp::isfinite(x).dtype(), bool_);
  }
}

TEST(AllDTypesTest, ReductionsAndShapes) {
  for (DType d : kAll) {
    SCOPED_TRACE(dtype_name(d));
    Array x = Small(d);
    const std::vector<double> v = D(x);
    double total = 0;
    for (double e : v) total += e;
    Array s = jnp::sum(x);
    EXPECT_EQ(s.item<double>(), total);
    EXPECT_EQ(jnp::sum(x).dtype(), jnp::promote_integers_dtype(d));
    EXPECT_EQ(jnp::max(x).item<double>(), *std::max_element(v.begin(), v.end()));
    EXPECT_EQ(jnp::max(x).dtype(), d);
    EXPECT_EQ(jnp::min(x, 1).dtype(), d);
    EXPECT_EQ(jnp::argmax(x, 1).to_vector<int>(), d == bool_ ? (std::vector<int>{1, 0}) : (std::vector<int>{1, 2}));
    EXPECT_EQ(jnp::any(x).item<bool>(), true);
    EXPECT_EQ(jnp::mean(x).dtype(), IsFloating(d) ? d : float32);
    EXPECT_EQ(jnp::cumsum(x).dtype(), jnp::promote_integers_dtype(d));
    // Shape functions move values, never change them.
    EXPECT_EQ(D(jnp::transpose(x)), (std::vector<double>{v[0], v[3], v[1], v[4], v[2], v[5]}));
    EXPECT_EQ(jnp::concatenate({x, x}).dtype(), d);
    EXPECT_EQ(D(jnp::concatenate({x, x}, 1)).size(), 12u);
    EXPECT_EQ(D(jnp::flip(x, 1)), (std::vector<double>{v[2], v[1], v[0], v[5], v[4], v[3]}));
    EXPECT_EQ(D(jnp::take(x, jnp::array({2, 0}), 1)), (std::vector<double>{v[2], v[0], v[5], v[3]}));
    EXPECT_EQ(D(jnp::pad(x, {{0, 0}, {1, 0}})), (std::vector<double>{0, v[0], v[1], v[2], 0, v[3], v[4], v[5]}));
    EXPECT_EQ(D(jnp::tile(x, {1, 2}))[3], v[0]);
    EXPECT_EQ(D(jnp::repeat(x, 2, 1))[1], v[0]);
    EXPECT_EQ(jnp::stack({x, x}).shape(), (Shape{2, 2, 3}));
    std::vector<double> sorted_row = {v[0], v[1], v[2]};
    std::sort(sorted_row.begin(), sorted_row.end());
    const std::vector<double> srt = D(jnp::sort(x, 1));
    EXPECT_EQ(std::vector<double>(srt.begin(), srt.begin() + 3), sorted_row);
    EXPECT_EQ(D(jnp::tril(jnp::concatenate({x, x}, 0).reshape({3, 4})))[1], 0.0);
  }
}

TEST(AllDTypesTest, Products) {
  for (DType d : kAll) {
    if (d == bool_) continue;
    SCOPED_TRACE(dtype_name(d));
    Array x = Small(d);
    Array y = jnp::matmul(x, jnp::transpose(x));
    EXPECT_EQ(y.dtype(), d);
    EXPECT_EQ(D(y), (std::vector<double>{10, 5, 5, 14}));  // [1 3 0; 2 1 3] @ its transpose
    EXPECT_EQ(D(jnp::einsum("ij,kj->ik", x, x)), D(y));
    EXPECT_EQ(D(jnp::einsum("ij->", x))[0], 10.0);
  }
}

// The usage examples of the public headers, as written there.
TEST(ReadmeExamplesTest, HeaderExamplesRun) {
  // jx.h
  Array x = jnp::arange(6, float32).reshape({2, 3});
  std::ostringstream os;
  os << jnp::sum(lax::sin(x) * 2.0, 1);
  EXPECT_FALSE(os.str().empty());
  // numpy.h
  Array lx = jnp::linspace(0.0, 1.0, 6).reshape({2, 3});
  Array y = jnp::sum(jnp::sin(lx) * 2.0, 1);
  EXPECT_EQ(y.shape(), Shape{2});
  Array z = jnp::einsum("ij,kj->ik", lx, lx);
  EXPECT_TRUE(jnp::allclose(z, jnp::matmul(lx, lx.T())));
  // math.h
  Array w = jnp::where(lx > 0.0, jnp::sqrt(lx), 0.0);
  EXPECT_EQ(w.dtype(), float32);
  EXPECT_EQ(jnp::floor_divide(jnp::array({-7, 7}), 2).to_vector<int>(), (std::vector<int>{-4, 3}));
  // operators.h
  Array o = 2.0 * x + 1;
  EXPECT_EQ(o.dtype(), float32);
  Array mask = (x > 0.0) & (x < 1.0);
  EXPECT_EQ(mask.dtype(), bool_);
  EXPECT_EQ((jnp::arange(10) % 3).dtype(), int32);
  // random.h
  auto key = jx::random::key(0);
  auto keys = jx::random::split(key);
  Array k1 = keys[0], k2 = keys[1];
  EXPECT_EQ(jx::random::normal(k1, {3, 4}).shape(), (Shape{3, 4}));
  EXPECT_EQ(jx::random::uniform(k2, {5}, jx::float64, -1.0, 1.0).dtype(), float64);
  EXPECT_EQ(jx::random::bernoulli(key, 0.3, Shape{10}).dtype(), bool_);
  EXPECT_EQ(jx::random::permutation(key, 10).shape(), Shape{10});
}

}  // namespace
}  // namespace jx::dtypes_test

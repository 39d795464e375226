// Focused tests of the reduction family: semantics corner cases (NaN, identities, wrapping,
// accumulation precision, first occurrence), parameters, weak types and bad inputs.
#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include <jx/jx.h>

namespace jx::reduction_test {
namespace {

template <typename T>
Array Arr(const std::vector<T>& v, Shape shape) {
  return Array::FromData(v.data(), std::move(shape), DTypeOf<T>());
}

template <typename T>
Array Full(Shape shape, double value) {
  Array a = Array::Empty(shape, DTypeOf<T>());
  for (int64_t i = 0; i < a.size(); ++i) StoreFromDouble(a.dtype(), a.mutable_data(), i, value);
  return a;
}

Array Bools(const std::vector<int>& v, Shape shape) {
  Array a = Array::Empty(std::move(shape), bool_);
  for (size_t i = 0; i < v.size(); ++i) StoreFromDouble(bool_, a.mutable_data(), static_cast<int64_t>(i), v[i]);
  return a;
}

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// Expects that f throws E whose message names the op and contains every fragment, and that a
// valid reduction works afterwards.
template <typename E, typename F>
void ExpectError(F&& f, const std::vector<std::string>& fragments) {
  try {
    f();
    ADD_FAILURE() << "no exception";
  } catch (const E& e) {
    const std::string msg = e.what();
    for (const std::string& frag : fragments) EXPECT_NE(msg.find(frag), std::string::npos) << msg << " lacks " << frag;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
  EXPECT_EQ(lax::reduce_sum(Arr<float>({1, 2, 3}, {3}), {0}).item<float>(), 6.f);
}

TEST(ReductionTest, SumOverAxes) {
  Array x = Arr<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(lax::reduce_sum(x, {0}).to_vector<float>(), (std::vector<float>{5, 7, 9}));
  EXPECT_EQ(lax::reduce_sum(x, {1}).to_vector<float>(), (std::vector<float>{6, 15}));
  EXPECT_EQ(lax::reduce_sum(x, {-1}).to_vector<float>(), (std::vector<float>{6, 15}));
  Array all = lax::reduce_sum(x, {0, 1});
  EXPECT_EQ(all.shape(), Shape{});
  EXPECT_EQ(all.item<float>(), 21.f);
  Array none = lax::reduce_sum(x, {});
  EXPECT_EQ(none.shape(), (Shape{2, 3}));
  EXPECT_EQ(none.to_vector<float>(), x.to_vector<float>());
}

TEST(ReductionTest, NonContiguousAxesUseTheGeneralPath) {
  // [2, 3, 2, 2] reducing {0, 2}: kept axes 1 and 3 are interleaved with reduced ones.
  std::vector<int32_t> v(24);
  for (int i = 0; i < 24; ++i) v[i] = i;
  Array y = lax::reduce_sum(Arr(v, {2, 3, 2, 2}), {0, 2});
  ASSERT_EQ(y.shape(), (Shape{3, 2}));
  std::vector<int32_t> want(6, 0);
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 3; ++b)
      for (int c = 0; c < 2; ++c)
        for (int d = 0; d < 2; ++d) want[b * 2 + d] += v[((a * 3 + b) * 2 + c) * 2 + d];
  EXPECT_EQ(y.to_vector<int32_t>(), want);
}

TEST(ReductionTest, MaxMinPropagateNaN) {
  Array x = Arr<float>({1, kNaN, 3, -1, 2, 0}, {2, 3});
  auto mx = lax::reduce_max(x, {1}).to_vector<float>();
  EXPECT_TRUE(std::isnan(mx[0]));
  EXPECT_EQ(mx[1], 2.f);
  auto mn = lax::reduce_min(x, {0}).to_vector<float>();
  EXPECT_EQ(mn[0], -1.f);
  EXPECT_TRUE(std::isnan(mn[1]));
  EXPECT_EQ(mn[2], 0.f);
  // NaN in the first and last position of a long row (vectorized path).
  std::vector<double> big(1000, 1.0);
  big[999] = std::nan("");
  EXPECT_TRUE(std::isnan(lax::reduce_max(Arr(big, {1000}), {0}).item<double>()));
  EXPECT_TRUE(std::isnan(lax::reduce_min(Arr(big, {1000}), {0}).item<double>()));
}

TEST(ReductionTest, EmptyReductionsGiveIdentities) {
  EXPECT_EQ(lax::reduce_sum(Full<float>({0}, 0), {0}).item<float>(), 0.f);
  EXPECT_EQ(lax::reduce_prod(Full<int32_t>({0}, 0), {0}).item<int32_t>(), 1);
  EXPECT_EQ(lax::reduce_max(Full<float>({0}, 0), {0}).item<float>(), -kInf);
  EXPECT_EQ(lax::reduce_min(Full<float>({0}, 0), {0}).item<float>(), kInf);
  EXPECT_EQ(lax::reduce_max(Full<int8_t>({0}, 0), {0}).item<int>(), -128);
  EXPECT_EQ(lax::reduce_min(Full<uint16_t>({0}, 0), {0}).item<int>(), 65535);
  EXPECT_EQ(lax::reduce_and(Full<bool>({0}, 0), {0}).item<bool>(), true);
  EXPECT_EQ(lax::reduce_or(Full<bool>({0}, 0), {0}).item<bool>(), false);
  EXPECT_EQ(lax::reduce_min(Full<bool>({0}, 0), {0}).item<bool>(), true);
  EXPECT_EQ(lax::reduce_max(Full<bool>({0}, 0), {0}).item<bool>(), false);
  EXPECT_EQ(lax::reduce_and(Full<uint8_t>({0}, 0), {0}).item<int>(), 255);
  Array e = lax::reduce_sum(Full<float>({2, 0, 3}, 0), {1});
  EXPECT_EQ(e.shape(), (Shape{2, 3}));
  EXPECT_EQ(e.to_vector<float>(), std::vector<float>(6, 0.f));
  EXPECT_EQ(lax::reduce_sum(Full<float>({2, 0, 3}, 0), {0, 2}).shape(), (Shape{0}));
}

TEST(ReductionTest, IntegerSumsAndProductsWrap) {
  EXPECT_EQ(lax::reduce_sum(Arr<int8_t>({100, 100}, {2}), {0}).item<int>(), -56);
  EXPECT_EQ(lax::reduce_sum(Arr<uint8_t>({200, 100}, {2}), {0}).item<int>(), 44);
  EXPECT_EQ(lax::reduce_prod(Arr<uint16_t>({300, 300}, {2}), {0}).item<int>(), (300 * 300) % 65536);
  EXPECT_EQ(lax::reduce_sum(Arr<int32_t>({std::numeric_limits<int32_t>::max(), 1}, {2}), {0}).item<int64_t>(),
            std::numeric_limits<int32_t>::min());
}

TEST(ReductionTest, HalfSumsAccumulateInFloat32) {
  // 4096 ones: an f16 accumulator would stall at 2048.
  EXPECT_EQ(lax::reduce_sum(Full<float16_t>({4096}, 1), {0}).item<float>(), 4096.f);
  EXPECT_EQ(lax::reduce_sum(Full<float16_t>({4096, 2}, 1), {0}).to_vector<float>(), (std::vector<float>{4096, 4096}));
  EXPECT_EQ(lax::reduce_sum(Full<bfloat16_t>({2, 1024}, 1), {1}).to_vector<float>(), (std::vector<float>{1024, 1024}));
}

TEST(ReductionTest, LongFloat32SumIsAccurate) {
  // 1 + 2^20 values of 2^-24: summed naively in f32 each addition would be lost.
  std::vector<float> v(1 + (1 << 20), std::ldexp(1.f, -24));
  v[0] = 1.f;
  EXPECT_FLOAT_EQ(lax::reduce_sum(Arr(v, {static_cast<int64_t>(v.size())}), {0}).item<float>(), 1.0625f);
}

TEST(ReductionTest, LogicalReductions) {
  Array b = Bools({1, 0, 1, 1}, {2, 2});
  EXPECT_EQ(lax::reduce_and(b, {1}).to_vector<bool>(), (std::vector<bool>{false, true}));
  EXPECT_EQ(lax::reduce_or(b, {0}).to_vector<bool>(), (std::vector<bool>{true, true}));
  EXPECT_EQ(lax::reduce_max(b, {1}).to_vector<bool>(), (std::vector<bool>{true, true}));
  EXPECT_EQ(lax::reduce_min(b, {1}).to_vector<bool>(), (std::vector<bool>{false, true}));
  Array i = Arr<int32_t>({0b1100, 0b1010, -1}, {3});
  EXPECT_EQ(lax::reduce_and(i, {0}).item<int>(), 0b1000);
  EXPECT_EQ(lax::reduce_or(i, {0}).item<int>(), -1);
  EXPECT_EQ(lax::reduce_and(i, {0}).dtype(), int32);
}

TEST(ReductionTest, WeakTypes) {
  Array w(2.5);  // weak f32
  EXPECT_TRUE(lax::reduce_sum(w, {}).weak_type());
  EXPECT_TRUE(lax::reduce_max(w, {}).weak_type());
  Array wi(3);  // weak i32
  EXPECT_FALSE(lax::reduce_and(wi, {}).weak_type());
  EXPECT_FALSE(lax::argmax(Arr<float>({1, 2}, {2}), 0).weak_type());
}

TEST(ReductionTest, ParamsPrintLikeJax) {
  EXPECT_EQ((ParamMap{{"axes", std::vector<int64_t>{0, 2}}}.ToString()), "axes=(0, 2)");
  EXPECT_EQ((ParamMap{{"axes", std::vector<int64_t>{1}}, {"index_dtype", int32}}.ToString()),
            "axes=(1,) index_dtype=int32");
}

TEST(ReductionTest, ParallelPathsAgreeWithSerialSums) {
  // Columns with few outputs and many rows take the split-R path; compare with row sums of
  // the transposed data (exact for integers).
  const int64_t R = 50000, I = 3;
  std::vector<int64_t> v(static_cast<size_t>(R * I));
  for (size_t k = 0; k < v.size(); ++k) v[k] = static_cast<int64_t>(k % 97) - 48;
  Array x = Arr(v, {R, I});
  std::vector<int64_t> want(I, 0);
  for (int64_t r = 0; r < R; ++r)
    for (int64_t i = 0; i < I; ++i) want[i] += v[static_cast<size_t>(r * I + i)];
  EXPECT_EQ(lax::reduce_sum(x, {0}).to_vector<int64_t>(), want);
  EXPECT_EQ(lax::reduce_max(x, {0}).to_vector<int64_t>(), (std::vector<int64_t>{48, 48, 48}));
}

TEST(ArgReductionTest, FirstOccurrenceAndNaN) {
  Array x = Arr<int32_t>({1, 3, 3, 0, 0, 1}, {6});
  EXPECT_EQ(lax::argmax(x, 0).item<int>(), 1);
  EXPECT_EQ(lax::argmin(x, 0).item<int>(), 3);
  Array f = Arr<float>({1, kNaN, 5, kNaN}, {4});
  EXPECT_EQ(lax::argmax(f, 0).item<int>(), 1);
  EXPECT_EQ(lax::argmin(f, 0).item<int>(), 1);
  Array z = Arr<float>({-0.f, 0.f}, {2});
  EXPECT_EQ(lax::argmax(z, 0).item<int>(), 0);
  EXPECT_EQ(lax::argmin(z, 0).item<int>(), 0);
  // Columns: [3, 2] along axis 0.
  Array c = Arr<float>({1, kNaN, 4, 2, 4, kNaN}, {3, 2});
  EXPECT_EQ(lax::argmax(c, 0).to_vector<int>(), (std::vector<int>{1, 0}));
  EXPECT_EQ(lax::argmin(c, 0).to_vector<int>(), (std::vector<int>{0, 0}));
  Array b = Bools({0, 1, 1}, {3});
  EXPECT_EQ(lax::argmax(b, 0).item<int>(), 1);
  EXPECT_EQ(lax::argmax(b, 0, int64).dtype(), int64);
  EXPECT_EQ(lax::argmax(Arr<float>({1, 2, 3, 4, 0, 9}, {2, 3}), -1).to_vector<int>(), (std::vector<int>{2, 2}));
}

TEST(ReductionErrorTest, BadAxes) {
  Array x = Arr<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  ExpectError<ValueError>([&] { lax::reduce_sum(x, {1, 1}); }, {"reduce_sum", "duplicate", "f32[2,3]"});
  ExpectError<ValueError>([&] { lax::reduce_max(x, {1, -1}); }, {"reduce_max", "duplicate", "f32[2,3]"});
  ExpectError<ShapeError>([&] { lax::reduce_sum(x, {2}); }, {"reduce_sum", "out of bounds", "f32[2,3]"});
  ExpectError<ShapeError>([&] { lax::reduce_min(x, {-3}); }, {"reduce_min", "out of bounds", "f32[2,3]"});
  ExpectError<ShapeError>([&] { lax::reduce_prod(Array(1.f), {0}); }, {"reduce_prod", "f32[]"});
}

TEST(ReductionErrorTest, BadDTypes) {
  Array b = Bools({1, 0}, {2});
  ExpectError<TypeError>([&] { lax::reduce_sum(b, {0}); }, {"reduce_sum", "bool"});
  ExpectError<TypeError>([&] { lax::reduce_prod(b, {0}); }, {"reduce_prod", "bool"});
  Array f = Arr<float>({1, 2}, {2});
  ExpectError<TypeError>([&] { lax::reduce_and(f, {0}); }, {"reduce_and", "float32", "f32[2]"});
  ExpectError<TypeError>([&] { lax::reduce_or(f, {0}); }, {"reduce_or", "float32"});
}

TEST(ReductionErrorTest, BadArgReductions) {
  Array x = Arr<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  ExpectError<ShapeError>([&] { lax::argmax(x, 2); }, {"argmax", "out of bounds", "f32[2,3]"});
  ExpectError<TypeError>([&] { lax::argmin(x, 0, float32); }, {"argmin", "index_dtype", "float32"});
  ExpectError<ValueError>([&] { lax::argmax(Full<float>({2, 0}, 0), 1); }, {"argmax", "non-empty", "f32[2,0]"});
  ExpectError<ShapeError>([&] { lax::argmax(Array(1.f), 0); }, {"argmax", "f32[]"});
}

TEST(CumulativeTest, ScansAlongAxis) {
  Array x = Arr<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(lax::cumsum(x, 1).to_vector<float>(), (std::vector<float>{1, 3, 6, 4, 9, 15}));
  EXPECT_EQ(lax::cumsum(x, 1, true).to_vector<float>(), (std::vector<float>{6, 5, 3, 15, 11, 6}));
  EXPECT_EQ(lax::cumsum(x, 0).to_vector<float>(), (std::vector<float>{1, 2, 3, 5, 7, 9}));
  EXPECT_EQ(lax::cumsum(x, -2, true).to_vector<float>(), (std::vector<float>{5, 7, 9, 4, 5, 6}));
  EXPECT_EQ(lax::cumprod(x, 1).to_vector<float>(), (std::vector<float>{1, 2, 6, 4, 20, 120}));
  Array y = Arr<int32_t>({3, 1, 4, 1, 5, 9, 2, 6}, {8});
  EXPECT_EQ(lax::cummax(y).to_vector<int>(), (std::vector<int>{3, 3, 4, 4, 5, 9, 9, 9}));
  EXPECT_EQ(lax::cummin(y, 0, true).to_vector<int>(), (std::vector<int>{1, 1, 1, 1, 2, 2, 2, 6}));
  EXPECT_EQ(lax::cumsum(x, 1).shape(), x.shape());
}

TEST(CumulativeTest, NaNPropagatesAndIntegersWrap) {
  auto m = lax::cummax(Arr<float>({1, kNaN, 3}, {3})).to_vector<float>();
  EXPECT_EQ(m[0], 1.f);
  EXPECT_TRUE(std::isnan(m[1]) && std::isnan(m[2]));
  auto r = lax::cummin(Arr<float>({1, kNaN, 3}, {3}), 0, true).to_vector<float>();
  EXPECT_TRUE(std::isnan(r[0]) && std::isnan(r[1]));
  EXPECT_EQ(r[2], 3.f);
  EXPECT_EQ(lax::cumsum(Arr<int8_t>({100, 100, 100}, {3})).to_vector<int>(), (std::vector<int>{100, -56, 44}));
  // 4096 ones in f16: the running sum must not stall at 2048.
  EXPECT_EQ(lax::cumsum(Full<float16_t>({4096}, 1)).to_vector<float>().back(), 4096.f);
  EXPECT_EQ(lax::cumsum(Full<float16_t>({4096, 3}, 1)).to_vector<float>().back(), 4096.f);
}

TEST(CumulativeTest, CumlogsumexpIsStable) {
  auto v = lax::cumlogsumexp(Arr<float>({1000, 1000, -1000}, {3})).to_vector<float>();
  EXPECT_FLOAT_EQ(v[0], 1000.f);
  EXPECT_FLOAT_EQ(v[1], 1000.f + std::log(2.f));
  EXPECT_FLOAT_EQ(v[2], 1000.f + std::log(2.f));
  auto w = lax::cumlogsumexp(Arr<double>({-1000, 0, -kInf}, {3}), 0, true).to_vector<double>();
  EXPECT_DOUBLE_EQ(w[2], -INFINITY);
  EXPECT_DOUBLE_EQ(w[1], 0.0);
  EXPECT_NEAR(w[0], std::log1p(std::exp(-1000.0)), 1e-300);
  auto n = lax::cumlogsumexp(Arr<float>({-kInf, -kInf, kInf, 2}, {4})).to_vector<float>();
  EXPECT_EQ(n, (std::vector<float>{-kInf, -kInf, kInf, kInf}));
  // Columns: [3, 2] along axis 0, with a running maximum per column.
  auto c = lax::cumlogsumexp(Arr<float>({0, 500, 0, 500, 0, -kInf}, {3, 2}), 0).to_vector<float>();
  EXPECT_FLOAT_EQ(c[2], std::log(2.f));
  EXPECT_FLOAT_EQ(c[3], 500.f + std::log(2.f));
  EXPECT_FLOAT_EQ(c[4], std::log(3.f));
  EXPECT_FLOAT_EQ(c[5], 500.f + std::log(2.f));
}

// The tangent where logaddexp's weights are 0/0 (a prefix of -infs, or +inf) is finite: the
// -inf entries get max's tie weights, and finite entries after them the usual softmax.
TEST(CumulativeTest, CumlogsumexpTangentAtInfinities) {
  const Array x = Arr<double>({-kInf, -kInf, 0.0, std::log(3.0)}, {4});
  const Array t = Arr<double>({1, 1, 1, 1}, {4});
  auto [y, dy] = jvp([](const Array& v) { return lax::cumlogsumexp(v); }, std::tuple{x}, std::tuple{t});
  const std::vector<double> d = dy.to_vector<double>();
  EXPECT_DOUBLE_EQ(d[0], 1.0);
  EXPECT_DOUBLE_EQ(d[1], 1.0);   // half of each -inf tangent
  EXPECT_DOUBLE_EQ(d[2], 1.0);   // exp(-inf - 0) = 0 from the prefix, 1 from x[2]
  EXPECT_NEAR(d[3], 1.0, 1e-15); // softmax weights 1/4 and 3/4 of two unit tangents
  // Reverse mode through the same point has no NaN either.
  const Array g = grad([](const Array& v) { return lax::reduce_sum(lax::cumlogsumexp(v), {0}); })(x);
  for (double v : g.to_vector<double>()) EXPECT_TRUE(std::isfinite(v)) << v;
  const Array p = Arr<double>({kInf, 1.0}, {2});
  auto [yp, dp] = jvp([](const Array& v) { return lax::cumlogsumexp(v); }, std::tuple{p}, std::tuple{Arr<double>({2, 5}, {2})});
  EXPECT_EQ(dp.to_vector<double>(), (std::vector<double>{2, 2}));  // +inf dominates
}

TEST(CumulativeErrorTest, BadInputs) {
  Array x = Arr<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  ExpectError<ShapeError>([&] { lax::cumsum(x, 2); }, {"cumsum", "out of bounds", "f32[2,3]"});
  ExpectError<ShapeError>([&] { lax::cummax(x, -3); }, {"cummax", "f32[2,3]"});
  ExpectError<ShapeError>([&] { lax::cumprod(Array(1.f), 0); }, {"cumprod", "f32[]"});
  ExpectError<TypeError>([&] { lax::cumsum(Bools({1, 0}, {2}), 0); }, {"cumsum", "bool"});
  ExpectError<TypeError>([&] { lax::cumlogsumexp(Arr<int32_t>({1, 2}, {2}), 0); }, {"cumlogsumexp", "int32"});
}

}  // namespace
}  // namespace jx::reduction_test

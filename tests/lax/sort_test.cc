// Focused tests of sort and top_k: JAX's float total order, stability, multi-operand
// permutation, lexicographic keys, the parallel row path and bad inputs.
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include <gtest/gtest.h>

#include <jx/jx.h>

namespace jx::sort_test {
namespace {

template <typename T>
Array Arr(const std::vector<T>& v, Shape shape) {
  return Array::FromData(v.data(), std::move(shape), DTypeOf<T>());
}

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

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
  EXPECT_EQ(lax::sort(Arr<int32_t>({3, 1, 2}, {3})).to_vector<int>(), (std::vector<int>{1, 2, 3}));
}

TEST(SortTest, FloatTotalOrder) {
  Array x = Arr<float>({kNaN, 1, -0.f, -kInf, 0.f, -kNaN, kInf, -1}, {8});
  auto v = lax::sort(x).to_vector<float>();
  ASSERT_EQ(v.size(), 8u);
  EXPECT_TRUE(std::isnan(v[0]) && std::signbit(v[0]));
  EXPECT_EQ(v[1], -kInf);
  EXPECT_EQ(v[2], -1.f);
  EXPECT_TRUE(v[3] == 0.f && std::signbit(v[3]));
  EXPECT_TRUE(v[4] == 0.f && !std::signbit(v[4]));
  EXPECT_EQ(v[5], 1.f);
  EXPECT_EQ(v[6], kInf);
  EXPECT_TRUE(std::isnan(v[7]) && !std::signbit(v[7]));
  // The same order for 16-bit floats and doubles.
  auto h = lax::sort(x.astype(bfloat16)).to_vector<float>();
  EXPECT_TRUE(std::isnan(h[0]) && std::signbit(h[0]));
  EXPECT_TRUE(std::signbit(h[3]) && !std::signbit(h[4]));
  auto d = lax::sort(x.astype(float64)).to_vector<double>();
  EXPECT_EQ(d[1], -INFINITY);
  EXPECT_TRUE(std::isnan(d[7]));
}

TEST(SortTest, IntegersAndBools) {
  EXPECT_EQ(lax::sort(Arr<int8_t>({5, -128, 127, 0, -1}, {5})).to_vector<int>(), (std::vector<int>{-128, -1, 0, 5, 127}));
  EXPECT_EQ(lax::sort(Arr<uint64_t>({~uint64_t{0}, 0, 7}, {3})).to_vector<uint64_t>(),
            (std::vector<uint64_t>{0, 7, ~uint64_t{0}}));
  Array b = Array::Empty({4}, bool_);
  for (int i = 0; i < 4; ++i) StoreFromDouble(bool_, b.mutable_data(), i, i % 2 == 0);
  EXPECT_EQ(lax::sort(b).to_vector<bool>(), (std::vector<bool>{false, false, true, true}));
}

TEST(SortTest, AlongLeadingDimension) {
  Array x = Arr<int32_t>({3, 1, 1, 2, 2, 0}, {3, 2});
  EXPECT_EQ(lax::sort(x, 0).to_vector<int>(), (std::vector<int>{1, 0, 2, 1, 3, 2}));
  EXPECT_EQ(lax::sort(x, -1).to_vector<int>(), (std::vector<int>{1, 3, 1, 2, 0, 2}));
}

TEST(SortTest, MultiOperandIsStable) {
  Array keys = Arr<int32_t>({2, 1, 2, 1, 0}, {5});
  Array vals = Arr<float>({0, 1, 2, 3, 4}, {5});
  auto out = lax::sort({keys, vals}, 0, true, 1);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].to_vector<int>(), (std::vector<int>{0, 1, 1, 2, 2}));
  EXPECT_EQ(out[1].to_vector<float>(), (std::vector<float>{4, 1, 3, 0, 2}));
  // Two keys, lexicographic; the third operand follows.
  Array k2 = Arr<float>({1, 5, 0, -1, 0}, {5});
  auto two = lax::sort({keys, k2, vals}, 0, true, 2);
  EXPECT_EQ(two[0].to_vector<int>(), (std::vector<int>{0, 1, 1, 2, 2}));
  EXPECT_EQ(two[1].to_vector<float>(), (std::vector<float>{0, -1, 5, 0, 1}));
  EXPECT_EQ(two[2].to_vector<float>(), (std::vector<float>{4, 3, 1, 2, 0}));
  // -0.0 sorts before +0.0 as a key, so the payload reveals the order.
  auto z = lax::sort({Arr<float>({0.f, -0.f}, {2}), Arr<int32_t>({0, 1}, {2})}, 0, true, 1);
  EXPECT_EQ(z[1].to_vector<int>(), (std::vector<int>{1, 0}));
}

TEST(SortTest, LargeRowsInParallelMatchStdSort) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1, 1);
  const int64_t rows = 64, n = 3000;
  std::vector<float> v(static_cast<size_t>(rows * n));
  for (float& e : v) e = dist(rng);
  auto got = lax::sort(Arr(v, {rows, n}), 1).to_vector<float>();
  for (int64_t r = 0; r < rows; ++r) std::sort(v.begin() + r * n, v.begin() + (r + 1) * n);
  EXPECT_EQ(got, v);
}

TEST(TopKTest, LargestFirstTiesByIndex) {
  auto [v, i] = lax::top_k(Arr<int32_t>({1, 3, 3, 2, 3}, {5}), 3);
  EXPECT_EQ(v.to_vector<int>(), (std::vector<int>{3, 3, 3}));
  EXPECT_EQ(i.to_vector<int>(), (std::vector<int>{1, 2, 4}));
  EXPECT_EQ(i.dtype(), int32);
  auto [fv, fi] = lax::top_k(Arr<float>({1, kNaN, kInf, -kInf, 2, 0, -1, 5}, {2, 4}), 2);
  auto values = fv.to_vector<float>();
  EXPECT_TRUE(std::isnan(values[0]));
  EXPECT_EQ(values[1], kInf);
  EXPECT_EQ(values[2], 5.f);
  EXPECT_EQ(values[3], 2.f);
  EXPECT_EQ(fi.to_vector<int>(), (std::vector<int>{1, 2, 3, 0}));
  EXPECT_EQ(fv.shape(), (Shape{2, 2}));
  auto [ev, ei] = lax::top_k(Arr<float>({1, 2}, {2}), 0);
  EXPECT_EQ(ev.shape(), (Shape{0}));
  auto [all, all_i] = lax::top_k(Arr<double>({0.5, -2, 7}, {3}), 3);
  EXPECT_EQ(all.to_vector<double>(), (std::vector<double>{7, 0.5, -2}));
  EXPECT_EQ(all_i.to_vector<int>(), (std::vector<int>{2, 0, 1}));
}

TEST(SortErrorTest, BadInputs) {
  Array a = Arr<float>({1, 2, 3}, {3});
  Array b = Arr<float>({1, 2}, {2});
  ExpectError<ShapeError>([&] { lax::sort({a, b}, 0, true, 1); }, {"sort", "f32[3]", "f32[2]"});
  ExpectError<ValueError>([&] { lax::sort({a, a}, 0, true, 3); }, {"sort", "num_keys", "f32[3]"});
  ExpectError<ValueError>([&] { lax::sort({a}, 0, true, 0); }, {"sort", "num_keys"});
  ExpectError<ShapeError>([&] { lax::sort(a, 1); }, {"sort", "out of bounds", "f32[3]"});
  ExpectError<ShapeError>([&] { lax::sort(Array(1.f)); }, {"sort", "f32[]"});
  ExpectError<TypeError>([&] { lax::sort(std::vector<Array>{}, 0, true, 1); }, {"sort", "operand"});
  ExpectError<ValueError>([&] { lax::top_k(a, 4); }, {"top_k", "k=4", "f32[3]"});
  ExpectError<ValueError>([&] { lax::top_k(a, -1); }, {"top_k", "k=-1", "f32[3]"});
  ExpectError<ShapeError>([&] { lax::top_k(Array(1.f), 1); }, {"top_k", "f32[]"});
}

}  // namespace
}  // namespace jx::sort_test

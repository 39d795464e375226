// Focused tests of reduce_window_{sum,max} and lax::reduce_window: pooling layouts,
// padding with the identity, base-dilation holes, window dilation and bad inputs.
#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include <jx/jx.h>

namespace jx::window_test {
namespace {

template <typename T>
Array Arr(const std::vector<T>& v, Shape shape) {
  return Array::FromData(v.data(), std::move(shape), DTypeOf<T>());
}

template <typename T>
Array Iota(Shape shape) {
  Array a = Array::Empty(shape, DTypeOf<T>());
  for (int64_t i = 0; i < a.size(); ++i) StoreFromDouble(a.dtype(), a.mutable_data(), i, static_cast<double>(i));
  return a;
}

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
  EXPECT_EQ(lax::reduce_window_sum(Arr<float>({1, 2, 3}, {3}), {2}, {1}, {{0, 0}}).to_vector<float>(),
            (std::vector<float>{3, 5}));
}

TEST(WindowTest, MaxPool2x2Nhwc) {
  // [1, 4, 4, 2]: channel c of pixel (h, w) holds 100 * c + 4 * h + w.
  std::vector<float> v;
  for (int h = 0; h < 4; ++h)
    for (int w = 0; w < 4; ++w)
      for (int c = 0; c < 2; ++c) v.push_back(100.f * c + 4.f * h + w);
  Array y = lax::reduce_window_max(Arr(v, {1, 4, 4, 2}), {1, 2, 2, 1}, {1, 2, 2, 1}, {{0, 0}, {0, 0}, {0, 0}, {0, 0}});
  ASSERT_EQ(y.shape(), (Shape{1, 2, 2, 2}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{5, 105, 7, 107, 13, 113, 15, 115}));
  Array s = lax::reduce_window_sum(Arr(v, {1, 4, 4, 2}), {1, 2, 2, 1}, {1, 2, 2, 1}, {{0, 0}, {0, 0}, {0, 0}, {0, 0}});
  EXPECT_EQ(s.to_vector<float>(), (std::vector<float>{10, 410, 18, 418, 42, 442, 50, 450}));
}

TEST(WindowTest, Pool3x3Stride2Nchw) {
  // [1, 1, 5, 5] iota, 3x3 window, stride 2, padding 1: each output is a clipped window.
  Array x = Iota<float>({1, 1, 5, 5});
  Array y = lax::reduce_window_sum(x, {1, 1, 3, 3}, {1, 1, 2, 2}, {{0, 0}, {0, 0}, {1, 1}, {1, 1}});
  ASSERT_EQ(y.shape(), (Shape{1, 1, 3, 3}));
  std::vector<float> want;
  for (int oh = 0; oh < 3; ++oh) {
    for (int ow = 0; ow < 3; ++ow) {
      float acc = 0;
      for (int h = oh * 2 - 1; h <= oh * 2 + 1; ++h)
        for (int w = ow * 2 - 1; w <= ow * 2 + 1; ++w)
          if (h >= 0 && h < 5 && w >= 0 && w < 5) acc += 5.f * h + w;
      want.push_back(acc);
    }
  }
  EXPECT_EQ(y.to_vector<float>(), want);
  Array m = lax::reduce_window_max(x, {1, 1, 3, 3}, {1, 1, 2, 2}, {{0, 0}, {0, 0}, {1, 1}, {1, 1}});
  EXPECT_EQ(m.to_vector<float>(), (std::vector<float>{6, 8, 9, 16, 18, 19, 21, 23, 24}));
}

TEST(WindowTest, PaddingHoldsTheIdentity) {
  Array x = Arr<float>({-5, -3}, {2});
  // Windows that see only padding give the identity: -inf for max, 0 for sum.
  EXPECT_EQ(lax::reduce_window_max(x, {2}, {1}, {{2, 2}}).to_vector<float>(),
            (std::vector<float>{-kInf, -5, -3, -3, -kInf}));
  EXPECT_EQ(lax::reduce_window_sum(x, {2}, {1}, {{2, 2}}).to_vector<float>(),
            (std::vector<float>{0, -5, -8, -3, 0}));
  EXPECT_EQ(lax::reduce_window_max(Arr<int32_t>({-5, -3}, {2}), {1}, {1}, {{1, 0}}).to_vector<int>(),
            (std::vector<int>{std::numeric_limits<int32_t>::min(), -5, -3}));
  // Negative padding crops.
  EXPECT_EQ(lax::reduce_window_sum(Arr<int32_t>({1, 2, 3, 4, 5}, {5}), {2}, {1}, {{-1, -1}}).to_vector<int>(),
            (std::vector<int>{5, 7}));
}

TEST(WindowTest, BaseDilationHolesAreNotCounted) {
  // Dilated [-1, _, -2, _, -3]: every window of 2 holds one element and one hole.
  Array x = Arr<float>({-1, -2, -3}, {3});
  EXPECT_EQ(lax::reduce_window_max(x, {2}, {1}, {{0, 0}}, {2}, {1}).to_vector<float>(),
            (std::vector<float>{-1, -2, -2, -3}));
  EXPECT_EQ(lax::reduce_window_sum(x, {2}, {1}, {{0, 0}}, {2}, {1}).to_vector<float>(),
            (std::vector<float>{-1, -2, -2, -3}));
  // Window dilation 2 on [0..5]: taps i and i + 2.
  EXPECT_EQ(lax::reduce_window_sum(Iota<int32_t>({6}), {2}, {1}, {{0, 0}}, {1}, {2}).to_vector<int>(),
            (std::vector<int>{2, 4, 6, 8}));
  // Base dilation on a non-last axis: rows [0..2] and [3..5] become rows 0 and 2 of 3.
  Array m = lax::reduce_window_sum(Iota<float>({2, 3}), {2, 1}, {1, 1}, {{0, 0}, {0, 0}}, {2, 1}, {1, 1});
  EXPECT_EQ(m.shape(), (Shape{2, 3}));
  EXPECT_EQ(m.to_vector<float>(), (std::vector<float>{0, 1, 2, 3, 4, 5}));
}

TEST(WindowTest, DTypesAndGenericWrapper) {
  Array b = Array::Empty({4}, bool_);
  for (int i = 0; i < 4; ++i) StoreFromDouble(bool_, b.mutable_data(), i, i == 1);
  EXPECT_EQ(lax::reduce_window_max(b, {2}, {2}, {{0, 0}}).to_vector<bool>(), (std::vector<bool>{true, false}));
  EXPECT_EQ(lax::reduce_window_max(b, {2}, {2}, {{0, 2}}).to_vector<bool>(), (std::vector<bool>{true, false, false}));
  // 16-bit floats accumulate in f32 or wider: 2048 + 1 + 1 is exact in f32, not in f16.
  Array h = Arr<float>({2048, 1, 1}, {3}).astype(float16);
  EXPECT_EQ(lax::reduce_window_sum(h, {3}, {1}, {{0, 0}}).item<float>(), 2050.f);
  EXPECT_EQ(lax::reduce_window_sum(Arr<uint8_t>({200, 100}, {2}), {2}, {1}, {{0, 0}}).item<int>(), 44);
  Array x = Iota<double>({3, 4});
  for (auto kind : {lax::WindowReduction::kSum, lax::WindowReduction::kMax}) {
    Array g = lax::reduce_window(x, kind, {2, 2}, {1, 2}, {{0, 1}, {1, 0}});
    Array s = kind == lax::WindowReduction::kSum ? lax::reduce_window_sum(x, {2, 2}, {1, 2}, {{0, 1}, {1, 0}})
                                                 : lax::reduce_window_max(x, {2, 2}, {1, 2}, {{0, 1}, {1, 0}});
    EXPECT_EQ(g.to_vector<double>(), s.to_vector<double>());
    EXPECT_EQ(g.shape(), (Shape{3, 2}));
  }
  // 0-d: the identity map.
  EXPECT_EQ(lax::reduce_window_sum(Array(2.5), {}, {}, {}).item<float>(), 2.5f);
  EXPECT_TRUE(lax::reduce_window_sum(Array(2.5), {}, {}, {}).weak_type());
}

TEST(WindowTest, ParamsPrintLikeJax) {
  ParamMap p{{"padding", ParamList{Param(std::vector<int64_t>{0, 0}), Param(std::vector<int64_t>{1, 1})}},
             {"window_dimensions", std::vector<int64_t>{2, 2}}};
  EXPECT_EQ(p.ToString(), "padding=((0, 0), (1, 1)) window_dimensions=(2, 2)");
}

TEST(WindowErrorTest, BadInputs) {
  Array x = Iota<float>({4, 4});
  const lax::WindowPadding none = {{0, 0}, {0, 0}};
  ExpectError<ShapeError>([&] { lax::reduce_window_sum(x, {2}, {1, 1}, none); },
                          {"reduce_window_sum", "window_dimensions", "f32[4,4]"});
  ExpectError<ShapeError>([&] { lax::reduce_window_max(x, {2, 2}, {1, 1}, {{0, 0}}); },
                          {"reduce_window_max", "padding", "f32[4,4]"});
  ExpectError<ValueError>([&] { lax::reduce_window_max(x, {2, 2}, {1, 0}, none); },
                          {"reduce_window_max", "window_strides", "f32[4,4]"});
  ExpectError<ValueError>([&] { lax::reduce_window_sum(x, {0, 2}, {1, 1}, none); },
                          {"reduce_window_sum", "window_dimensions", "f32[4,4]"});
  ExpectError<ValueError>([&] { lax::reduce_window_sum(x, {2, 2}, {1, 1}, none, {1, 0}); },
                          {"reduce_window_sum", "base_dilation"});
  ExpectError<ValueError>([&] { lax::reduce_window_sum(x, {1, 1}, {1, 1}, {{-3, -2}, {0, 0}}); },
                          {"reduce_window_sum", "negative", "f32[4,4]"});
  Array b = Array::Empty({2}, bool_);
  StoreFromDouble(bool_, b.mutable_data(), 0, 1);
  StoreFromDouble(bool_, b.mutable_data(), 1, 0);
  ExpectError<TypeError>([&] { lax::reduce_window_sum(b, {1}, {1}, {{0, 0}}); }, {"reduce_window_sum", "bool"});
}

}  // namespace
}  // namespace jx::window_test

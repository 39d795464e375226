// jnp creation functions: element types, shapes, values, weak types and bad input.
#include <cmath>
#include <string>

#include <gtest/gtest.h>

#include <jx/jx.h>

namespace jx::creation_test {
namespace {

namespace jnp = jx::numpy;

TEST(CreationTest, ArrayKeepsCppElementType) {
  EXPECT_EQ(jnp::array({1.f, 2.f}).dtype(), float32);
  EXPECT_EQ(jnp::array({1.0, 2.0}).dtype(), float64);
  EXPECT_EQ(jnp::array({1, 2}).dtype(), int32);
  EXPECT_EQ(jnp::array({int64_t{1}}).dtype(), int64);
  EXPECT_EQ(jnp::array({uint8_t{1}}).dtype(), uint8);
  EXPECT_EQ(jnp::array({uint32_t{1}}).dtype(), uint32);
  EXPECT_EQ(jnp::array({true, false}).dtype(), bool_);
  EXPECT_EQ(jnp::array({true, false}).to_vector<bool>(), (std::vector<bool>{true, false}));
  EXPECT_EQ(jnp::array(std::vector<bool>{false, true, true}).to_vector<bool>(), (std::vector<bool>{false, true, true}));
  Array a = jnp::array(std::vector<double>{1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(a.shape(), (Shape{2, 3}));
  EXPECT_EQ(a.dtype(), float64);
  EXPECT_EQ(a.to_vector<double>(), (std::vector<double>{1, 2, 3, 4, 5, 6}));
  Array m = jnp::array({{1, 2, 3}, {4, 5, 6}});
  EXPECT_EQ(m.shape(), (Shape{2, 3}));
  EXPECT_EQ(m.to_vector<int>(), (std::vector<int>{1, 2, 3, 4, 5, 6}));
  Array s = jnp::array(2.5);
  EXPECT_EQ(s.shape(), Shape{});
  EXPECT_EQ(s.dtype(), float64);
  EXPECT_FALSE(s.weak_type());
  EXPECT_EQ(jnp::array({float16_t(1.5f)}).dtype(), float16);
  EXPECT_EQ(jnp::array(std::vector<float>{}).shape(), Shape{0});
}

TEST(CreationTest, ArrayBadShape) {
  try {
    jnp::array(std::vector<float>{1, 2, 3}, {2, 2});
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("array"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("(2, 2)"), std::string::npos) << e.what();
  }
  EXPECT_THROW(jnp::array({{1, 2}, {3}}), ShapeError);
  EXPECT_EQ(jnp::array({1.f}).size(), 1);
}

TEST(CreationTest, AsarrayAndCopy) {
  Array w = jnp::asarray(2);
  EXPECT_TRUE(w.weak_type());
  EXPECT_EQ(w.dtype(), int32);
  Array f = jnp::asarray(2.5, float64);
  EXPECT_EQ(f.dtype(), float64);
  EXPECT_FALSE(f.weak_type());
  Array x = jnp::array({1.f, 2.f});
  EXPECT_EQ(jnp::asarray(x).impl(), x.impl());  // no copy
  Array c = jnp::array(x, int32);
  EXPECT_EQ(c.dtype(), int32);
  EXPECT_EQ(c.to_vector<int>(), (std::vector<int>{1, 2}));
}

TEST(CreationTest, ZerosOnesFullEmpty) {
  Array z = jnp::zeros({2, 3});
  EXPECT_EQ(z.dtype(), float32);
  EXPECT_EQ(z.shape(), (Shape{2, 3}));
  EXPECT_EQ(z.to_vector<float>(), std::vector<float>(6, 0.f));
  EXPECT_EQ(jnp::ones({4}, int8).to_vector<int>(), std::vector<int>(4, 1));
  EXPECT_EQ(jnp::empty({3}).to_vector<float>(), std::vector<float>(3, 0.f));
  EXPECT_EQ(jnp::zeros({}).shape(), Shape{});
  EXPECT_EQ(jnp::zeros({0, 3}).size(), 0);
  Array f = jnp::full({2}, 7);
  EXPECT_EQ(f.dtype(), int32);
  EXPECT_TRUE(f.weak_type());  // a C++ fill is weak, as jnp.full((2,), 7)
  EXPECT_EQ(f.to_vector<int>(), (std::vector<int>{7, 7}));
  Array g = jnp::full({2}, 0.1, float64);
  EXPECT_EQ(g.to_vector<double>(), (std::vector<double>{0.1, 0.1}));  // no float32 detour
  Array h = jnp::full({2, 2}, jnp::array({1.f, 2.f}));
  EXPECT_EQ(h.to_vector<float>(), (std::vector<float>{1, 2, 1, 2}));
  Array x = jnp::array({{1.0, 2.0}});
  EXPECT_EQ(jnp::zeros_like(x).dtype(), float64);
  EXPECT_EQ(jnp::ones_like(x, int32).to_vector<int>(), (std::vector<int>{1, 1}));
  EXPECT_EQ(jnp::full_like(x, 3).to_vector<double>(), (std::vector<double>{3, 3}));
  EXPECT_EQ(jnp::empty_like(x).shape(), (Shape{1, 2}));
  EXPECT_THROW(jnp::zeros({-1}), ShapeError);
  EXPECT_EQ(jnp::zeros({1}).size(), 1);
}

TEST(CreationTest, Arange) {
  Array a = jnp::arange(5);
  EXPECT_EQ(a.dtype(), int32);
  EXPECT_EQ(a.to_vector<int>(), (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_EQ(jnp::arange(4, float32).to_vector<float>(), (std::vector<float>{0, 1, 2, 3}));
  EXPECT_EQ(jnp::arange(2, 8, 3).to_vector<int>(), (std::vector<int>{2, 5}));
  EXPECT_EQ(jnp::arange(5, 0, -2).to_vector<int>(), (std::vector<int>{5, 3, 1}));
  EXPECT_EQ(jnp::arange(3, 1).size(), 0);
  Array f = jnp::arange(0.0, 1.0, 0.25);
  EXPECT_EQ(f.dtype(), float32);
  EXPECT_EQ(f.to_vector<float>(), (std::vector<float>{0, 0.25f, 0.5f, 0.75f}));
  EXPECT_EQ(jnp::arange(0.0, 1.0, 0.5, float64).dtype(), float64);
  EXPECT_EQ(jnp::arange(1, 4, 1, int64).to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(jnp::arange(0, 3, 1, float16).to_vector<float>(), (std::vector<float>{0, 1, 2}));
  EXPECT_EQ(jnp::arange(0.5, 2.0).to_vector<float>(), (std::vector<float>{0.5f, 1.5f}));
  EXPECT_THROW(jnp::arange(0, 5, 0), ValueError);
  EXPECT_EQ(jnp::arange(0).size(), 0);
}

TEST(CreationTest, LinspaceEyeIdentityTri) {
  EXPECT_EQ(jnp::linspace(0.0, 1.0, 5).to_vector<float>(), (std::vector<float>{0, 0.25f, 0.5f, 0.75f, 1}));
  EXPECT_EQ(jnp::linspace(0.0, 1.0, 4, false).to_vector<float>(), (std::vector<float>{0, 0.25f, 0.5f, 0.75f}));
  EXPECT_EQ(jnp::linspace(2.0, 3.0, 1).to_vector<float>(), (std::vector<float>{2}));
  EXPECT_EQ(jnp::linspace(0.0, 1.0, 0).size(), 0);
  EXPECT_EQ(jnp::linspace(0.0, 10.0, 3, true, int32).to_vector<int>(), (std::vector<int>{0, 5, 10}));
  EXPECT_EQ(jnp::linspace(0.0, 1.0).size(), 50);
  EXPECT_THROW(jnp::linspace(0.0, 1.0, -1), ValueError);
  EXPECT_EQ(jnp::eye(2).to_vector<float>(), (std::vector<float>{1, 0, 0, 1}));
  EXPECT_EQ(jnp::eye(2, 3, 1).to_vector<float>(), (std::vector<float>{0, 1, 0, 0, 0, 1}));
  EXPECT_EQ(jnp::eye(3, 2, -1, int32).to_vector<int>(), (std::vector<int>{0, 0, 1, 0, 0, 1}));
  EXPECT_EQ(jnp::identity(2, float64).dtype(), float64);
  EXPECT_EQ(jnp::tri(3, 3, 0, int32).to_vector<int>(), (std::vector<int>{1, 0, 0, 1, 1, 0, 1, 1, 1}));
}

}  // namespace
}  // namespace jx::creation_test

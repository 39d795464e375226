#include <gtest/gtest.h>

#include <jx/jx.h>

namespace jx::smoke_test {
namespace {

TEST(LaxSmokeTest, SinAndAdd) {
  Array x = Array::FromData(std::vector<float>{0.f, 1.f}.data(), {2}, float32);
  Array y = lax::add(lax::sin(x), x);
  auto v = y.to_vector<float>();
  EXPECT_FLOAT_EQ(v[1], std::sin(1.f) + 1.f);
  EXPECT_THROW(lax::add(x, Array::FromData(std::vector<float>{1.f}.data(), {1}, float32)), ShapeError);
}

}  // namespace
}  // namespace jx::smoke_test

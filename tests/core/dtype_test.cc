#include "jx/core/dtype.h"

#include <gtest/gtest.h>

namespace jx::dtype_test {
namespace {

TEST(DTypeTest, Names) {
  EXPECT_EQ(dtype_name(float32), "float32");
  EXPECT_EQ(dtype_name(bfloat16), "bfloat16");
  EXPECT_EQ(dtype_short_name(int64), "i64");
}

TEST(DTypeTest, HalfRoundTrip) {
  EXPECT_EQ(static_cast<float>(float16_t(1.5f)), 1.5f);
  EXPECT_EQ(static_cast<float>(bfloat16_t(1.5f)), 1.5f);
  EXPECT_EQ(float16_t(65504.f).bits, 0x7bffu);
  EXPECT_EQ(float16_t(65520.f).bits, 0x7c00u);  // rounds to inf
  EXPECT_EQ(float16_t(5.9604645e-8f).bits, 0x0001u);  // smallest subnormal
}

}  // namespace
}  // namespace jx::dtype_test

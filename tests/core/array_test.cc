#include "jx/core/array.h"

#include <sstream>

#include <gtest/gtest.h>

#include "jx/core/errors.h"

namespace jx::array_test {
namespace {

template <typename T>
Array Make(std::vector<T> v, Shape shape) {
  return Array::FromData(v.data(), std::move(shape), DTypeOf<T>());
}
Array MakeBool(std::vector<bool> v, Shape shape) {
  std::unique_ptr<bool[]> flags(new bool[v.size()]);
  for (size_t i = 0; i < v.size(); ++i) flags[i] = v[i];
  return Array::FromData(flags.get(), std::move(shape), bool_);
}

TEST(ArrayTest, ValueSemanticsShareTheBuffer) {
  Array a = Make<float>({1, 2, 3}, {3});
  Array b = a;
  EXPECT_EQ(a.buffer().get(), b.buffer().get());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data()) % Buffer::kAlignment, 0u);
  EXPECT_EQ(b.shape(), (Shape{3}));
  EXPECT_EQ(b.dtype(), float32);
  EXPECT_EQ(b.size(), 3);
  EXPECT_EQ(b.ndim(), 1);
}

TEST(ArrayTest, ScalarsAreWeak) {
  Array f = 2.5;
  Array i = 3;
  Array t = true;
  EXPECT_EQ(f.dtype(), float32);
  EXPECT_TRUE(f.weak_type());
  EXPECT_EQ(i.dtype(), int32);
  EXPECT_TRUE(i.weak_type());
  EXPECT_EQ(t.dtype(), bool_);
  EXPECT_FALSE(t.weak_type());
  EXPECT_EQ(f.item<float>(), 2.5f);
  EXPECT_EQ(i.item<int64_t>(), 3);
}

TEST(ArrayTest, ItemAndToVectorConvert) {
  Array a = Make<int64_t>({int64_t{1} << 60, -3}, {2});
  EXPECT_EQ(a.to_vector<int64_t>()[0], int64_t{1} << 60);  // no round trip through double
  EXPECT_EQ(a.to_vector<double>()[1], -3.0);
  EXPECT_EQ(a.to_vector<bool>(), (std::vector<bool>{true, true}));
  Array h = Make<float16_t>({float16_t(0.5f)}, {});
  EXPECT_EQ(h.item<float>(), 0.5f);
  EXPECT_THROW(a.item<int>(), ValueError);
  Array empty;
  EXPECT_THROW(empty.shape(), ValueError);
}

TEST(ArrayTest, PrintsLikeNumPy) {
  EXPECT_EQ(Make<float>({1, 2.5, 3}, {3}).str(), "[1.  2.5 3. ]");
  EXPECT_EQ(Make<int32_t>({0, 1, 2, 3, 4, 5}, {2, 3}).str(), "[[0 1 2]\n [3 4 5]]");
  EXPECT_EQ(MakeBool({true, false}, {2}).str(), "[ True False]");
  EXPECT_EQ(Make<double>({1e-5, 1.0}, {2}).str(), "[1.e-05 1.e+00]");
  EXPECT_EQ(Make<double>({1e-5, 1.5}, {2}).str(), "[1.0e-05 1.5e+00]");
  EXPECT_EQ(Make<float>({0.f / 0.f, 1.f / 0.f, -1.f}, {3}).str(), "[nan inf -1.]");
  EXPECT_EQ(Array::Scalar(3.0, float32).str(), "3.0");  // NumPy scalar str, as JAX prints a 0-d array
  EXPECT_EQ(Make<float>({}, {0}).str(), "[]");
  EXPECT_EQ(Make<float>({1, 2.5, 3}, {3}).repr(), "Array([1. , 2.5, 3. ], dtype=float32)");
  // Shortest digits that read back in the element's own dtype (NumPy's unique mode):
  // float32 0.7615942f prints as 0.7615942, not as its float64 expansion 0.76159418.
  EXPECT_EQ(Make<float>({0.f, 0.4621172f, 0.7615942f}, {3}).str(), "[0.        0.4621172 0.7615942]");
  EXPECT_EQ(Make<double>({0.1, 1.0 / 3}, {2}).str(), "[0.1        0.33333333]");
  std::ostringstream os;
  os << Make<int32_t>({7}, {1});
  EXPECT_EQ(os.str(), "[7]");
}

TEST(ArrayTest, SummarizesLargeArrays) {
  std::vector<int32_t> v(2000);
  for (int i = 0; i < 2000; ++i) v[i] = i;
  EXPECT_EQ(Make<int32_t>(v, {2000}).str(), "[   0    1    2 ... 1997 1998 1999]");
  EXPECT_EQ(Make<int32_t>(v, {2, 1000}).str(),
            "[[   0    1    2 ...  997  998  999]\n [1000 1001 1002 ... 1997 1998 1999]]");
  std::vector<double> d(2000);
  for (int i = 0; i < 2000; ++i) d[i] = i;
  EXPECT_EQ(Make<double>(d, {2000}).str(), "[0.000e+00 1.000e+00 2.000e+00 ... 1.997e+03 1.998e+03 1.999e+03]");
}

}  // namespace
}  // namespace jx::array_test

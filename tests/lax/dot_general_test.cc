// Focused tests of dot_general / dot and of the GEMM kernel underneath: params as JAX prints
// them, dtype rules, accumulation precision, every operand layout the GEMM canonicalization
// distinguishes at sizes that take the parallel paths, and bad inputs.
#include <gtest/gtest.h>
#include <jx/jx.h>

#include <cmath>
#include <random>

#include "jx/core/interpreter.h"
#include "jx/lax/kernels/gemm.h"

namespace jx::dot_general_test {
namespace {

using lax::DotDimensionNumbers;

Array Arange(const Shape& shape, DType dtype, double scale = 1.0, double offset = 0.0) {
  Array out = Array::Empty(shape, dtype);
  for (int64_t i = 0; i < out.size(); ++i)
    StoreFromDouble(dtype, out.mutable_data(), i, offset + scale * static_cast<double>(i % 17));
  return out;
}

Array Random(const Shape& shape, DType dtype, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(-1, 1);
  Array out = Array::Empty(shape, dtype);
  for (int64_t i = 0; i < out.size(); ++i) StoreFromDouble(dtype, out.mutable_data(), i, dist(rng));
  return out;
}

// Float64 reference for a plain (possibly batched) matmul given as accessors.
std::vector<double> RefMatmul(const std::vector<double>& a, const std::vector<double>& b, int64_t batch, int64_t m,
                              int64_t n, int64_t k) {
  std::vector<double> c(static_cast<size_t>(batch * m * n), 0.0);
  for (int64_t q = 0; q < batch; ++q)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t p = 0; p < k; ++p) s += a[(q * m + i) * k + p] * b[(q * k + p) * n + j];
        c[(q * m + i) * n + j] = s;
      }
  return c;
}

void ExpectNear(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], tol) << "element " << i;
  }
}

// Records the params of every primitive bound under it, then evaluates eagerly.
class RecordingInterpreter : public Interpreter {
 public:
  Arrays Process(Primitive p, absl::Span<const Array> inputs, const ParamMap& params) override {
    last_params = params.ToString();
    return EvalPrimitive(p, inputs, params);
  }
  std::string name() const override { return "record"; }
  std::string last_params;
};

TEST(DotGeneralTest, ParamsPrintAsJax) {
  EXPECT_EQ(lax::internal::DotGeneralParams({{1}, {0}, {}, {}}, std::nullopt, std::nullopt).ToString(),
            "dimension_numbers=(([1], [0]), ([], [])) precision=None preferred_element_type=None");
  EXPECT_EQ(lax::internal::DotGeneralParams({{2, 1}, {1, 0}, {0}, {0}}, std::nullopt, float32).ToString(),
            "dimension_numbers=(([2, 1], [1, 0]), ([0], [0])) precision=None preferred_element_type=float32");
  RecordingInterpreter rec;
  {
    InterpreterScope scope(&rec);
    lax::dot(Arange({2, 3}, float32), Arange({3}, float32));
  }
  EXPECT_EQ(rec.last_params, "dimension_numbers=(([1], [0]), ([], [])) precision=None preferred_element_type=None");
  // Equal params hash and compare equal (CSE and cache keys rely on it).
  const ParamMap a = lax::internal::DotGeneralParams({{1}, {0}, {}, {}}, std::nullopt, std::nullopt);
  const ParamMap b = lax::internal::DotGeneralParams({{1}, {0}, {}, {}}, std::nullopt, std::nullopt);
  const ParamMap c = lax::internal::DotGeneralParams({{0}, {0}, {}, {}}, std::nullopt, std::nullopt);
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.Hash(), b.Hash());
  EXPECT_FALSE(a == c);
  EXPECT_EQ(lax::internal::GetDotDimensionNumbers(a), (DotDimensionNumbers{{1}, {0}, {}, {}}));
}

TEST(DotGeneralTest, OutputDimsAreBatchThenLhsFreeThenRhsFree) {
  Array lhs = Arange({3, 2, 4, 5}, float32);  // batch dim 1, contracting dim 2
  Array rhs = Arange({4, 6, 2}, float32);     // batch dim 2, contracting dim 0
  Array out = lax::dot_general(lhs, rhs, {{2}, {0}, {1}, {2}});
  EXPECT_EQ(out.shape(), (Shape{2, 3, 5, 6}));
  EXPECT_EQ(out.dtype(), float32);
  // Spot-check one element against the definition.
  const auto l = lhs.to_vector<double>(), r = rhs.to_vector<double>(), o = out.to_vector<double>();
  const int64_t b = 1, i = 2, f = 3, j = 4;
  double want = 0;
  for (int64_t k = 0; k < 4; ++k) want += l[((i * 2 + b) * 4 + k) * 5 + f] * r[(k * 6 + j) * 2 + b];
  EXPECT_DOUBLE_EQ(o[((b * 3 + i) * 5 + f) * 6 + j], want);
}

TEST(DotGeneralTest, MatmulMatchesReferenceOnEveryLayoutAtParallelSizes) {
  // Odd sizes so row/column blocks are uneven; K large enough for Eigen's blocked path.
  const int64_t m = 257, k = 300, n = 129;
  Array a = Random({m, k}, float32, 1), b = Random({k, n}, float32, 2);
  const auto want = RefMatmul(a.to_vector<double>(), b.to_vector<double>(), 1, m, n, k);
  Array at = lax::transpose(a, {1, 0}), bt = lax::transpose(b, {1, 0});
  ExpectNear(lax::dot_general(a, b, {{1}, {0}, {}, {}}).to_vector<double>(), want, 2e-4);
  ExpectNear(lax::dot_general(at, b, {{0}, {0}, {}, {}}).to_vector<double>(), want, 2e-4);
  ExpectNear(lax::dot_general(a, bt, {{1}, {1}, {}, {}}).to_vector<double>(), want, 2e-4);
  ExpectNear(lax::dot_general(at, bt, {{0}, {1}, {}, {}}).to_vector<double>(), want, 2e-4);
  // A wide, short product splits over columns.
  Array w = Random({8, 4000}, float64, 3), v = Random({8, 40}, float64, 4);
  const auto want2 = RefMatmul(lax::transpose(v, {1, 0}).to_vector<double>(), w.to_vector<double>(), 1, 40, 4000, 8);
  ExpectNear(lax::dot_general(v, w, {{0}, {0}, {}, {}}).to_vector<double>(), want2, 1e-12);
}

TEST(DotGeneralTest, BatchedMatchesReferenceForSmallAndLargeBatches) {
  for (int64_t batch : {1, 3, 5, 64}) {
    const int64_t m = 33, k = 70, n = 65;
    Array a = Random({batch, m, k}, float32, 10 + batch), b = Random({batch, k, n}, float32, 20 + batch);
    const auto want = RefMatmul(a.to_vector<double>(), b.to_vector<double>(), batch, m, n, k);
    ExpectNear(lax::dot_general(a, b, {{2}, {1}, {0}, {0}}).to_vector<double>(), want, 1e-4);
    // The same with the batch dim in the middle of both operands (strided batch, no copy).
    Array am = lax::transpose(a, {1, 0, 2}), bm = lax::transpose(b, {1, 0, 2});
    ExpectNear(lax::dot_general(am, bm, {{2}, {0}, {1}, {1}}).to_vector<double>(), want, 1e-4);
  }
}

TEST(DotGeneralTest, HalfPrecisionAccumulatesInFloat32) {
  // 300 ones: a bfloat16 accumulator would stall at 256 (256 + 1 rounds back to 256).
  Array ones_l = lax::convert_element_type(Arange({1, 300}, float32, 0.0, 1.0), bfloat16);
  Array ones_r = lax::convert_element_type(Arange({300, 1}, float32, 0.0, 1.0), bfloat16);
  Array out = lax::dot(ones_l, ones_r);
  EXPECT_EQ(out.dtype(), bfloat16);
  EXPECT_EQ(out.item<double>(), 300.0);
  Array f = lax::dot(ones_l, ones_r, float32);
  EXPECT_EQ(f.dtype(), float32);
  EXPECT_EQ(f.item<double>(), 300.0);
  Array h = lax::dot(lax::convert_element_type(ones_l, float16), lax::convert_element_type(ones_r, float16));
  EXPECT_EQ(h.dtype(), float16);
  EXPECT_EQ(h.item<double>(), 300.0);
}

TEST(DotGeneralTest, IntegerAndBoolDots) {
  // int8 with int32 accumulation: 100 * 100 * 4 does not fit int8.
  Array a = Array::Empty({1, 4}, int8), b = Array::Empty({4, 1}, int8);
  for (int i = 0; i < 4; ++i) {
    StoreFromDouble(int8, a.mutable_data(), i, 100);
    StoreFromDouble(int8, b.mutable_data(), i, 100);
  }
  Array wide = lax::dot(a, b, int32);
  EXPECT_EQ(wide.dtype(), int32);
  EXPECT_EQ(wide.item<int64_t>(), 40000);
  // int -> float preferred.
  Array fl = lax::dot(a, b, float32);
  EXPECT_EQ(fl.dtype(), float32);
  EXPECT_EQ(fl.item<double>(), 40000.0);
  // int32 dot accumulates exactly.
  Array ia = Arange({5, 7}, int32), ib = Arange({7, 3}, int32, 2.0, -5.0);
  const auto want = RefMatmul(ia.to_vector<double>(), ib.to_vector<double>(), 1, 5, 3, 7);
  EXPECT_EQ(lax::dot(ia, ib).to_vector<double>(), want);
  // bool: OR of ANDs.
  const bool lv[] = {true, false, false, false, false, false};
  const bool rv[] = {false, true, true, false, false, false};
  Array bl = Array::FromData(lv, {2, 3}, bool_), br = Array::FromData(rv, {3, 2}, bool_);
  Array bo = lax::dot(bl, br);
  EXPECT_EQ(bo.dtype(), bool_);
  EXPECT_EQ(bo.to_vector<bool>(), (std::vector<bool>{false, true, false, false}));
  EXPECT_EQ(lax::dot(bl, br, int32).to_vector<int32_t>(), (std::vector<int32_t>{0, 1, 0, 0}));
}

TEST(DotGeneralTest, MixedDtypesComputeInTheMorePreciseType) {
  Array i = Arange({2, 3}, int32), f = Arange({3, 2}, float32, 0.5);
  Array out = lax::dot(i, f);
  EXPECT_EQ(out.dtype(), float32);
  EXPECT_EQ(out.to_vector<double>(), RefMatmul(i.to_vector<double>(), f.to_vector<double>(), 1, 2, 2, 3));
  // float16 vs bfloat16: bfloat16 has the larger exponent range, so it wins (XLA's rule).
  Array h = lax::convert_element_type(Arange({2, 3}, float32), float16);
  Array bf = lax::convert_element_type(Arange({3, 2}, float32), bfloat16);
  EXPECT_EQ(lax::dot(h, bf).dtype(), bfloat16);
  EXPECT_EQ(lax::dot(lax::convert_element_type(f, float64), i).dtype(), float64);
}

TEST(DotGeneralTest, WeakTypeOnlyWhenBothOperandsAreWeak) {
  Array w = Array::Empty(ShapedArray{{3}, float32, /*weak_type=*/true});
  for (int i = 0; i < 3; ++i) StoreFromDouble(float32, w.mutable_data(), i, 2.0);
  EXPECT_TRUE(lax::dot(w, w).weak_type());
  EXPECT_FALSE(lax::dot(w, Arange({3}, float32)).weak_type());
  EXPECT_FALSE(lax::dot(w, w, float32).weak_type());
}

TEST(DotGeneralTest, EmptyAndZeroDimResults) {
  Array z = lax::dot(Arange({3, 0}, float32), Arange({0, 4}, float32));
  EXPECT_EQ(z.shape(), (Shape{3, 4}));
  for (double v : z.to_vector<double>()) EXPECT_EQ(v, 0.0);
  Array e = lax::dot(Arange({0, 5}, float32), Arange({5, 4}, float32));
  EXPECT_EQ(e.shape(), (Shape{0, 4}));
  Array s = lax::dot(Arange({4}, float64), Arange({4}, float64));
  EXPECT_EQ(s.shape(), Shape{});
  EXPECT_EQ(s.item<double>(), 0 + 1 + 4 + 9);
}

TEST(DotTest, RanksAndErrors) {
  EXPECT_EQ(lax::dot(Arange({3, 4}, float32), Arange({4}, float32)).shape(), (Shape{3}));
  EXPECT_EQ(lax::dot(Arange({4}, float32), Arange({4, 2}, float32)).shape(), (Shape{2}));
  try {
    lax::dot(Arange({3, 4}, float32), Arange({3, 4}, float32));
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("dot"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("f32[3,4]"), std::string::npos);
  }
  EXPECT_THROW(lax::dot(Arange({2, 3, 4}, float32), Arange({4}, float32)), ShapeError);
  EXPECT_THROW(lax::dot(Array(1.f), Arange({4}, float32)), ShapeError);
}

// Expects an exception of type E naming dot_general and each of the fragments.
template <typename E, typename F>
void ExpectError(F f, std::vector<std::string> fragments) {
  try {
    f();
    FAIL() << "expected an exception";
  } catch (const E& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("[dot_general]"), std::string::npos) << what;
    for (const auto& frag : fragments) EXPECT_NE(what.find(frag), std::string::npos) << what << " lacks " << frag;
  }
}

TEST(DotGeneralTest, BadInputsThrowAndTheNextCallWorks) {
  Array a = Arange({2, 3}, float32), b = Arange({4, 5}, float32);
  ExpectError<ShapeError>(
      [&] {
        lax::dot_general(a, b, {{1}, {0}, {}, {}});
      },
      {"contracting dims differ", "f32[2,3]", "f32[4,5]", "dim 1 (3)", "dim 0 (4)"});
  ExpectError<ShapeError>([&] { lax::dot_general(a, b, {{2}, {0}, {}, {}}); }, {"out of range", "f32[2,3]"});
  ExpectError<ShapeError>([&] { lax::dot_general(a, b, {{-1}, {0}, {}, {}}); }, {"out of range"});
  ExpectError<ShapeError>([&] { lax::dot_general(a, b, {{1}, {}, {}, {}}); }, {"equal lengths"});
  ExpectError<ShapeError>([&] { lax::dot_general(a, b, {{1}, {0}, {0}, {}}); }, {"equal lengths"});
  ExpectError<ShapeError>([&] { lax::dot_general(a, a, {{0}, {0}, {0}, {1}}); }, {"more than once", "f32[2,3]"});
  ExpectError<ShapeError>(
      [&] {
        lax::dot_general(Arange({2, 3}, float32), Arange({3, 3}, float32), {{1}, {1}, {0}, {0}});
      },
      {"batch dims differ", "f32[2,3]", "f32[3,3]"});
  Array c = Arange({3, 5}, float32);
  ExpectError<TypeError>([&] { lax::dot_general(a, c, {{1}, {0}, {}, {}}, float16); }, {"narrower", "float16"});
  ExpectError<TypeError>([&] { lax::dot_general(a, c, {{1}, {0}, {}, {}}, int32); }, {"incompatible", "int32"});
  Array ai = Arange({2, 3}, int32), ci = Arange({3, 5}, int32);
  ExpectError<TypeError>([&] { lax::dot_general(ai, ci, {{1}, {0}, {}, {}}, uint32); }, {"signedness", "uint32"});
  ExpectError<TypeError>([&] { lax::dot_general(ai, ci, {{1}, {0}, {}, {}}, int16); }, {"narrower"});
  // The process keeps working.
  EXPECT_EQ(lax::dot_general(a, c, {{1}, {0}, {}, {}}).shape(), (Shape{2, 5}));
}

// ----- the GEMM kernel directly -----

TEST(GemmKernelTest, StridesTransposesAlphaAndAccumulate) {
  const int64_t batch = 3, m = 37, n = 29, k = 41;
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> dist(-1, 1);
  // A stored transposed (k x m, padded rows), B row-major with padding, C with padding.
  const int64_t lda = m + 3, ldb = n + 5, ldc = n + 2;
  std::vector<double> a(static_cast<size_t>(batch * k * lda)), b(static_cast<size_t>(batch * k * ldb)),
      c(static_cast<size_t>(batch * m * ldc), 0.5);
  for (auto& x : a) x = dist(rng);
  for (auto& x : b) x = dist(rng);
  lax::kernels::GemmArgs g;
  g.dtype = float64;
  g.batch = batch;
  g.m = m;
  g.n = n;
  g.k = k;
  g.a = a.data();
  g.lda = lda;
  g.stride_a = k * lda;
  g.transpose_a = true;
  g.b = b.data();
  g.ldb = ldb;
  g.stride_b = k * ldb;
  g.c = c.data();
  g.ldc = ldc;
  g.stride_c = m * ldc;
  g.alpha = 2.0;
  g.accumulate = true;
  lax::kernels::Gemm(g);
  for (int64_t q = 0; q < batch; ++q)
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t p = 0; p < k; ++p) s += a[q * k * lda + p * lda + i] * b[q * k * ldb + p * ldb + j];
        ASSERT_NEAR(c[q * m * ldc + i * ldc + j], 0.5 + 2.0 * s, 1e-12);
      }
      // Padding between rows is untouched.
      for (int64_t j = n; j < ldc; ++j) ASSERT_EQ(c[q * m * ldc + i * ldc + j], 0.5);
    }
}

TEST(GemmKernelTest, IntegerGemmWrapsAndZeroDepthClears) {
  std::vector<int32_t> a = {1 << 30, 1 << 30}, b = {2, 2}, c = {7};
  lax::kernels::GemmArgs g;
  g.dtype = int32;
  g.m = 1;
  g.n = 1;
  g.k = 2;
  g.a = a.data();
  g.lda = 2;
  g.b = b.data();
  g.ldb = 1;
  g.c = c.data();
  g.ldc = 1;
  lax::kernels::Gemm(g);
  EXPECT_EQ(c[0], 0);  // 2^31 + 2^31 wraps to 0
  c[0] = 7;
  g.k = 0;
  lax::kernels::Gemm(g);
  EXPECT_EQ(c[0], 0);
}

TEST(GemmKernelTest, PackConvertTransposesAndConverts) {
  // src: f16 [3, 70] read transposed as [70, 3].
  Array src = lax::convert_element_type(Arange({3, 70}, float32), float16);
  std::vector<float> dst(210);
  lax::kernels::PackConvert(float16, src.data(), {70, 3}, {1, 70}, float32, dst.data());
  const auto s = src.to_vector<double>();
  for (int64_t i = 0; i < 70; ++i)
    for (int64_t j = 0; j < 3; ++j) ASSERT_EQ(dst[i * 3 + j], s[j * 70 + i]);
  // int32 -> bool is value != 0; broadcast (stride 0) source.
  const int32_t v[] = {0, 5};
  bool out[6];
  lax::kernels::PackConvert(int32, v, {3, 2}, {0, 1}, bool_, out);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(out[i], i % 2 == 1);
}

}  // namespace
}  // namespace jx::dot_general_test

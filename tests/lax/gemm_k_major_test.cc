// The direct K-major GEMM (lax/kernels/gemm_k_major.h): C = alpha * A^T B [+ C] with A [k, m]
// and B [k, n] row-major, as the weight gradient of a scan RNN (dW = H^T G over 1000 steps)
// reaches the kernel library. Values against a float64 reference on tile-aligned shapes and
// on shapes with partial row, column and depth blocks; a product split over the pool equals
// the unsplit one; dot_general, eager and jitted, picks the kernel for that layout.
#include <gtest/gtest.h>
#include <jx/jx.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "jx/core/parallel.h"
#include "jx/lax/kernels/gemm.h"
#include "jx/lax/kernels/gemm_k_major.h"

namespace jx::gemm_k_major_test {
namespace {

namespace kernels = lax::kernels;

template <typename T>
std::vector<T> Random(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<T> v(static_cast<size_t>(n));
  for (T& x : v) x = static_cast<T>(u(rng));
  return v;
}

struct Dims {
  int64_t m, n, k;
};

// Partial row, column and depth blocks, whole tiles, a single row and column, a depth shorter
// than one block, several depth blocks.
const Dims kShapes[] = {{37, 45, 300}, {12, 32, 128}, {13, 33, 129}, {1, 70, 500},
                        {70, 1, 500},  {5, 7, 3},     {100, 60, 700}};
// The RNN's weight gradient (1000 steps of h = 256): float32 only.
const Dims kRnnShape = {256, 256, 1000};

// a^T b in float64 and sum_p |a_pi b_pj|, the scale of its rounding error.
struct Reference {
  std::vector<double> product, magnitude;
};

template <typename T>
Reference ComputeReference(const std::vector<T>& a, const std::vector<T>& b, const Dims& d) {
  Reference r{std::vector<double>(d.m * d.n, 0.0), std::vector<double>(d.m * d.n, 0.0)};
  for (int64_t p = 0; p < d.k; ++p) {
    for (int64_t i = 0; i < d.m; ++i) {
      const double ai = a[p * d.m + i];
      for (int64_t j = 0; j < d.n; ++j) {
        const double t = ai * static_cast<double>(b[p * d.n + j]);
        r.product[i * d.n + j] += t;
        r.magnitude[i * d.n + j] += std::fabs(t);
      }
    }
  }
  return r;
}

// Checks c (m x n) against alpha * a^T b (+ c0 when accumulating), within the worst-case
// rounding bound of a length-k sum in T: (k + 2) u sum_p |a_pi b_pj| (+ 2 u |result|), u the
// unit roundoff of T.
template <typename T>
void ExpectMatchesReference(const Reference& ref, const std::vector<T>& c0, const std::vector<T>& c, double alpha,
                            bool accumulate, int64_t k) {
  const double u = std::numeric_limits<T>::epsilon() / 2;
  int64_t bad = 0;
  for (size_t e = 0; e < c.size(); ++e) {
    double want = alpha * ref.product[e], bound = (k + 2) * u * std::fabs(alpha) * ref.magnitude[e];
    if (accumulate) {
      want += c0[e];
      bound += 2 * u * std::fabs(want);
    }
    if (!(std::fabs(c[e] - want) <= bound) && bad++ < 5) {
      ADD_FAILURE() << "C element " << e << " = " << c[e] << ", float64 reference " << want << " (bound " << bound
                    << ")";
    }
  }
  EXPECT_EQ(bad, 0);
}

template <typename T>
void CheckShape(DType dtype, const Dims& d) {
  const std::vector<T> a = Random<T>(d.k * d.m, 1), b = Random<T>(d.k * d.n, 2), c0 = Random<T>(d.m * d.n, 3);
  const Reference ref = ComputeReference(a, b, d);
  for (const bool accumulate : {false, true}) {
    SCOPED_TRACE(StrCat(dtype_name(dtype), " m ", d.m, " n ", d.n, " k ", d.k, accumulate ? " accumulate" : ""));
    const double alpha = accumulate ? -0.5 : 1.0;
    // The kernel itself, whatever UseKMajorGemm says of the shape.
    std::vector<T> c = c0;
    kernels::KMajorGemm(a.data(), d.m, b.data(), d.n, c.data(), d.n, d.m, d.n, d.k, static_cast<T>(alpha),
                        accumulate);
    ExpectMatchesReference(ref, c0, c, alpha, accumulate, d.k);
    // And through Gemm with a transposed lhs, on the pool.
    std::vector<T> g_out = c0;
    kernels::GemmArgs g;
    g.dtype = dtype;
    g.m = d.m;
    g.n = d.n;
    g.k = d.k;
    g.a = a.data();
    g.lda = d.m;
    g.transpose_a = true;
    g.b = b.data();
    g.ldb = d.n;
    g.c = g_out.data();
    g.ldc = d.n;
    g.alpha = alpha;
    g.accumulate = accumulate;
    kernels::Gemm(g);
    ExpectMatchesReference(ref, c0, g_out, alpha, accumulate, d.k);
    if (kernels::UseKMajorGemm(d.m, d.n, d.k)) {
      EXPECT_EQ(g_out, c) << "Gemm did not run the K-major kernel";
    }
  }
}

TEST(KMajorGemmTest, RnnWeightGradientShapeMatchesTheFloat64Reference) {
  ASSERT_TRUE(kernels::UseKMajorGemm(kRnnShape.m, kRnnShape.n, kRnnShape.k));
  CheckShape<float>(float32, kRnnShape);
}

TEST(KMajorGemmTest, EdgeTilesMatchTheFloat64Reference) {
  for (const Dims& d : kShapes) {
    CheckShape<float>(float32, d);
    CheckShape<double>(float64, d);
  }
}

// Split into row or column blocks over the pool, a K-major product gives the unsplit bits.
TEST(KMajorGemmTest, SplitProductEqualsUnsplitProduct) {
  if (NumThreads() < 2) GTEST_SKIP() << "needs a pool of 2 or more threads to split";
  for (const Dims& d : {Dims{256, 256, 1000}, Dims{101, 77, 700}, Dims{50, 250, 900}}) {
    SCOPED_TRACE(StrCat("m ", d.m, " n ", d.n, " k ", d.k));
    ASSERT_TRUE(kernels::UseKMajorGemm(d.m, d.n, d.k));
    const std::vector<float> a = Random<float>(d.k * d.m, 4), b = Random<float>(d.k * d.n, 5);
    std::vector<float> split(d.m * d.n), whole(d.m * d.n);
    kernels::GemmArgs g;
    g.m = d.m;
    g.n = d.n;
    g.k = d.k;
    g.a = a.data();
    g.lda = d.m;
    g.transpose_a = true;
    g.b = b.data();
    g.ldb = d.n;
    g.ldc = d.n;
    g.c = split.data();
    std::atomic<int> blocks = 0;
    g.on_block = [&](int64_t, int64_t, int64_t, int64_t, int64_t) { blocks.fetch_add(1); };
    kernels::Gemm(g);
    EXPECT_GT(blocks.load(), 1) << "the product was not split";
    g.on_block = nullptr;
    g.parallel = false;
    g.c = whole.data();
    kernels::Gemm(g);
    EXPECT_EQ(split, whole);
  }
}

// dot_general contracting the leading dims of two [k, *] operands (the RNN's dW = H^T G) runs
// the K-major kernel, eagerly and under jit, and equals the float64 product to float32's rounding.
TEST(KMajorGemmTest, DotGeneralOfLeadingDimsEagerAndJit) {
  const Array h = jx::random::normal(jx::random::key(7), {300, 40});
  const Array g = jx::random::normal(jx::random::key(8), {300, 50});
  auto dw = [](const Array& x, const Array& y) { return lax::dot_general(x, y, {{0}, {0}, {}, {}}); };
  const Array eager = dw(h, g), jitted = jx::jit(dw)(h, g);
  const Array ref = dw(h.astype(float64), g.astype(float64));
  EXPECT_EQ(eager.to_vector<float>(), jitted.to_vector<float>()) << "jit and eager differ";
  ASSERT_TRUE(kernels::UseKMajorGemm(40, 50, 300));
  std::vector<float> direct(40 * 50);
  kernels::KMajorGemm(static_cast<const float*>(h.data()), 40, static_cast<const float*>(g.data()), 50,
                      direct.data(), 50, 40, 50, 300, 1.0f, false);
  EXPECT_EQ(eager.to_vector<float>(), direct) << "dot_general did not run the K-major kernel";
  const std::vector<float> e = eager.to_vector<float>();
  const std::vector<double> r = ref.to_vector<double>();
  const std::vector<double> mag = dw(numpy::abs(h).astype(float64), numpy::abs(g).astype(float64)).to_vector<double>();
  const double u = std::numeric_limits<float>::epsilon() / 2;
  for (size_t i = 0; i < e.size(); ++i) EXPECT_LE(std::fabs(e[i] - r[i]), (300 + 2) * u * mag[i]) << "element " << i;
}

}  // namespace
}  // namespace jx::gemm_k_major_test

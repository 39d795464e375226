// jnp.linalg: the decompositions against their defining identities (L L^T = A, Q R = A with Q
// orthonormal, U S V^T = A, A V = V diag(w), inv(A) A = I), JAX's documented examples with
// their printed outputs, errors, jit against eager, and gradients against finite
// differences (det, slogdet, solve, inv, norm).
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include <jx/jx.h>

#include "jx/lax/kernels/linalg.h"

namespace jx::linalg_ops_test {
namespace {

namespace jnp = jx::numpy;
namespace la = jx::numpy::linalg;

Array Random(const Shape& shape, uint64_t seed, DType d = float32) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> dist;
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<double> v(static_cast<size_t>(n));
  for (double& x : v) x = dist(rng);
  return jnp::asarray(jnp::array(v, shape), d);
}

// A well-conditioned SPD batch: M M^T + n I.
Array Spd(const Shape& shape, uint64_t seed, DType d = float32) {
  const Array m = Random(shape, seed, d);
  const int64_t n = shape.back();
  return jnp::matmul(m, jnp::matrix_transpose(m), lax::Precision::kHighest) + n * jnp::eye(n, std::nullopt, 0, d);
}

Array Mm(const Array& a, const Array& b) { return jnp::matmul(a, b, lax::Precision::kHighest); }
Array T(const Array& a) { return jnp::matrix_transpose(a); }

void ExpectClose(const Array& got, const Array& want, double tol, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  const std::vector<double> g = jnp::asarray(got, float64).to_vector<double>();
  const std::vector<double> w = jnp::asarray(want, float64).to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) {
    EXPECT_NEAR(g[i], w[i], tol * (1 + std::abs(w[i]))) << what << " element " << i;
  }
}

double Tol(DType d) { return d == float64 ? 1e-10 : 2e-5; }

class LinalgIdentities : public ::testing::TestWithParam<DType> {};

TEST_P(LinalgIdentities, CholeskyReconstructs) {
  const DType d = GetParam();
  const Array a = Spd({3, 5, 5}, 1, d);
  const Array l = la::cholesky(a);
  EXPECT_EQ(l.dtype(), d);
  ExpectClose(Mm(l, T(l)), a, Tol(d), "L L^T");
  ExpectClose(l, jnp::tril(l), 0, "L is lower");
  const Array u = la::cholesky(a, /*upper=*/true);
  ExpectClose(Mm(T(u), u), a, Tol(d), "U^T U");
}

TEST_P(LinalgIdentities, QrReconstructsWithOrthonormalQ) {
  const DType d = GetParam();
  for (const Shape& shape : std::vector<Shape>{{6, 4}, {4, 6}, {2, 5, 5}}) {
    const Array a = Random(shape, 2, d);
    const int64_t m = shape[shape.size() - 2], n = shape.back(), k = std::min(m, n);
    for (const char* mode : {"reduced", "complete"}) {
      auto [q, r] = la::qr(a, mode);
      const int64_t qc = std::string(mode) == "complete" ? m : k;
      EXPECT_EQ(q.shape().back(), qc) << mode;
      ExpectClose(Mm(q, r), a, Tol(d), StrCat("Q R ", mode));
      Shape eye_shape(q.shape().begin(), q.shape().end() - 2);
      eye_shape.insert(eye_shape.end(), {qc, qc});
      ExpectClose(Mm(T(q), q), jnp::broadcast_to(jnp::eye(qc, std::nullopt, 0, d), eye_shape), Tol(d), "Q^T Q");
      ExpectClose(r, jnp::triu(r), 0, "R is upper");
    }
    const la::QRResult r_only = la::qr(a, "r");
    EXPECT_FALSE(r_only.Q.defined());
    EXPECT_EQ(r_only.R.shape()[r_only.R.shape().size() - 2], k);
  }
}

TEST_P(LinalgIdentities, SvdReconstructsWithDescendingValues) {
  const DType d = GetParam();
  // 64x48 takes the divide-and-conquer path (above 16 columns), the others one-sided Jacobi.
  for (const Shape& shape : std::vector<Shape>{{6, 4}, {4, 6}, {3, 5, 5}, {64, 48}}) {
    const Array a = Random(shape, 3, d);
    auto [u, s, vh] = la::svd(a, /*full_matrices=*/false);
    ExpectClose(Mm(u * jnp::expand_dims(s, -2), vh), a, Tol(d) * 5, "U S Vh");
    const std::vector<double> sv = jnp::asarray(s, float64).to_vector<double>();
    const int64_t k = s.shape().back();
    for (size_t i = 0; i + 1 < sv.size(); ++i) {
      if ((i + 1) % static_cast<size_t>(k) != 0) {
        EXPECT_GE(sv[i], sv[i + 1]);
      }
    }
    ExpectClose(la::svd(a, true, /*compute_uv=*/false).S, s, Tol(d), "values only");
    const la::SVDResult full = la::svd(a);
    EXPECT_EQ(full.U.shape().back(), shape[shape.size() - 2]);
    EXPECT_EQ(full.Vh.shape()[full.Vh.shape().size() - 2], shape.back());
  }
}

TEST_P(LinalgIdentities, EighDiagonalizes) {
  const DType d = GetParam();
  const Array a = Spd({2, 6, 6}, 4, d) - 3 * jnp::eye(6, std::nullopt, 0, d);
  auto [w, v] = la::eigh(a);
  ExpectClose(Mm(a, v), v * jnp::expand_dims(w, -2), Tol(d) * 10, "A V = V diag(w)");
  ExpectClose(Mm(T(v), v), jnp::broadcast_to(jnp::eye(6, std::nullopt, 0, d), {2, 6, 6}), Tol(d) * 5, "V^T V");
  ExpectClose(la::eigvalsh(a), w, 0, "eigvalsh");
  // UPLO="U" reads the upper triangle: the same for a symmetric matrix.
  ExpectClose(la::eigh(a, "U").eigenvalues, w, Tol(d) * 10, "UPLO=U");
}

TEST_P(LinalgIdentities, InvSolveDet) {
  const DType d = GetParam();
  const Array a = Random({3, 4, 4}, 5, d) + 4 * jnp::eye(4, std::nullopt, 0, d);
  ExpectClose(Mm(la::inv(a), a), jnp::broadcast_to(jnp::eye(4, std::nullopt, 0, d), {3, 4, 4}), Tol(d) * 10,
              "inv(A) A");
  const Array b = Random({3, 4, 2}, 6, d);
  ExpectClose(Mm(a, la::solve(a, b)), b, Tol(d) * 10, "A solve(A, b)");
  const Array bv = Random({4}, 7, d);
  const Array a0 = jnp::squeeze(lax::slice(a, {0, 0, 0}, {1, 4, 4}), 0);
  ExpectClose(Mm(a0, la::solve(a0, bv)), bv, Tol(d) * 10, "vector b");
  // det = prod of eigenvalues for symmetric a; slogdet agrees with det.
  const Array s = Spd({4, 4}, 8, d) - 6 * jnp::eye(4, std::nullopt, 0, d);
  const Array w = la::eigvalsh(s);
  ExpectClose(la::det(s), jnp::prod(w), Tol(d) * 10, "det = prod(eigenvalues)");
  auto [sign, logabsdet] = la::slogdet(s);
  ExpectClose(sign * jnp::exp(logabsdet), la::det(s), Tol(d) * 10, "sign exp(logabsdet)");
}

TEST_P(LinalgIdentities, MatrixPowerAndPinv) {
  const DType d = GetParam();
  const Array a = Random({3, 3}, 9, d) + 3 * jnp::eye(3, std::nullopt, 0, d);
  ExpectClose(la::matrix_power(a, 3), Mm(Mm(a, a), a), Tol(d) * 10, "a^3");
  ExpectClose(la::matrix_power(a, 0), jnp::eye(3, std::nullopt, 0, d), 0, "a^0");
  ExpectClose(la::matrix_power(a, -2), Mm(la::inv(a), la::inv(a)), Tol(d) * 10, "a^-2");
  const Array tall = Random({5, 3}, 10, d);
  const Array p = la::pinv(tall);
  ExpectClose(Mm(p, tall), jnp::eye(3, std::nullopt, 0, d), Tol(d) * 10, "pinv(A) A");
  ExpectClose(Mm(Mm(tall, p), tall), tall, Tol(d) * 10, "A pinv(A) A");
}

TEST_P(LinalgIdentities, LstsqMatchesNormalEquations) {
  const DType d = GetParam();
  const Array a = Random({6, 3}, 11, d);
  const Array b = Random({6}, 12, d);
  const la::LstsqResult r = la::lstsq(a, b);
  // a^T (a x - b) = 0 at the least-squares solution.
  ExpectClose(Mm(T(a), Mm(a, r.x) - b), jnp::zeros({3}, d), Tol(d) * 20, "normal equations");
  EXPECT_EQ(r.rank.item<int32_t>(), 3);
  const Array resid = b - Mm(a, r.x);
  ExpectClose(r.residuals, jnp::sum(resid * resid, 0, true), Tol(d) * 10, "residuals");
}

INSTANTIATE_TEST_SUITE_P(F32F64, LinalgIdentities, ::testing::Values(float32, float64),
                         [](const ::testing::TestParamInfo<DType>& p) { return std::string(dtype_name(p.param)); });

// https://docs.jax.dev/en/latest/_autosummary/jax.numpy.linalg.norm.html
TEST(LinalgDocs, NormExamples) {
  const Array v = jnp::array({3.f, 4.f, 12.f});
  EXPECT_FLOAT_EQ(la::norm(v).item<float>(), 13.f);
  EXPECT_FLOAT_EQ(la::norm(v, 1).item<float>(), 19.f);
  EXPECT_FLOAT_EQ(la::norm(v, 0).item<float>(), 3.f);
  const Array x = jnp::array({{1.f, 2.f, 3.f}, {4.f, 5.f, 7.f}});
  EXPECT_NEAR(la::norm(x).item<float>(), 10.198039f, 1e-5);
  EXPECT_NEAR(la::norm(x, "nuc").item<float>(), 10.762535f, 1e-5);
  EXPECT_FLOAT_EQ(la::norm(x, 1).item<float>(), 10.f);
  ExpectClose(la::norm(x, {}, 1), jnp::array({3.7416575f, 9.486833f}), 1e-6, "axis=1");
  EXPECT_EQ(la::norm(x).dtype(), float32);
}

TEST(LinalgDocs, NormOrders) {
  const Array x = jnp::array({{1.f, -2.f, 3.f}, {-4.f, 5.f, -7.f}});
  const double inf = INFINITY;
  EXPECT_FLOAT_EQ(la::norm(x, inf).item<float>(), 16.f);    // largest row sum of |x|
  EXPECT_FLOAT_EQ(la::norm(x, -inf).item<float>(), 6.f);
  EXPECT_FLOAT_EQ(la::norm(x, -1).item<float>(), 5.f);      // smallest column sum
  EXPECT_FLOAT_EQ(la::norm(x, "fro").item<float>(), la::norm(x).item<float>());
  const Array s = la::svd(x, false, false).S;
  EXPECT_NEAR(la::norm(x, 2).item<float>(), s.to_vector<float>()[0], 1e-6);
  EXPECT_NEAR(la::norm(x, -2).item<float>(), s.to_vector<float>()[1], 1e-6);
  ExpectClose(la::norm(x, inf, 1), jnp::array({3.f, 7.f}), 0, "vector inf");
  ExpectClose(la::norm(x, -inf, 0), jnp::array({1.f, 2.f, 3.f}), 0, "vector -inf");
  ExpectClose(la::norm(x, 3, 0), jnp::array({std::cbrt(65.f), std::cbrt(133.f), std::cbrt(370.f)}), 1e-6, "p=3");
  EXPECT_EQ(la::norm(x, {}, {}, /*keepdims=*/true).shape(), (Shape{1, 1}));
  EXPECT_EQ(la::norm(x, 1, Axis{0, 1}, true).shape(), (Shape{1, 1}));
  EXPECT_EQ(la::norm(x, "nuc", Axis{0, 1}, true).shape(), (Shape{1, 1}));
  EXPECT_EQ(la::norm(x, 2, 1, true).shape(), (Shape{2, 1}));
  // A batch of matrices over axes (1, 2) and (2, 1): the transposed 1-norm is the inf-norm.
  const Array b = Random({3, 4, 5}, 13);
  ExpectClose(la::norm(b, 1, Axis{2, 1}), la::norm(b, inf, Axis{1, 2}), 1e-6, "axes order");
  // Integers promote to float32.
  EXPECT_EQ(la::norm(jnp::array({3, 4})).dtype(), float32);
  EXPECT_THROW(la::norm(x, "nuc", 0), ValueError);
  EXPECT_THROW(la::norm(x, 3), ValueError);
  EXPECT_THROW(la::norm(b, 2), ValueError);
}

// https://docs.jax.dev/en/latest/_autosummary/jax.numpy.linalg.slogdet.html
TEST(LinalgDocs, SlogdetAndDetExamples) {
  const Array a = jnp::array({{1, 2}, {3, 4}});
  auto [sign, logabsdet] = la::slogdet(a);
  EXPECT_EQ(sign.dtype(), float32);
  EXPECT_FLOAT_EQ(sign.item<float>(), -1.f);
  EXPECT_NEAR(jnp::exp(logabsdet).item<float>(), 2.f, 1e-6);
  EXPECT_NEAR(la::det(jnp::array({{1.f, 2.f}, {3.f, 4.f}})).item<float>(), -2.f, 1e-6);
  // Singular: sign 0, logabsdet -inf; det 0.
  const Array sing = jnp::array({{1.f, 2.f}, {2.f, 4.f}});
  EXPECT_EQ(la::slogdet(sing).sign.item<float>(), 0.f);
  EXPECT_EQ(la::slogdet(sing).logabsdet.item<float>(), -INFINITY);
  EXPECT_EQ(la::det(sing).item<float>(), 0.f);
}

// https://docs.jax.dev/en/latest/_autosummary/jax.numpy.linalg.inv.html
TEST(LinalgDocs, InvExample) {
  const Array a = jnp::array({{1.f, 2.f, 3.f}, {2.f, 4.f, 2.f}, {3.f, 2.f, 1.f}});
  ExpectClose(la::inv(a), jnp::array({{0.f, -0.25f, 0.5f}, {-0.25f, 0.5f, -0.25f}, {0.5f, -0.25f, 0.f}}), 1e-6,
              "inv");
}

// lax.linalg.lu's outputs agree with each other on both kernel paths (getf2 below 32 rows or
// for rectangular matrices, Eigen's blocked LU for larger square ones): a[perm] = L U, and
// applying the pivots' swaps in order to an iota gives perm.
TEST_P(LinalgIdentities, LuPivotsPermutationAndFactors) {
  const DType d = GetParam();
  for (const Shape& shape : std::vector<Shape>{{5, 5}, {6, 4}, {4, 6}, {48, 48}, {2, 40, 40}}) {
    const Array a = Random(shape, 19, d);
    auto [lu, pivots, perm] = lax::linalg::lu(a);
    const int64_t m = shape[shape.size() - 2], n = shape.back(), k = std::min(m, n);
    const int64_t batch = a.size() / (m * n);
    const std::vector<int32_t> piv = pivots.to_vector<int32_t>(), p = perm.to_vector<int32_t>();
    for (int64_t b = 0; b < batch; ++b) {
      std::vector<int32_t> rows(static_cast<size_t>(m));
      std::iota(rows.begin(), rows.end(), 0);
      for (int64_t j = 0; j < k; ++j) std::swap(rows[static_cast<size_t>(j)], rows[static_cast<size_t>(piv[static_cast<size_t>(b * k + j)])]);
      EXPECT_EQ(rows, std::vector<int32_t>(p.begin() + b * m, p.begin() + (b + 1) * m)) << "batch " << b;
    }
    const Array l = jnp::tril(lax::slice(lu, std::vector<int64_t>(shape.size(), 0), [&] {
                                Shape lim = shape;
                                lim.back() = k;
                                return lim;
                              }()), -1) +
                    jnp::eye(m, k, 0, d);
    const Array u = jnp::triu(lax::slice(lu, std::vector<int64_t>(shape.size(), 0), [&] {
      Shape lim = shape;
      lim[lim.size() - 2] = k;
      return lim;
    }()));
    const Array onehot = (jnp::expand_dims(perm, -1) == jnp::arange(m)).astype(d);
    ExpectClose(Mm(l, u), Mm(onehot, a), Tol(d) * 20, StrCat("a[perm] = L U for ", ShapedArray{shape, d}.str()));
  }
}

// https://docs.jax.dev/en/latest/_autosummary/jax.numpy.linalg.svd.html: s = [9.361919, 1.8315067].
TEST(LinalgDocs, SvdExample) {
  const Array x = jnp::array({{1.f, 2.f, 3.f}, {6.f, 5.f, 4.f}});
  auto [u, s, vt] = la::svd(x, /*full_matrices=*/false);
  ExpectClose(s, jnp::array({9.361919f, 1.8315067f}), 1e-6, "s");
  EXPECT_EQ(u.shape(), (Shape{2, 2}));
  EXPECT_EQ(vt.shape(), (Shape{2, 3}));
}

// QR keeps LAPACK's (geqrf's) Householder signs, which JAX code may rely on: the first
// reflection maps a's first column to -sign(a00) ||a[:, 0]|| e0.
TEST(LinalgDocs, QrSignsAsLapack) {
  const Array a = jnp::array({{1.f, 2.f, 3.f, 4.f}, {5.f, 4.f, 2.f, 1.f}, {6.f, 3.f, 1.f, 5.f}});
  auto [q, r] = la::qr(a);
  const float norm0 = std::sqrt(62.f);
  EXPECT_NEAR(r.item<float>({0, 0}), -norm0, 1e-5);
  for (int64_t i = 0; i < 3; ++i) EXPECT_NEAR(q.item<float>({i, 0}), -a.item<float>({i, 0}) / norm0, 1e-6);
}

TEST(LinalgErrors, NameTheFunctionAndShapes) {
  try {
    la::inv(jnp::ones({2, 3}));
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("inv"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("f32[2,3]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(la::qr(jnp::ones({2, 2}), "economic"), ValueError);
  EXPECT_THROW(la::eigh(jnp::ones({2, 2}), "X"), ValueError);
  EXPECT_THROW(lax::linalg::cholesky(jnp::ones({2, 2}, float16)), TypeError);
  EXPECT_THROW(lax::linalg::triangular_solve(jnp::ones({3, 3}), jnp::ones({2, 2}), {.left_side = true}), ShapeError);
}

// Not positive definite: NaNs, as JAX's cholesky.
TEST(LinalgErrors, CholeskyOfIndefiniteIsNan) {
  const Array l = la::cholesky(jnp::array({{1.f, 2.f}, {2.f, 1.f}}));
  for (float v : l.to_vector<float>()) EXPECT_TRUE(std::isnan(v));
}

TEST(LinalgJit, MatchesEager) {
  const Array a = Spd({2, 4, 4}, 14);
  auto f = [](const Array& x) {
    auto [sign, logabsdet] = la::slogdet(x);
    return std::vector<Array>{la::inv(x), la::cholesky(x), sign * logabsdet, la::norm(x, "nuc", Axis{1, 2}),
                              la::eigvalsh(x)};
  };
  const std::vector<Array> eager = f(a);
  const std::vector<Array> jitted = jx::jit(f)(a);
  ASSERT_EQ(eager.size(), jitted.size());
  for (size_t i = 0; i < eager.size(); ++i) ExpectClose(jitted[i], eager[i], 0, StrCat("output ", i));
}

// Gradients through lu (det, slogdet, solve, inv) and svd (nuclear norm) against central
// differences in float64.
TEST(LinalgGrad, MatchesFiniteDifferences) {
  const Array a = Random({3, 3}, 15, float64) + 3 * jnp::eye(3, std::nullopt, 0, float64);
  const Array b = Random({3}, 16, float64);
  const std::vector<std::pair<std::string, std::function<Array(const Array&)>>> fns = {
      {"det", [](const Array& x) { return la::det(x); }},
      {"slogdet", [](const Array& x) { return la::slogdet(x).logabsdet; }},
      {"solve", [b](const Array& x) { return jnp::sum(la::solve(x, b) * b); }},
      {"inv", [](const Array& x) { return jnp::sum(la::inv(x) * jnp::reshape(jnp::arange(9.0), {3, 3})); }},
      {"nuc", [](const Array& x) { return la::norm(x, "nuc"); }},
      {"eigvalsh", [](const Array& x) { return jnp::sum(la::eigvalsh(x) * jnp::array({1.0, 2.0, 3.0})); }},
      {"cholesky", [](const Array& x) { return jnp::sum(la::cholesky(jnp::matmul(x, T(x))) * jnp::reshape(jnp::arange(9.0), {3, 3})); }},
  };
  for (const auto& [name, f] : fns) {
    const std::vector<double> g = jx::grad(f)(a).to_vector<double>();
    const std::vector<double> x0 = a.to_vector<double>();
    for (size_t i = 0; i < x0.size(); ++i) {
      std::vector<double> xp = x0, xm = x0;
      const double h = 1e-6;
      xp[i] += h;
      xm[i] -= h;
      const double fd = (f(jnp::array(xp, {3, 3})).item<double>() - f(jnp::array(xm, {3, 3})).item<double>()) / (2 * h);
      EXPECT_NEAR(g[i], fd, 1e-6 * (1 + std::abs(fd))) << name << " element " << i;
    }
  }
}

// jnp.linalg.det's custom jvp (JAX's _det_jvp / _cofactor_solve, from jax-ml/jax#2809): the
// gradient at a singular matrix of rank n - 1 is its cofactor matrix, not NaN; at rank
// n - 2 it is zero (to rounding: the LU of a rank-1 matrix in float64 leaves 1e-14 pivots, not
// exact zeros). The matrices are JAX's testDetGradOfSingularMatrixCorank1/Corank2.
TEST(LinalgGrad, DetAtSingularMatrices) {
  const Array a = jnp::array(std::vector<double>{50, -30, 45, -30, 90, -81, 45, -81, 81}, {3, 3});
  std::vector<double> cofactor(9);
  const std::vector<double> m = a.to_vector<double>();
  auto at = [&](int i, int j) { return m[static_cast<size_t>(3 * i + j)]; };
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) {
      const int r0 = i == 0 ? 1 : 0, r1 = i == 2 ? 1 : 2, c0 = j == 0 ? 1 : 0, c1 = j == 2 ? 1 : 2;
      const double minor = at(r0, c0) * at(r1, c1) - at(r0, c1) * at(r1, c0);
      cofactor[static_cast<size_t>(3 * i + j)] = ((i + j) % 2 == 0 ? 1 : -1) * minor;
    }
  }
  EXPECT_NEAR(la::det(a).item<double>(), 0.0, 1e-9);
  const std::vector<double> g = jx::grad([](const Array& x) { return la::det(x); })(a).to_vector<double>();
  for (size_t k = 0; k < 9; ++k) {
    EXPECT_TRUE(std::isfinite(g[k])) << k;
    EXPECT_NEAR(g[k], cofactor[k], 1e-6 * (1 + std::abs(cofactor[k]))) << k;
  }
  const Array b = jnp::array(std::vector<double>{36, -42, 18, -42, 49, -21, 18, -21, 9}, {3, 3});
  for (double v : jx::grad([](const Array& x) { return la::det(x); })(b).to_vector<double>()) EXPECT_NEAR(v, 0.0, 1e-9);
  // Exact zero pivots (rank 0): the solve with the modified U is not finite, so zeros.
  for (double v : jx::grad([](const Array& x) { return la::det(x); })(jnp::zeros({3, 3}, float64)).to_vector<double>()) {
    EXPECT_EQ(v, 0.0);
  }
  // Batched, and the 1x1 case (the derivative of det [x] is 1).
  const Array batch = jnp::stack({a, jnp::eye(3, std::nullopt, 0, float64)});
  const Array gb = jx::grad([](const Array& x) { return jnp::sum(la::det(x)); })(batch);
  EXPECT_NEAR(gb.to_vector<double>()[1], cofactor[1], 1e-6 * (1 + std::abs(cofactor[1])));
  EXPECT_EQ(jx::grad([](const Array& x) { return la::det(x); })(jnp::array(std::vector<double>{4}, {1, 1})).item<double>(),
            1.0);
}

// The backend_config the lowering writes and the CPU backend reads: every flag round-trips,
// and anything else is refused (the backend then declines the instruction, loudly).
TEST(LinalgCustomCall, ConfigRoundTripsAndRejectsMalformed) {
  namespace k = lax::kernels;
  k::LinalgCall call;
  call.op = k::LinalgOp::kTriangularSolve;
  call.left_side = true;
  call.transpose_a = true;
  call.unit_diagonal = true;
  call.compute_uv = false;
  const std::string config = k::EncodeLinalgCall(call);
  const std::optional<k::LinalgCall> back = k::DecodeLinalgCall("jx_linalg_triangular_solve", config);
  ASSERT_TRUE(back.has_value()) << config;
  EXPECT_EQ(back->op, k::LinalgOp::kTriangularSolve);
  EXPECT_TRUE(back->left_side && back->transpose_a && back->unit_diagonal);
  EXPECT_FALSE(back->lower || back->conjugate_a || back->full_matrices || back->compute_uv);
  EXPECT_FALSE(k::DecodeLinalgCall("jx_linalg_nope", config).has_value());
  EXPECT_FALSE(k::DecodeLinalgCall("jx_linalg_qr", config + ",extra=1").has_value());
  EXPECT_FALSE(k::DecodeLinalgCall("jx_linalg_qr", "lower=1").has_value());
  EXPECT_EQ(k::LinalgCustomCallTarget(k::LinalgOp::kSvd), "jx_linalg_svd");
}

// Empty matrices and empty batches: the factors that are not empty are what LAPACK gives
// (identity permutations and singular vectors), eagerly and under jit alike.
TEST(LinalgEmpty, EagerAndJitAgree) {
  auto f = [](const Array& x) {
    auto [lu, pivots, perm] = lax::linalg::lu(x);
    const lax::linalg::SvdResult s = lax::linalg::svd(x);
    auto [q, r] = lax::linalg::qr(x);
    return std::vector<Array>{lu, pivots, perm, s.u, s.s, s.vh, q, r};
  };
  for (const Shape& shape : std::vector<Shape>{{3, 0}, {0, 2}, {0, 3, 3}}) {
    const Array x = jnp::zeros(shape);
    const std::vector<Array> eager = f(x), jitted = jx::jit(f)(x);
    for (size_t i = 0; i < eager.size(); ++i) {
      EXPECT_EQ(eager[i].to_vector<double>(), jitted[i].to_vector<double>()) << ShapedArray{shape, float32}.str() << " output " << i;
    }
    if (shape == Shape{3, 0}) {
      EXPECT_EQ(eager[2].to_vector<int32_t>(), (std::vector<int32_t>{0, 1, 2}));  // permutation
      ExpectClose(eager[3], jnp::eye(3), 0, "u of [3, 0]");
      ExpectClose(eager[6], jnp::eye(3), 0, "q of [3, 0]");
    }
    if (shape == Shape{0, 2}) ExpectClose(eager[5], jnp::eye(2), 0, "vh of [0, 2]");
  }
  EXPECT_EQ(la::cholesky(jnp::zeros({0, 2, 2})).shape(), (Shape{0, 2, 2}));
  EXPECT_EQ(la::eigh(jnp::zeros({0, 0})).eigenvalues.shape(), (Shape{0}));
}

// vmap of a jnp.linalg function batches the primitives over a new leading dim.
TEST(LinalgVmap, SolveMatchesLoop) {
  const Array a = Random({3, 4, 4}, 17) + 4 * jnp::eye(4);
  const Array b = Random({3, 4}, 18);
  const Array got = jx::vmap([](const Array& x, const Array& y) { return la::solve(x, y); })(a, b);
  for (int64_t i = 0; i < 3; ++i) {
    const Array ai = jnp::squeeze(lax::slice(a, {i, 0, 0}, {i + 1, 4, 4}), 0);
    const Array bi = jnp::squeeze(lax::slice(b, {i, 0}, {i + 1, 4}), 0);
    ExpectClose(jnp::squeeze(lax::slice(got, {i, 0}, {i + 1, 4}), 0), la::solve(ai, bi), 1e-6, StrCat("example ", i));
  }
}

}  // namespace
}  // namespace jx::linalg_ops_test

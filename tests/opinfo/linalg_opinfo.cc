// opinfo records for lax.linalg: cholesky, triangular_solve, lu, qr, eigh, svd, on float32
// and float64, single matrices, rectangular ones and batches.
//
// Samples are well conditioned by construction inside each sample's op, so that every
// column's inputs (the vmap column's reversed and rolled variants, finite-difference
// perturbations) stay so: cholesky factors the diagonally dominant (x + x^T)/2 + 2n I, and
// triangular_solve solves with a + 4 I for entries of a in [-1, 1]. Elementwise ops only, so
// the TPU column compares the custom-call itself, not an MXU product. Decompositions unique
// only up to signs are made unique the way the references are: QR with diag(R) >= 0, eigh and
// svd with the largest-magnitude entry of each eigenvector / left singular vector positive
// (a one-hot mask and a sum, no gather). The references are textbook float64 algorithms:
// Cholesky-Banachiewicz, substitution, getf2 partial pivoting, Gram-Schmidt with
// reorthogonalization, and cyclic Jacobi rotations for eigh and svd (the Gram matrix).
#include <algorithm>
#include <cmath>
#include <numeric>

#include "jx/compiler/hlo/hlo_evaluator.h"
#include "jx/lax/kernels/linalg.h"
#include "opinfo.h"

namespace jx::opinfo::linalg_opinfo {
namespace {

namespace jnp = jx::numpy;
namespace linalg = jx::lax::linalg;

// A dense float64 matrix for the references.
struct Mat {
  int64_t rows = 0, cols = 0;
  std::vector<double> v;
  Mat(int64_t r, int64_t c) : rows(r), cols(c), v(static_cast<size_t>(r * c), 0.0) {}
  double& operator()(int64_t i, int64_t j) { return v[static_cast<size_t>(i * cols + j)]; }
  double operator()(int64_t i, int64_t j) const { return v[static_cast<size_t>(i * cols + j)]; }
};

int64_t BatchOf(const Shape& s) {
  int64_t b = 1;
  for (size_t i = 0; i + 2 < s.size(); ++i) b *= s[i];
  return b;
}
Shape Lead(const Shape& s, std::initializer_list<int64_t> tail) {
  Shape out(s.begin(), s.end() - 2);
  out.insert(out.end(), tail.begin(), tail.end());
  return out;
}
Mat MatrixAt(const RefArray& x, int64_t b) {
  const int64_t r = x.shape[x.shape.size() - 2], c = x.shape.back();
  Mat m(r, c);
  std::copy_n(x.data.begin() + b * r * c, r * c, m.v.begin());
  return m;
}
void Store(RefArray& out, int64_t b, const std::vector<double>& v) {
  std::copy(v.begin(), v.end(), out.data.begin() + b * static_cast<int64_t>(v.size()));
}
RefArray Zeros(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return RefArray{s, std::vector<double>(static_cast<size_t>(n), 0.0)};
}

// ---- the well-conditioned inputs, in jx and in the references ----

Array DominantSpd(const Array& x) {
  const int64_t n = x.shape().back();
  return (x + jnp::matrix_transpose(x)) / 2 + (2.0 * static_cast<double>(n)) * jnp::eye(n, std::nullopt, 0, x.dtype());
}
Mat DominantSpd(const Mat& x) {
  Mat s(x.rows, x.cols);
  for (int64_t i = 0; i < x.rows; ++i) {
    for (int64_t j = 0; j < x.cols; ++j) s(i, j) = (x(i, j) + x(j, i)) / 2 + (i == j ? 2.0 * static_cast<double>(x.rows) : 0);
  }
  return s;
}

// ---- sign conventions (unique factors) ----

// Columns of v [..., n, k] times the sign of their largest-magnitude entry; also returns the
// signs [..., 1, k] so paired factors can follow.
std::pair<Array, Array> PositiveColumns(const Array& v) {
  const Array mag = jnp::abs(v);
  const Array is_max = mag == jnp::max(mag, -2, /*keepdims=*/true);
  const Array pick = jnp::sum(jnp::where(is_max, v, 0), -2, /*keepdims=*/true);
  const Array sign = jnp::where(pick < 0, -1, 1).astype(v.dtype());
  return {v * sign, sign};
}
std::vector<double> PositiveColumns(Mat& v) {
  std::vector<double> signs(static_cast<size_t>(v.cols), 1.0);
  for (int64_t j = 0; j < v.cols; ++j) {
    int64_t best = 0;
    for (int64_t i = 1; i < v.rows; ++i) {
      if (std::abs(v(i, j)) > std::abs(v(best, j))) best = i;
    }
    if (v(best, j) < 0) {
      signs[static_cast<size_t>(j)] = -1;
      for (int64_t i = 0; i < v.rows; ++i) v(i, j) = -v(i, j);
    }
  }
  return signs;
}

// ---- float64 references ----

Mat RefCholesky(const Mat& a) {
  const int64_t n = a.rows;
  Mat l(n, n);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j <= i; ++j) {
      double s = a(i, j);
      for (int64_t k = 0; k < j; ++k) s -= l(i, k) * l(j, k);
      l(i, j) = i == j ? std::sqrt(s) : s / l(j, j);
    }
  }
  return l;
}

// op(a) x = b (left) or x op(a) = b, reading a's triangle; by substitution on op(a)'s triangle.
Mat RefTriangularSolve(const Mat& a, const Mat& b, const linalg::TriangularSolveOptions& o) {
  const int64_t k = a.rows;
  Mat t(k, k);  // op(a) restricted to its triangle
  for (int64_t i = 0; i < k; ++i) {
    for (int64_t j = 0; j < k; ++j) {
      const int64_t r = o.transpose_a ? j : i, c = o.transpose_a ? i : j;  // element of a behind op(a)(i, j)
      const bool in_triangle = o.lower ? r >= c : r <= c;
      t(i, j) = r == c && o.unit_diagonal ? 1.0 : in_triangle ? a(r, c) : 0.0;
    }
  }
  const bool lower = o.lower != o.transpose_a;
  // Left: t x = b column by column. Right: x t = b <=> t^T x^T = b^T, row by row.
  Mat x(b.rows, b.cols);
  const int64_t systems = o.left_side ? b.cols : b.rows;
  for (int64_t s = 0; s < systems; ++s) {
    auto rhs = [&](int64_t i) { return o.left_side ? b(i, s) : b(s, i); };
    auto sol = [&](int64_t i) -> double& { return o.left_side ? x(i, s) : x(s, i); };
    auto coef = [&](int64_t i, int64_t j) { return o.left_side ? t(i, j) : t(j, i); };
    const bool fwd = o.left_side ? lower : !lower;
    for (int64_t step = 0; step < k; ++step) {
      const int64_t i = fwd ? step : k - 1 - step;
      double v = rhs(i);
      for (int64_t j = 0; j < k; ++j) {
        if (j != i && (fwd ? j < i : j > i)) v -= coef(i, j) * sol(j);
      }
      sol(i) = v / coef(i, i);
    }
  }
  return x;
}

struct RefLuResult {
  Mat lu;
  std::vector<double> pivots, perm;
};
RefLuResult RefLu(Mat a) {
  const int64_t m = a.rows, n = a.cols, k = std::min(m, n);
  RefLuResult r{a, {}, {}};
  Mat& A = r.lu;
  for (int64_t i = 0; i < m; ++i) r.perm.push_back(static_cast<double>(i));
  for (int64_t j = 0; j < k; ++j) {
    int64_t p = j;
    for (int64_t i = j + 1; i < m; ++i) {
      if (std::abs(A(i, j)) > std::abs(A(p, j))) p = i;
    }
    r.pivots.push_back(static_cast<double>(p));
    if (p != j) {
      for (int64_t c = 0; c < n; ++c) std::swap(A(j, c), A(p, c));
      std::swap(r.perm[static_cast<size_t>(j)], r.perm[static_cast<size_t>(p)]);
    }
    for (int64_t i = j + 1; i < m; ++i) {
      if (A(j, j) != 0) A(i, j) /= A(j, j);
      for (int64_t c = j + 1; c < n; ++c) A(i, c) -= A(i, j) * A(j, c);
    }
  }
  return r;
}

// Reduced (or, for m <= n, complete) QR by Gram-Schmidt with one reorthogonalization pass:
// q [m, k] orthonormal, r = q^T a [k, n] upper with a nonnegative diagonal.
std::pair<Mat, Mat> RefQr(const Mat& a) {
  const int64_t m = a.rows, n = a.cols, k = std::min(m, n);
  Mat q(m, k), r(k, n);
  for (int64_t j = 0; j < k; ++j) {
    std::vector<double> v(static_cast<size_t>(m));
    for (int64_t i = 0; i < m; ++i) v[static_cast<size_t>(i)] = a(i, j);
    for (int pass = 0; pass < 2; ++pass) {
      for (int64_t p = 0; p < j; ++p) {
        double d = 0;
        for (int64_t i = 0; i < m; ++i) d += q(i, p) * v[static_cast<size_t>(i)];
        for (int64_t i = 0; i < m; ++i) v[static_cast<size_t>(i)] -= d * q(i, p);
      }
    }
    double norm = 0;
    for (double x : v) norm += x * x;
    norm = std::sqrt(norm);
    for (int64_t i = 0; i < m; ++i) q(i, j) = v[static_cast<size_t>(i)] / norm;
  }
  for (int64_t i = 0; i < k; ++i) {
    for (int64_t j = i; j < n; ++j) {
      double d = 0;
      for (int64_t p = 0; p < m; ++p) d += q(p, i) * a(p, j);
      r(i, j) = d;
    }
  }
  return {q, r};
}

// Cyclic Jacobi: eigenvalues ascending and eigenvectors (columns) of the symmetric s.
std::pair<std::vector<double>, Mat> RefEigh(Mat s) {
  const int64_t n = s.rows;
  Mat v(n, n);
  for (int64_t i = 0; i < n; ++i) v(i, i) = 1;
  for (int sweep = 0; sweep < 100; ++sweep) {
    double off = 0;
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = i + 1; j < n; ++j) off += s(i, j) * s(i, j);
    }
    if (off < 1e-300) break;
    for (int64_t p = 0; p < n; ++p) {
      for (int64_t q = p + 1; q < n; ++q) {
        if (s(p, q) == 0) continue;
        const double theta = (s(q, q) - s(p, p)) / (2 * s(p, q));
        const double t = (theta >= 0 ? 1 : -1) / (std::abs(theta) + std::sqrt(theta * theta + 1));
        const double c = 1 / std::sqrt(t * t + 1), sn = t * c;
        for (int64_t k = 0; k < n; ++k) {  // s := J^T s J, v := v J
          const double skp = s(k, p), skq = s(k, q);
          s(k, p) = c * skp - sn * skq;
          s(k, q) = sn * skp + c * skq;
        }
        for (int64_t k = 0; k < n; ++k) {
          const double spk = s(p, k), sqk = s(q, k);
          s(p, k) = c * spk - sn * sqk;
          s(q, k) = sn * spk + c * sqk;
        }
        for (int64_t k = 0; k < n; ++k) {
          const double vkp = v(k, p), vkq = v(k, q);
          v(k, p) = c * vkp - sn * vkq;
          v(k, q) = sn * vkp + c * vkq;
        }
      }
    }
  }
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return s(a, a) < s(b, b); });
  std::vector<double> w;
  Mat sorted(n, n);
  for (int64_t j = 0; j < n; ++j) {
    const int64_t o = order[static_cast<size_t>(j)];
    w.push_back(s(o, o));
    for (int64_t i = 0; i < n; ++i) sorted(i, j) = v(i, o);
  }
  return {w, sorted};
}

// Reduced SVD from the Jacobi eigendecomposition of the smaller Gram matrix: s descending,
// u [m, k] with positive-largest columns, vt [k, n] with the matching signs.
struct RefSvdResult {
  std::vector<double> s;
  Mat u, vt;
};
RefSvdResult RefSvd(const Mat& a) {
  const int64_t m = a.rows, n = a.cols, k = std::min(m, n);
  const bool tall = m >= n;
  Mat g(k, k);  // a^T a (tall) or a a^T
  for (int64_t i = 0; i < k; ++i) {
    for (int64_t j = 0; j < k; ++j) {
      double d = 0;
      for (int64_t p = 0; p < (tall ? m : n); ++p) d += tall ? a(p, i) * a(p, j) : a(i, p) * a(j, p);
      g(i, j) = d;
    }
  }
  auto [w, e] = RefEigh(g);
  RefSvdResult r{std::vector<double>(static_cast<size_t>(k)), Mat(m, k), Mat(k, n)};
  for (int64_t j = 0; j < k; ++j) {
    const int64_t src = k - 1 - j;  // descending
    const double sv = std::sqrt(std::max(0.0, w[static_cast<size_t>(src)]));
    r.s[static_cast<size_t>(j)] = sv;
    if (tall) {  // v = e, u = a v / s
      for (int64_t i = 0; i < n; ++i) r.vt(j, i) = e(i, src);
      for (int64_t i = 0; i < m; ++i) {
        double d = 0;
        for (int64_t p = 0; p < n; ++p) d += a(i, p) * e(p, src);
        r.u(i, j) = d / sv;
      }
    } else {  // u = e, v = a^T u / s
      for (int64_t i = 0; i < m; ++i) r.u(i, j) = e(i, src);
      for (int64_t i = 0; i < n; ++i) {
        double d = 0;
        for (int64_t p = 0; p < m; ++p) d += a(p, i) * e(p, src);
        r.vt(j, i) = d / sv;
      }
    }
  }
  const std::vector<double> signs = PositiveColumns(r.u);
  for (int64_t j = 0; j < k; ++j) {
    for (int64_t i = 0; i < n; ++i) r.vt(j, i) *= signs[static_cast<size_t>(j)];
  }
  return r;
}

// ---- records ----

Tolerance LinalgTolerance(DType d) {
  // Factorizations of matrices with condition numbers up to ~10-100: the float32 kernels
  // differ from exact by a few hundred ulps of the largest entry.
  if (d == float32) return {5e-5, 5e-5};
  return {1e-10, 1e-10};
}

const std::vector<Shape>& SquareShapes() {
  static const std::vector<Shape> shapes = {{1, 1}, {3, 3}, {5, 5}, {2, 4, 4}, {2, 1, 3, 3}};
  return shapes;
}
const std::vector<Shape>& RectangularShapes() {
  static const std::vector<Shape> shapes = {{1, 1}, {4, 4}, {5, 3}, {3, 5}, {2, 4, 3}, {2, 3, 4}};
  return shapes;
}

OpInfo LinalgRecord(std::string name, std::function<std::vector<Sample>(DType, std::mt19937_64&)> samples) {
  OpInfo info;
  info.name = std::move(name);
  info.dtypes = {float32, float64};
  info.tolerance = LinalgTolerance;
  info.samples = std::move(samples);
  return info;
}

Sample MakeSample(std::string description, std::vector<Array> args, std::vector<DType> out_dtypes) {
  Sample s;
  s.description = std::move(description);
  s.args = std::move(args);
  s.out_dtypes = std::move(out_dtypes);
  return s;
}

JX_OPINFO(cholesky) {
  return LinalgRecord("cholesky", [](DType d, std::mt19937_64& rng) {
    std::vector<Sample> out;
    for (const Shape& shape : SquareShapes()) {
      Sample s = MakeSample(ShapedArray{shape, d}.str(), {RandomArray(rng, shape, d, -1, 1)}, {d});
      s.op = [](const std::vector<Array>& a) { return std::vector<Array>{linalg::cholesky(DominantSpd(a[0]))}; };
      s.reference = [](const std::vector<RefArray>& a) {
        RefArray out = Zeros(a[0].shape);
        for (int64_t b = 0; b < BatchOf(a[0].shape); ++b) Store(out, b, RefCholesky(DominantSpd(MatrixAt(a[0], b))).v);
        return std::vector<RefArray>{out};
      };
      out.push_back(std::move(s));
    }
    return out;
  });
}

JX_OPINFO(triangular_solve) {
  return LinalgRecord("triangular_solve", [](DType d, std::mt19937_64& rng) {
    std::vector<Sample> out;
    struct Case {
      Shape b;
      linalg::TriangularSolveOptions o;
    };
    const std::vector<Case> cases = {
        {{4, 3}, {.left_side = true, .lower = true}},
        {{4, 3}, {.left_side = true, .lower = false, .transpose_a = true}},
        {{3, 4}, {.left_side = false, .lower = true}},
        {{3, 4}, {.left_side = false, .lower = false, .transpose_a = true, .unit_diagonal = true}},
        {{4, 1}, {.left_side = true, .lower = true, .unit_diagonal = true}},
        {{2, 5, 2}, {.left_side = true, .lower = false}},
        {{2, 2, 5}, {.left_side = false, .lower = true, .transpose_a = true, .conjugate_a = true}},
    };
    for (const Case& c : cases) {
      const int64_t k = c.o.left_side ? c.b[c.b.size() - 2] : c.b.back();
      const Shape a_shape = Lead(c.b, {k, k});
      const linalg::TriangularSolveOptions o = c.o;
      Sample s = MakeSample(StrCat("a=", ShapedArray{a_shape, d}.str(), " b=", ShapedArray{c.b, d}.str(),
                                   " left_side=", o.left_side, " lower=", o.lower, " transpose_a=", o.transpose_a,
                                   " unit_diagonal=", o.unit_diagonal),
                            {RandomArray(rng, a_shape, d, -1, 1), RandomArray(rng, c.b, d)}, {d});
      s.op = [o](const std::vector<Array>& a) {
        const int64_t n = a[0].shape().back();
        return std::vector<Array>{linalg::triangular_solve(a[0] + 4 * jnp::eye(n, std::nullopt, 0, a[0].dtype()), a[1], o)};
      };
      s.reference = [o](const std::vector<RefArray>& a) {
        RefArray out = Zeros(a[1].shape);
        for (int64_t b = 0; b < BatchOf(a[1].shape); ++b) {
          Mat m = MatrixAt(a[0], b);
          for (int64_t i = 0; i < m.rows; ++i) m(i, i) += 4;
          Store(out, b, RefTriangularSolve(m, MatrixAt(a[1], b), o).v);
        }
        return std::vector<RefArray>{out};
      };
      out.push_back(std::move(s));
    }
    return out;
  });
}

JX_OPINFO(lu) {
  return LinalgRecord("lu", [](DType d, std::mt19937_64& rng) {
    std::vector<Sample> out;
    for (const Shape& shape : RectangularShapes()) {
      Sample s = MakeSample(ShapedArray{shape, d}.str(), {RandomArray(rng, shape, d)}, {d, int32, int32});
      s.op = [](const std::vector<Array>& a) {
        auto [lu, pivots, perm] = linalg::lu(a[0]);
        return std::vector<Array>{lu, pivots, perm};
      };
      s.reference = [](const std::vector<RefArray>& a) {
        const Shape& sh = a[0].shape;
        const int64_t m = sh[sh.size() - 2], n = sh.back();
        RefArray lu = Zeros(sh), piv = Zeros(Lead(sh, {std::min(m, n)})), perm = Zeros(Lead(sh, {m}));
        for (int64_t b = 0; b < BatchOf(sh); ++b) {
          const RefLuResult r = RefLu(MatrixAt(a[0], b));
          Store(lu, b, r.lu.v);
          Store(piv, b, r.pivots);
          Store(perm, b, r.perm);
        }
        return std::vector<RefArray>{lu, piv, perm};
      };
      out.push_back(std::move(s));
    }
    return out;
  });
}

JX_OPINFO(qr) {
  return LinalgRecord("qr", [](DType d, std::mt19937_64& rng) {
    std::vector<Sample> out;
    for (const Shape& shape : RectangularShapes()) {
      const int64_t m = shape[shape.size() - 2], n = shape.back();
      // Reduced factors everywhere; full ones where they are unique (m <= n: the same).
      for (bool full : {false, true}) {
        if (full && m > n) continue;
        Sample s = MakeSample(StrCat(ShapedArray{shape, d}.str(), " full_matrices=", full),
                              {RandomArray(rng, shape, d)}, {d, d});
        // The derivative exists for the reduced factors of m >= n (JAX's qr_jvp_rule).
        s.derivatives_defined = m >= n && (!full || m == n);
        s.op = [full](const std::vector<Array>& a) {
          auto [q, r] = linalg::qr(a[0], full);
          // diag(R) >= 0: flip Q's columns and R's rows by the signs of R's diagonal.
          const Array sign = jnp::where(jnp::diagonal(r, 0, -2, -1) < 0, -1, 1).astype(q.dtype());
          return std::vector<Array>{q * jnp::expand_dims(sign, -2), r * jnp::expand_dims(sign, -1)};
        };
        s.reference = [](const std::vector<RefArray>& a) {
          const Shape& sh = a[0].shape;
          const int64_t mm = sh[sh.size() - 2], nn = sh.back(), k = std::min(mm, nn);
          RefArray q = Zeros(Lead(sh, {mm, k})), r = Zeros(Lead(sh, {k, nn}));
          for (int64_t b = 0; b < BatchOf(sh); ++b) {
            auto [qm, rm] = RefQr(MatrixAt(a[0], b));
            Store(q, b, qm.v);
            Store(r, b, rm.v);
          }
          return std::vector<RefArray>{q, r};
        };
        out.push_back(std::move(s));
      }
    }
    return out;
  });
}

JX_OPINFO(eigh) {
  return LinalgRecord("eigh", [](DType d, std::mt19937_64& rng) {
    std::vector<Sample> out;
    for (const Shape& shape : SquareShapes()) {
      for (bool lower : {true, false}) {
        if (!lower && shape.size() > 2) continue;
        Sample s = MakeSample(StrCat(ShapedArray{shape, d}.str(), " lower=", lower), {RandomArray(rng, shape, d)},
                              {d, d});
        s.op = [lower](const std::vector<Array>& a) {
          auto [v, w] = linalg::eigh(a[0], lower);
          return std::vector<Array>{PositiveColumns(v).first, w};
        };
        s.reference = [](const std::vector<RefArray>& a) {
          const Shape& sh = a[0].shape;
          RefArray v = Zeros(sh), w = Zeros(Lead(sh, {sh.back()}));
          for (int64_t b = 0; b < BatchOf(sh); ++b) {
            const Mat x = MatrixAt(a[0], b);
            Mat sym(x.rows, x.cols);
            for (int64_t i = 0; i < x.rows; ++i) {
              for (int64_t j = 0; j < x.cols; ++j) sym(i, j) = (x(i, j) + x(j, i)) / 2;
            }
            auto [wv, vm] = RefEigh(sym);
            PositiveColumns(vm);
            Store(v, b, vm.v);
            Store(w, b, wv);
          }
          return std::vector<RefArray>{v, w};
        };
        out.push_back(std::move(s));
      }
    }
    return out;
  });
}

JX_OPINFO(svd) {
  return LinalgRecord("svd", [](DType d, std::mt19937_64& rng) {
    std::vector<Sample> out;
    for (const Shape& shape : RectangularShapes()) {
      const int64_t m = shape[shape.size() - 2], n = shape.back();
      for (int variant = 0; variant < 3; ++variant) {
        // 0: reduced factors; 1: values only; 2: full factors of a square matrix (unique then).
        if (variant == 2 && m != n) continue;
        const bool compute_uv = variant != 1, full = variant == 2;
        Sample s = MakeSample(StrCat(ShapedArray{shape, d}.str(), " full_matrices=", full, " compute_uv=", compute_uv),
                              {RandomArray(rng, shape, d)}, compute_uv ? std::vector<DType>{d, d, d} : std::vector<DType>{d});
        s.op = [compute_uv, full](const std::vector<Array>& a) {
          const linalg::SvdResult r = linalg::svd(a[0], full, compute_uv);
          if (!compute_uv) return std::vector<Array>{r.s};
          auto [u, sign] = PositiveColumns(r.u);
          return std::vector<Array>{u, r.s, r.vh * jnp::matrix_transpose(sign)};
        };
        s.reference = [compute_uv](const std::vector<RefArray>& a) {
          const Shape& sh = a[0].shape;
          const int64_t mm = sh[sh.size() - 2], nn = sh.back(), k = std::min(mm, nn);
          RefArray u = Zeros(Lead(sh, {mm, k})), sv = Zeros(Lead(sh, {k})), vt = Zeros(Lead(sh, {k, nn}));
          for (int64_t b = 0; b < BatchOf(sh); ++b) {
            const RefSvdResult r = RefSvd(MatrixAt(a[0], b));
            Store(u, b, r.u.v);
            Store(sv, b, r.s);
            Store(vt, b, r.vt.v);
          }
          if (!compute_uv) return std::vector<RefArray>{sv};
          return std::vector<RefArray>{u, sv, vt};
        };
        out.push_back(std::move(s));
      }
    }
    return out;
  });
}

// The reference evaluator treats custom-calls as opaque (XLA's does too): the lowering column
// evaluates the linalg custom-calls with the kernel library, through the backend_config the
// lowering wrote, so it checks the encoding, operand order and tuple unpacking around them.
absl::StatusOr<hlo::Literal> EvaluateLinalgCustomCall(const hlo::HloInstruction& instr,
                                                      absl::Span<const hlo::Literal* const> operands) {
  const std::optional<lax::kernels::LinalgCall> call =
      lax::kernels::DecodeLinalgCall(instr.custom_call_target(), instr.backend_config());
  if (!call) return absl::InvalidArgumentError(StrCat("malformed linalg custom-call: ", instr.ToString()));
  const DType dtype = operands[0]->shape().element_type() == hlo::F64 ? float64 : float32;
  std::vector<Shape> shapes;
  std::vector<const void*> ins;
  for (const hlo::Literal* op : operands) {
    shapes.emplace_back(op->shape().dimensions().begin(), op->shape().dimensions().end());
    ins.push_back(op->untyped_data().data());
  }
  const bool tuple = instr.shape().IsTuple();
  std::vector<hlo::Literal> results;
  if (tuple) {
    for (const hlo::Shape& s : instr.shape().tuple_shapes()) results.emplace_back(s);
  } else {
    results.emplace_back(instr.shape());
  }
  std::vector<void*> outs;
  for (hlo::Literal& r : results) outs.push_back(r.mutable_untyped_data().data());
  lax::kernels::RunLinalg(*call, dtype, shapes, ins, outs);
  if (!tuple) return std::move(results[0]);
  return hlo::Literal::CreateTuple(std::move(results));
}

const bool kLinalgTargetsRegistered = [] {
  for (lax::kernels::LinalgOp op : {lax::kernels::LinalgOp::kCholesky, lax::kernels::LinalgOp::kTriangularSolve,
                                    lax::kernels::LinalgOp::kLu, lax::kernels::LinalgOp::kQr,
                                    lax::kernels::LinalgOp::kEigh, lax::kernels::LinalgOp::kSvd}) {
    hlo::HloEvaluator::RegisterCustomCallTarget(std::string(lax::kernels::LinalgCustomCallTarget(op)),
                                                EvaluateLinalgCustomCall);
  }
  return true;
}();

}  // namespace
}  // namespace jx::opinfo::linalg_opinfo

// jnp.linalg on lax.linalg's primitives (JAX's jax/_src/numpy/linalg.py, written anew).
#include "jx/lax/numpy/linalg_ops.h"

#include <cmath>
#include <utility>
#include <vector>

#include "jx/core/errors.h"
#include "jx/lax/convert_ops.h"
#include "jx/lax/linalg.h"
#include "jx/lax/numpy/creation.h"
#include "jx/lax/numpy/linalg.h"
#include "jx/lax/numpy/manipulation.h"
#include "jx/lax/numpy/math.h"
#include "jx/lax/numpy/operators.h"
#include "jx/lax/numpy/promotion.h"
#include "jx/lax/numpy/reductions.h"
#include "jx/lax/shape_ops.h"
#include "jx/lax/slicing_ops.h"
#include "jx/transforms/custom_derivatives.h"

namespace jx::numpy::linalg {
namespace {

namespace llinalg = ::jx::lax::linalg;

constexpr double kInf = std::numeric_limits<double>::infinity();

// x converted to its inexact dtype (ints and bools -> float32), as JAX's promote_dtypes_inexact.
Array Inexact(const Array& x) {
  const TypeAndWeak t = to_inexact(TypeAndWeak{x.dtype(), x.aval().weak_type});
  return t.dtype == x.dtype() ? x : lax::convert_element_type(x, t.dtype);
}

// a as a batch of square matrices, else ShapeError naming the function.
Array SquareMatrices(std::string_view op, const Array& a) {
  if (a.ndim() < 2 || a.shape()[a.shape().size() - 1] != a.shape()[a.shape().size() - 2]) {
    ThrowOpError<ShapeError>(op, "argument must be a (batch of) square matrices, got ", a.aval().str());
  }
  return Inexact(a);
}
Array Matrices(std::string_view op, const Array& a) {
  if (a.ndim() < 2) ThrowOpError<ShapeError>(op, "argument must have rank >= 2, got ", a.aval().str());
  return Inexact(a);
}

Array Dot(const Array& a, const Array& b) { return matmul(a, b, lax::Precision::kHighest); }

// Identity matrices [..., n, n] with the batch dims of batch_shape.
Array BatchedEye(const Shape& batch_shape, int64_t n, DType d) {
  Shape shape = batch_shape;
  shape.push_back(n);
  shape.push_back(n);
  return broadcast_to(eye(n, std::nullopt, 0, d), shape);
}
Shape BatchShape(const Array& a) { return Shape(a.shape().begin(), a.shape().end() - 2); }

// b's rows permuted: out[..., i, :] = b[..., perm[i], :], as a one-hot product (exact, and
// differentiable in b).
Array PermuteRows(const Array& b, const Array& perm) {
  const int64_t m = perm.shape().back();
  const Array onehot =
      lax::convert_element_type(expand_dims(perm, -1) == lax::broadcasted_iota(int32, {m}, 0), b.dtype());
  return Dot(onehot, b);
}

// lu's diagonal and the parity of its pivots (the number of row swaps).
std::pair<Array, Array> LuDiagonalAndParity(const Array& a) {
  auto [lu, pivots, perm] = llinalg::lu(a);
  (void)perm;
  const int64_t k = pivots.shape().back();
  const Array swaps = count_nonzero(pivots != lax::broadcasted_iota(int32, {k}, 0), -1);
  return {diagonal(lu, 0, -2, -1), swaps};
}

// Double the C++ way for the dtype's epsilon (float32 / float64).
double Eps(DType d) { return d == float64 ? 0x1p-52 : 0x1p-23; }

Array VectorNorm(const Array& x, const NormOrd& ord, const Axis& axis, bool keepdims) {
  const Array ax = abs(x);
  if (ord.is_none() || (ord.is_number() && ord.number() == 2)) return sqrt(sum(x * x, axis, keepdims));
  if (!ord.is_number()) {
    ThrowOpError<ValueError>("norm", "invalid order '", ord.str(), "' for a vector norm (of ", x.aval().str(), ")");
  }
  const double p = ord.number();
  if (p == kInf) return amax(ax, axis, keepdims);
  if (p == -kInf) return amin(ax, axis, keepdims);
  if (p == 0) return sum(lax::convert_element_type(x != 0, x.dtype()), axis, keepdims);
  if (p == 1) return sum(ax, axis, keepdims);
  return power(sum(power(ax, p), axis, keepdims), 1.0 / p);
}

Array MatrixNorm(const Array& x, const NormOrd& ord, int64_t row_axis, int64_t col_axis, bool keepdims) {
  const Axis both{row_axis, col_axis};
  if (ord.is_none() || ord.is("fro")) return sqrt(sum(x * x, both, keepdims));
  if (ord.is("nuc") || (ord.is_number() && std::abs(ord.number()) == 2)) {
    const Array s = llinalg::svd(moveaxis(x, {row_axis, col_axis}, {-2, -1}), false, false).s;
    Array y = ord.is("nuc") ? sum(s, -1) : ord.number() > 0 ? amax(s, -1) : amin(s, -1);
    if (keepdims) y = expand_dims(y, Axis{std::min(row_axis, col_axis), std::max(row_axis, col_axis)});
    return y;
  }
  if (!ord.is_number() || (std::abs(ord.number()) != 1 && std::abs(ord.number()) != kInf)) {
    ThrowOpError<ValueError>("norm", "invalid order '", ord.str(), "' for a matrix norm (of ", x.aval().str(),
                             "): use None, 'fro', 'nuc', 1, -1, 2, -2, inf or -inf");
  }
  const double p = ord.number();
  const Array ax = abs(x);
  // 1: the largest column sum (sum over rows, then max over columns); inf: the largest row sum.
  int64_t sum_axis = std::abs(p) == 1 ? row_axis : col_axis;
  int64_t other = std::abs(p) == 1 ? col_axis : row_axis;
  if (!keepdims && other > sum_axis) --other;
  const Array sums = sum(ax, sum_axis, keepdims);
  return p > 0 ? amax(sums, other, keepdims) : amin(sums, other, keepdims);
}

}  // namespace

std::string NormOrd::str() const {
  if (is_none()) return "None";
  if (is_number()) return StrCat(number());
  return std::get<std::string>(value_);
}

Array norm(const Array& x_in, const NormOrd& ord, const Axis& axis, bool keepdims) {
  const Array x = Inexact(x_in);
  const int64_t rank = x.ndim();
  if (axis.all()) {
    if (ord.is_none()) {
      Array y = sqrt(sum(x * x));
      return keepdims ? reshape(y, Shape(static_cast<size_t>(rank), 1)) : y;
    }
    if (rank == 1) return VectorNorm(x, ord, Axis{0}, keepdims);
    if (rank == 2) return MatrixNorm(x, ord, 0, 1, keepdims);
    ThrowOpError<ValueError>("norm", "improper number of dimensions to norm: ", x.aval().str(),
                             " with ord=", ord.str(), " needs axis (one axis or two)");
  }
  std::vector<int64_t> axes = axis.axes();
  for (int64_t& a : axes) {
    if (a < -rank || a >= rank) {
      ThrowOpError<ValueError>("norm", "axis ", a, " is out of bounds for ", x.aval().str());
    }
    if (a < 0) a += rank;
  }
  if (axes.size() == 1) return VectorNorm(x, ord, Axis{axes[0]}, keepdims);
  if (axes.size() == 2 && axes[0] != axes[1]) return MatrixNorm(x, ord, axes[0], axes[1], keepdims);
  ThrowOpError<ValueError>("norm", "improper number of axes for norm: ", axes.size(), " (", x.aval().str(),
                           "): give one axis (vector norm) or two distinct ones (matrix norm)");
}

Array solve(const Array& a_in, const Array& b_in) {
  const Array a = SquareMatrices("solve", a_in);
  const std::vector<Array> promoted = promote_dtypes({a, Inexact(b_in)});
  const Array &a_p = promoted[0], &b = promoted[1];
  const int64_t n = a_p.shape().back();
  // b is a vector [n] (solved for every matrix), else a batch of [n, k] matrices.
  const bool vector = b.ndim() == 1;
  Array bm = vector ? expand_dims(b, -1) : b;
  if (bm.ndim() < 2 || bm.shape()[bm.shape().size() - 2] != n) {
    ThrowOpError<ShapeError>("solve", "b must be [n] or [..., n, k] for a ", a_p.aval().str(), ", got ",
                             b.aval().str());
  }
  const Shape batch = broadcast_shapes(BatchShape(a_p), BatchShape(bm), "solve");
  Shape a_shape = batch, b_shape = batch;
  a_shape.insert(a_shape.end(), {n, n});
  b_shape.insert(b_shape.end(), {n, bm.shape().back()});
  const Array a_b = broadcast_to(a_p, a_shape);
  bm = broadcast_to(bm, b_shape);
  auto [lu, pivots, perm] = llinalg::lu(a_b);
  (void)pivots;
  const Array y = llinalg::triangular_solve(lu, PermuteRows(bm, perm), {.left_side = true, .lower = true,
                                                                       .unit_diagonal = true});
  const Array x = llinalg::triangular_solve(lu, y, {.left_side = true, .lower = false});
  return vector ? squeeze(x, -1) : x;
}

Array inv(const Array& a_in) {
  const Array a = SquareMatrices("inv", a_in);
  return solve(a, BatchedEye(BatchShape(a), a.shape().back(), a.dtype()));
}

Array cholesky(const Array& a_in, bool upper) {
  const Array l = llinalg::cholesky(SquareMatrices("cholesky", a_in));
  return upper ? matrix_transpose(l) : l;
}

namespace {

// det of square matrices from the LU's diagonal and its pivots' parity.
Array LuDet(const Array& a) {
  auto [diag, parity] = LuDiagonalAndParity(a);
  const Array sign = 1 - 2 * lax::convert_element_type(parity % 2, a.dtype());
  return sign * prod(diag, -1);
}

// Rows [start, stop) of a batch of matrices.
Array MatrixRows(const Array& x, int64_t start, int64_t stop) {
  std::vector<int64_t> lo(static_cast<size_t>(x.ndim()), 0);
  std::vector<int64_t> hi(x.shape().begin(), x.shape().end());
  lo[lo.size() - 2] = start;
  hi[hi.size() - 2] = stop;
  return lax::slice(x, lo, hi);
}

// (det(a), det(a) * solve(a, b)) for square a and b of a's shape, defined when a has rank
// n - 1 too (JAX's _cofactor_solve): with a = P L U, det(a) solve(a, b) = det(a) U^-1 L^-1
// P^T b; U's last diagonal entry (zero at rank n - 1) is replaced by the inverse of the
// determinant of the rest, and the rows of L^-1 P^T b but the last are scaled by det(a), which
// gives the same result where a is invertible and the adjugate's where it is not. Where rank
// < n - 1 (the solve with the modified U is not finite), the result is zero, as JAX's.
std::pair<Array, Array> CofactorSolve(const Array& a, const Array& b) {
  const int64_t n = a.shape().back();
  if (n == 1) return {squeeze(a, std::vector<int64_t>{-2, -1}), b};
  auto [lu, pivots, perm] = llinalg::lu(a);
  const DType dt = a.dtype();
  const Array swaps = count_nonzero(pivots != lax::broadcasted_iota(int32, {n}, 0), -1);
  const Array sign = 1 - 2 * lax::convert_element_type(swaps % 2, dt);
  const Array partial_det = cumprod(diagonal(lu, 0, -2, -1), -1) * expand_dims(sign, -1);
  const Array det_a = take(partial_det, n - 1, -1), det_rest = take(partial_det, n - 2, -1);
  const Array corner =
      logical_and(lax::broadcasted_iota(int32, {n, n}, 0) == n - 1, lax::broadcasted_iota(int32, {n, n}, 1) == n - 1);
  const Array u = where(corner, expand_dims(1 / det_rest, std::vector<int64_t>{-2, -1}), lu);
  // Rank < n - 1: a row of ones solved against the modified U is not finite.
  Shape ones_shape = BatchShape(a);
  ones_shape.insert(ones_shape.end(), {1, n});
  const Array probe = llinalg::triangular_solve(u, ones(ones_shape, dt), {.left_side = false, .lower = false});
  const Array low_rank = expand_dims(any(logical_or(isnan(probe), isinf(probe)), std::vector<int64_t>{-2, -1}),
                                     std::vector<int64_t>{-2, -1});
  Array x = where(low_rank, 0, b);
  x = llinalg::triangular_solve(lu, PermuteRows(x, perm), {.left_side = true, .lower = true, .unit_diagonal = true});
  x = concatenate({MatrixRows(x, 0, n - 1) * expand_dims(det_a, std::vector<int64_t>{-2, -1}), MatrixRows(x, n - 1, n)},
                  -2);
  x = llinalg::triangular_solve(u, x, {.left_side = true, .lower = false});
  return {det_a, where(low_rank, 0, x)};
}

}  // namespace

// jnp.linalg.det with JAX's custom jvp (_det_jvp): the tangent is trace(det(a) solve(a, g))
// through CofactorSolve, so the derivative at a singular matrix of rank n - 1 is the
// adjugate's, not NaN.
Array det(const Array& a_in) {
  const Array a = SquareMatrices("det", a_in);
  static const auto impl = custom_jvp([](const Array& x) { return LuDet(x); },
                                      [](const std::tuple<Array>& primals, const std::tuple<Array>& tangents) {
                                        auto [y, z] = CofactorSolve(std::get<0>(primals), std::get<0>(tangents));
                                        return std::pair{y, trace(z, 0, -2, -1)};
                                      });
  return impl(a);
}

SlogdetResult slogdet(const Array& a_in) {
  const Array a = SquareMatrices("slogdet", a_in);
  auto [diag, parity] = LuDiagonalAndParity(a);
  const Array is_zero = any(diag == 0, -1);
  const Array negatives = count_nonzero(diag < 0, -1);
  const Array flips = lax::convert_element_type((parity + negatives) % 2, a.dtype());
  const Array sign = where(is_zero, 0, 1 - 2 * flips);
  const Array logdet = where(is_zero, -kInf, sum(log(abs(diag)), -1));
  return {sign, logdet};
}

QRResult qr(const Array& a_in, std::string_view mode) {
  const Array a = Matrices("qr", a_in);
  if (mode != "reduced" && mode != "complete" && mode != "r") {
    ThrowOpError<ValueError>("qr", "unsupported mode '", mode, "': use 'reduced', 'complete' or 'r'");
  }
  auto [q, r] = llinalg::qr(a, /*full_matrices=*/mode == "complete");
  if (mode == "r") return {Array{}, r};
  return {q, r};
}

SVDResult svd(const Array& a_in, bool full_matrices, bool compute_uv) {
  const llinalg::SvdResult r = llinalg::svd(Matrices("svd", a_in), full_matrices, compute_uv);
  return {r.u, r.s, r.vh};
}

EighResult eigh(const Array& a_in, std::string_view UPLO, bool symmetrize_input) {
  if (UPLO != "L" && UPLO != "U") ThrowOpError<ValueError>("eigh", "UPLO must be 'L' or 'U', got '", UPLO, "'");
  auto [v, w] = llinalg::eigh(SquareMatrices("eigh", a_in), /*lower=*/UPLO == "L", symmetrize_input);
  return {w, v};
}

Array eigvalsh(const Array& a, std::string_view UPLO) { return eigh(a, UPLO).eigenvalues; }

Array matrix_power(const Array& a_in, int64_t n) {
  Array a = SquareMatrices("matrix_power", a_in);
  if (a_in.dtype() != a.dtype() && n >= 0) a = a_in;  // integer powers of integer matrices stay integers
  if (n == 0) return BatchedEye(BatchShape(a), a.shape().back(), a.dtype());
  Array z = n < 0 ? inv(a) : a;
  uint64_t e = n < 0 ? static_cast<uint64_t>(-(n + 1)) + 1 : static_cast<uint64_t>(n);
  // Binary exponentiation, as JAX's: result *= z for each set bit, z squared each step.
  Array result;
  while (e > 0) {
    if (e & 1) result = result.defined() ? Dot(result, z) : z;
    e >>= 1;
    if (e > 0) z = Dot(z, z);
  }
  return result;
}

Array pinv(const Array& a_in, std::optional<double> rtol) {
  const Array a = Matrices("pinv", a_in);
  const Shape& s = a.shape();
  const int64_t m = s[s.size() - 2], n = s.back();
  const llinalg::SvdResult r = llinalg::svd(a, /*full_matrices=*/false);
  const double tol = rtol.value_or(10.0 * static_cast<double>(std::max(m, n)) * Eps(a.dtype()));
  if (std::min(m, n) == 0) return matrix_transpose(a);
  const Array largest = amax(r.s, -1, /*keepdims=*/true);
  const Array kept = where(r.s > largest * tol, r.s, kInf);
  return Dot(matrix_transpose(r.vh), matrix_transpose(r.u) / expand_dims(kept, -1));
}

LstsqResult lstsq(const Array& a_in, const Array& b_in, std::optional<double> rcond) {
  const std::vector<Array> promoted = promote_dtypes({Inexact(a_in), Inexact(b_in)});
  const Array &a = promoted[0], &b = promoted[1];
  if (a.ndim() != 2) ThrowOpError<ShapeError>("lstsq", "a must be a matrix [m, n], got ", a.aval().str());
  const int64_t m = a.shape()[0], n = a.shape()[1];
  const bool vector = b.ndim() == 1;
  const Array bm = vector ? expand_dims(b, -1) : b;
  if (bm.ndim() != 2 || bm.shape()[0] != m) {
    ThrowOpError<ShapeError>("lstsq", "b must be [m] or [m, k] for a ", a.aval().str(), ", got ", b.aval().str());
  }
  const double eps = Eps(a.dtype());
  const double cutoff = !rcond ? eps * static_cast<double>(std::max(m, n)) : *rcond < 0 ? eps : *rcond;
  const llinalg::SvdResult r = llinalg::svd(a, /*full_matrices=*/false);
  const Array largest = amax(r.s, -1, /*keepdims=*/true);
  const Array mask = r.s >= largest * cutoff;
  const Array rank = sum(lax::convert_element_type(mask, int32));
  const Array safe_s = where(mask, r.s, 1);
  const Array s_inv = expand_dims(where(mask, 1 / safe_s, 0), -1);
  const Array utb = Dot(matrix_transpose(r.u), bm);
  Array x = Dot(matrix_transpose(r.vh), s_inv * utb);
  const Array residual = bm - Dot(a, x);
  const Array resid = sum(residual * residual, 0);
  if (vector) x = squeeze(x, -1);
  return {x, resid, rank, r.s};
}

}  // namespace jx::numpy::linalg

// lax.linalg: the matrix decomposition primitives, as JAX's jax.lax.linalg has them, over
// float32 and float64 matrices in the last two dimensions (any leading dims are a batch).
// Each has JAX's jvp rule (and triangular_solve its transpose in b), batching over the leading
// dims, an eager kernel (lax/kernels/linalg.h) and, under jit, a custom-call to the same
// kernel (XLA's LAPACK custom-calls); simulated TPU chips run it on the host.
//
//   namespace linalg = jx::lax::linalg;
//   Array l = linalg::cholesky(spd);                          // lax.linalg.cholesky(spd)
//   Array x = linalg::triangular_solve(l, b, {.left_side = true, .lower = true});
//   auto [lu, pivots, perm] = linalg::lu(a);                 // lax.linalg.lu(a)
//   auto [q, r] = linalg::qr(a, /*full_matrices=*/false);    // lax.linalg.qr(a, full_matrices=False)
//   auto [v, w] = linalg::eigh(sym);                         // lax.linalg.eigh(sym)
//   auto [u, s, vh] = linalg::svd(a, /*full_matrices=*/false);
#pragma once

#include <tuple>
#include <utility>

#include "jx/core/array.h"
#include "jx/core/primitive.h"

namespace jx::lax::linalg {

inline const Primitive kCholesky = Primitive::Intern("cholesky");
inline const Primitive kTriangularSolve = Primitive::Intern("triangular_solve");
inline const Primitive kLu = Primitive::Intern("lu");
inline const Primitive kQr = Primitive::Intern("qr");
inline const Primitive kEigh = Primitive::Intern("eigh");
inline const Primitive kSvd = Primitive::Intern("svd");

// The lower Cholesky factor L of a symmetric positive definite x (x = L L^T); NaNs where x
// is not positive definite. symmetrize_input uses (x + x^T) / 2, as JAX's default, so the
// derivative is that of a symmetric input; without it only the lower triangle is read.
Array cholesky(const Array& x, bool symmetrize_input = true);

struct TriangularSolveOptions {
  bool left_side = false;      // solve op(a) x = b (true) or x op(a) = b (false)
  bool lower = false;          // a's lower triangle (else its upper one) is read
  bool transpose_a = false;    // op(a) = a^T
  bool conjugate_a = false;    // op(a) = conj(a): the identity for real dtypes
  bool unit_diagonal = false;  // a's diagonal is taken as ones
};
// Solves with a triangular a [..., k, k] for b [..., m, n] (k = m with left_side, else n).
Array triangular_solve(const Array& a, const Array& b, const TriangularSolveOptions& options = {});

// LU with partial pivoting of x [..., m, n]: (lu, pivots, permutation), where lu holds L's
// strictly lower part (unit diagonal) and U, pivots int32 [..., min(m, n)] are LAPACK's row
// swaps (0-based) and permutation int32 [..., m] satisfies x[permutation] = L U.
std::tuple<Array, Array, Array> lu(const Array& x);

// QR of x [..., m, n]: q [..., m, m] and r [..., m, n] (full_matrices), else q [..., m, k] and
// r [..., k, n] with k = min(m, n).
std::pair<Array, Array> qr(const Array& x, bool full_matrices = true);

// Eigenvectors v (columns) and eigenvalues w (ascending) of a symmetric x: x v = v diag(w).
// lower picks the triangle read; symmetrize_input uses (x + x^T) / 2 first, as JAX's default.
std::pair<Array, Array> eigh(const Array& x, bool lower = true, bool symmetrize_input = true,
                             bool sort_eigenvalues = true);

// x = u diag(s) vh, s descending. Without compute_uv, u and vh are undefined arrays.
struct SvdResult {
  Array u, s, vh;
};
SvdResult svd(const Array& x, bool full_matrices = true, bool compute_uv = true);

}  // namespace jx::lax::linalg

// Dense linear algebra numerics (f32 and f64), written once for the eager lax.linalg
// primitives and the CPU backend's linalg custom-calls (the LAPACK calls of XLA's CPU
// backend). Every buffer is row-major with the batch dimensions leading: a batch of `batch`
// matrices stored one after another. Eigen stays inside linalg.cc.
//
//   Cholesky         a [n,n] -> l [n,n]: lower factor of a's lower triangle (a = l l^T), zeros
//                    above the diagonal; NaNs where a is not positive definite (as JAX).
//   TriangularSolve  a [k,k], b [m,n] -> x [m,n]: op(a) x = b (left_side) or x op(a) = b, k = m or
//                    n; op(a) = a^T with transpose_a; reads the `lower` (or upper) triangle of a
//                    and ones for its diagonal with unit_diagonal.
//   Lu               a [m,n] -> lu [m,n] (unit-lower L below the diagonal, U on and above),
//                    pivots int32 [min(m,n)] (row i was swapped with pivots[i], LAPACK's getrf
//                    0-based), permutation int32 [m] (a[permutation] = L U).
//   Qr               a [m,n] -> q [m,m or k], r [m or k,n], k = min(m,n) (full_matrices or not);
//                    Householder signs as LAPACK's geqrf/orgqr.
//   Eigh             a [n,n] -> v [n,n] (eigenvectors in the columns), w [n] ascending; reads the
//                    lower (or upper) triangle.
//   Svd              a [m,n] -> s [k] descending, u [m, m or k], vt [n or k, n] (compute_uv).
//
// LinalgCall is one call's parameters, also the custom-call's backend_config in text form, so
// the lowering and the backend agree on one encoding:
//   LinalgCall c{LinalgOp::kCholesky};
//   custom_call(LinalgCustomCallTarget(c.op), ..., backend_config=EncodeLinalgCall(c));
//   RunLinalg(*DecodeLinalgCall(target, config), dtype, operand_shapes, operands, results);
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/types/span.h"
#include "jx/core/dtype.h"
#include "jx/core/shape.h"

namespace jx::lax::kernels {

enum class LinalgOp { kCholesky, kTriangularSolve, kLu, kQr, kEigh, kSvd };

struct LinalgCall {
  LinalgOp op = LinalgOp::kCholesky;
  // triangular_solve
  bool left_side = false;
  bool lower = false;  // triangular_solve and eigh
  bool transpose_a = false;
  bool conjugate_a = false;
  bool unit_diagonal = false;
  // qr and svd
  bool full_matrices = false;
  // svd
  bool compute_uv = true;
  // eigh
  bool sort_eigenvalues = true;
};

// Whether the kernels support dtype (float32, float64).
bool IsLinalgDType(DType dtype);

void Cholesky(DType dtype, const void* a, void* l, int64_t batch, int64_t n);
void TriangularSolve(DType dtype, const void* a, const void* b, void* x, int64_t batch, int64_t m, int64_t n,
                     bool left_side, bool lower, bool transpose_a, bool unit_diagonal);
void Lu(DType dtype, const void* a, void* lu, int32_t* pivots, int32_t* permutation, int64_t batch, int64_t m,
        int64_t n);
void Qr(DType dtype, const void* a, void* q, void* r, int64_t batch, int64_t m, int64_t n, bool full_matrices);
void Eigh(DType dtype, const void* a, void* v, void* w, int64_t batch, int64_t n, bool lower);
// u and vt are ignored (may be null) without compute_uv.
void Svd(DType dtype, const void* a, void* s, void* u, void* vt, int64_t batch, int64_t m, int64_t n,
         bool full_matrices, bool compute_uv);

// The custom-call target of op ("jx_linalg_cholesky", ...), and back.
std::string_view LinalgCustomCallTarget(LinalgOp op);
std::optional<LinalgOp> LinalgOpFromCustomCallTarget(std::string_view target);
// backend_config text: "left_side=0,lower=1,..." (every field, fixed order).
std::string EncodeLinalgCall(const LinalgCall& call);
// nullopt when target is not a linalg target or config is malformed.
std::optional<LinalgCall> DecodeLinalgCall(std::string_view target, std::string_view config);

// Runs call on operands of operand_shapes (dtype their floating type; the last two dims the
// matrix, the rest the batch), writing results in the order of the op's outputs (as listed
// above). The CPU backend's custom-call kernel.
void RunLinalg(const LinalgCall& call, DType dtype, absl::Span<const Shape> operand_shapes,
               absl::Span<const void* const> operands, absl::Span<void* const> results);

// The floating-point operations of call on operands of operand_shapes: LAPACK's counts
// (LAPACK Working Note 41; Golub & Van Loan, Matrix Computations, table 8.6.1 for the
// eigen- and singular-value solvers) per matrix, times the batch. For an m x n matrix:
//   cholesky (potrf)          n^3/3 + n^2/2 + n/6
//   triangular_solve (trsm)   m^2 n (left side; n^2 m right side), less m n (n m) with a
//                             unit diagonal
//   lu (getrf), m >= n        m n^2 - n^3/3 - n^2/2 + 5n/6 (m and n swapped when m < n)
//   qr (geqrf + orgqr)        2 m n^2 - 2n^3/3 + m n + n^2 + 14n/3 (k = min(m, n) reflectors;
//                             m < n: 2 n m^2 - 2m^3/3 + 3 m n - m^2 + 14m/3), plus forming
//                             Q (m x q columns): 4 m q k - 2 (m + q) k^2 + 4k^3/3
//   eigh (syev)               9n^3 (eigenvalues and eigenvectors)
//   svd (gesvd), m >= n       values only 4 m n^2 - 4n^3/3; with thin U and V 14 m n^2 + 8n^3;
//                             with full U 4 m^2 n + 8 m n^2 + 9n^3 (m < n: transposed)
double LinalgFlops(const LinalgCall& call, absl::Span<const Shape> operand_shapes);

}  // namespace jx::lax::kernels

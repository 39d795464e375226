// LinalgFlops: the LAPACK operation counts the cost analyses give linalg custom-calls.
#include <algorithm>
#include <cstdint>

#include "jx/lax/kernels/linalg.h"

namespace jx::lax::kernels {
namespace {

double Batch(const Shape& s) {
  double batch = 1;
  for (size_t i = 0; i + 2 < s.size(); ++i) batch *= static_cast<double>(s[i]);
  return batch;
}

double Potrf(double n) { return n * n * n / 3 + n * n / 2 + n / 6; }

double Getrf(double m, double n) {
  if (m < n) std::swap(m, n);
  return m * n * n - n * n * n / 3 - n * n / 2 + 5 * n / 6;
}

double Geqrf(double m, double n) {
  if (m >= n) return 2 * m * n * n - 2 * n * n * n / 3 + m * n + n * n + 14 * n / 3;
  return 2 * n * m * m - 2 * m * m * m / 3 + 3 * m * n - m * m + 14 * m / 3;
}

// Forming the m x q matrix Q from k reflectors.
double Orgqr(double m, double q, double k) { return 4 * m * q * k - 2 * (m + q) * k * k + 4 * k * k * k / 3; }

double Gesvd(double m, double n, bool compute_uv, bool full_matrices) {
  if (m < n) std::swap(m, n);
  if (!compute_uv) return 4 * m * n * n - 4 * n * n * n / 3;
  if (!full_matrices) return 14 * m * n * n + 8 * n * n * n;
  return 4 * m * m * n + 8 * m * n * n + 9 * n * n * n;
}

}  // namespace

double LinalgFlops(const LinalgCall& call, absl::Span<const Shape> operand_shapes) {
  if (operand_shapes.empty() || operand_shapes[0].size() < 2) return 0;
  const Shape& a = operand_shapes[0];
  const double batch = Batch(a);
  const double m = static_cast<double>(a[a.size() - 2]), n = static_cast<double>(a[a.size() - 1]);
  switch (call.op) {
    case LinalgOp::kCholesky:
      return batch * Potrf(n);
    case LinalgOp::kTriangularSolve: {
      if (operand_shapes.size() < 2 || operand_shapes[1].size() < 2) return 0;
      const Shape& b = operand_shapes[1];
      const double rows = static_cast<double>(b[b.size() - 2]), cols = static_cast<double>(b[b.size() - 1]);
      // The triangular factor is rows x rows on the left, cols x cols on the right.
      const double t = call.left_side ? rows : cols, other = call.left_side ? cols : rows;
      return batch * (t * t * other - (call.unit_diagonal ? t * other : 0));
    }
    case LinalgOp::kLu:
      return batch * Getrf(m, n);
    case LinalgOp::kQr: {
      const double k = std::min(m, n);
      const double q_cols = call.full_matrices ? m : k;
      return batch * (Geqrf(m, n) + Orgqr(m, q_cols, k));
    }
    case LinalgOp::kEigh:
      return batch * 9 * n * n * n;
    case LinalgOp::kSvd:
      return batch * Gesvd(m, n, call.compute_uv, call.full_matrices);
  }
  return 0;
}

}  // namespace jx::lax::kernels

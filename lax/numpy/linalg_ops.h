// jnp.linalg: norms, inverses, solves, determinants and decompositions over the last two
// dims (leading dims are a batch), on lax.linalg's primitives, so their derivatives are those
// primitives' rules (det and slogdet through lu, as JAX). Integer inputs promote to float32.
//
//   namespace jnp = jx::numpy;
//   jnp::linalg::norm(x);                         // jnp.linalg.norm(x)
//   jnp::linalg::norm(m, "fro");                  // jnp.linalg.norm(m, 'fro')
//   jnp::linalg::norm(x, INFINITY, /*axis=*/1);   // jnp.linalg.norm(x, jnp.inf, axis=1)
//   Array x = jnp::linalg::solve(a, b);           // jnp.linalg.solve(a, b)
//   auto [sign, logabsdet] = jnp::linalg::slogdet(a);
//   auto [q, r] = jnp::linalg::qr(a);             // mode="reduced"
//   auto [w, v] = jnp::linalg::eigh(a);           // eigenvalues ascending, eigenvectors in columns
//   auto [u, s, vh] = jnp::linalg::svd(a, /*full_matrices=*/false);
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "jx/core/array.h"
#include "jx/core/axis.h"

namespace jx::numpy::linalg {

// norm's `ord`: None (the default), a number (including +-inf and 0), or "fro" / "nuc".
class NormOrd {
 public:
  NormOrd() = default;
  NormOrd(double p) : value_(p) {}                 // NOLINT
  NormOrd(int p) : value_(static_cast<double>(p)) {}  // NOLINT
  NormOrd(const char* name) : value_(std::string(name)) {}  // NOLINT
  NormOrd(std::string_view name) : value_(std::string(name)) {}  // NOLINT
  bool is_none() const { return std::holds_alternative<std::monostate>(value_); }
  bool is_number() const { return std::holds_alternative<double>(value_); }
  double number() const { return std::get<double>(value_); }
  bool is(std::string_view name) const {
    return std::holds_alternative<std::string>(value_) && std::get<std::string>(value_) == name;
  }
  std::string str() const;

 private:
  std::variant<std::monostate, double, std::string> value_;
};

// Vector norms over one axis (ord None/2, +-inf, 0, 1, any p) or matrix norms over two
// ('fro' or None, 'nuc', +-1, +-2, +-inf). With no axis: the 2-norm of the flattened array when
// ord is None, else x must be a vector or a matrix.
Array norm(const Array& x, const NormOrd& ord = {}, const Axis& axis = {}, bool keepdims = false);

Array inv(const Array& a);
// Solves a x = b for a [..., n, n] and b [..., n, k] (or a vector b [n]).
Array solve(const Array& a, const Array& b);
// The lower Cholesky factor (upper=true: its transpose, a = U^T U).
Array cholesky(const Array& a, bool upper = false);
Array det(const Array& a);

struct SlogdetResult {
  Array sign, logabsdet;
};
SlogdetResult slogdet(const Array& a);

// mode "reduced" (Q [..., m, k], R [..., k, n]), "complete" (Q [..., m, m], R [..., m, n]) or
// "r" (R of the reduced factorization only; Q undefined).
struct QRResult {
  Array Q, R;
};
QRResult qr(const Array& a, std::string_view mode = "reduced");

struct SVDResult {
  Array U, S, Vh;
};
// a = U diag(S) Vh; without compute_uv, U and Vh are undefined.
SVDResult svd(const Array& a, bool full_matrices = true, bool compute_uv = true);

struct EighResult {
  Array eigenvalues, eigenvectors;
};
// UPLO "L" or "U": the triangle read; symmetrize_input as JAX's.
EighResult eigh(const Array& a, std::string_view UPLO = "L", bool symmetrize_input = true);
Array eigvalsh(const Array& a, std::string_view UPLO = "L");

// a^n by repeated squaring; n < 0 inverts first, n == 0 gives identities.
Array matrix_power(const Array& a, int64_t n);
// Moore-Penrose pseudo-inverse: singular values at or below rtol * the largest are dropped
// (default rtol: 10 * max(m, n) * eps).
Array pinv(const Array& a, std::optional<double> rtol = std::nullopt);

struct LstsqResult {
  Array x, residuals, rank, singular_values;
};
// Least squares a x = b for a [m, n] and b [m] or [m, k], via the SVD (rcond default:
// eps * max(m, n)); residuals are ||b - a x||^2 per column.
LstsqResult lstsq(const Array& a, const Array& b, std::optional<double> rcond = std::nullopt);

}  // namespace jx::numpy::linalg

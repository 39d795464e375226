// check_grads: numerical verification of derivatives, as jax.test_util.check_grads.
// Forward mode against central finite differences; reverse mode by the dot-product identity
// <ct, J t> == <J^T ct, t> with J t from finite differences too (so a function with only a
// reverse rule, a custom_vjp, is checkable with fwd = false); recursively to `order` (the
// derivative functions themselves are checked). Throws jx::ValueError describing the first
// mismatch.
//
//   jx::check_grads(f, std::tuple{x, w}, /*order=*/2);
#pragma once

#include <optional>

#include "jx/transforms/ad.h"

namespace jx {

struct CheckGradsOptions {
  int order = 1;
  bool fwd = true, rev = true;
  // Defaults per dtype (JAX's default_gradient_tolerance): f16 1e-2, bf16 1e-1, f32 2e-3,
  // f64 1e-5; atol and rtol both.
  std::optional<double> atol, rtol;
  // Finite-difference step; defaults to 1e-4 (JAX's EPS), 1e-2 for 16-bit floats.
  std::optional<double> eps;
  uint64_t seed = 0;
};

// Checks fn (flat arrays -> flat arrays) at primals. All primals must be floating point.
void CheckGradsFlat(const ArraysFn& fn, absl::Span<const Array> primals, const CheckGradsOptions& options);

}  // namespace jx

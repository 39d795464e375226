// lax::associative_scan: the inclusive prefix "sums" of elems under an associative fn, by the
// parallel (Blelloch-style, odd/even) algorithm JAX uses: O(log n) rounds of vectorized fn
// calls on strided slices, built from slice/pad/concatenate and fn's own ops, so it works
// under jit, vmap and grad. elems is a pytree of arrays with the same size along axis.
//
//   Array c = lax::associative_scan([](Array a, Array b) { return a + b; }, jnp::arange(5));
//   // [ 0  1  3  6 10]                                   (lax.associative_scan(jnp.add, ...))
//   lax::associative_scan(f, elems, {.reverse = true, .axis = 1});
#pragma once

#include <functional>
#include <memory>
#include <type_traits>

#include "jx/core/errors.h"
#include "jx/core/pytree.h"
#include "jx/transforms/ad.h"

namespace jx::lax {

// JAX's associative_scan keyword arguments.
struct AssociativeScanOptions {
  bool reverse = false;  // scan from the end: result[i] = fn(elems[i], fn(elems[i+1], ...))
  int64_t axis = 0;      // may be negative
};

// (a..., b...) -> c... over flat leaves: fn(a, b) for two pytrees of num_leaves leaves each.
using AssociativeFn = std::function<Arrays(absl::Span<const Array>, absl::Span<const Array>)>;

Arrays associative_scan_flat(const AssociativeFn& fn, absl::Span<const Array> elems,
                             const AssociativeScanOptions& options);

// associative_scan(fn, elems, options): fn(a, b) -> c with a, b, c shaped like elems (each
// leaf sliced along axis; fn must be vectorized over it, as JAX's).
template <typename F, typename T>
T associative_scan(F fn, const T& elems, AssociativeScanOptions options = {}) {
  auto [leaves, def] = tree::flatten(elems);
  // Structured bindings are captured through init-captures: clang before 16 cannot capture them.
  AssociativeFn flat = [&fn, &def = def](absl::Span<const Array> a, absl::Span<const Array> b) {
    auto [out, d] = tree::flatten(fn(tree::unflatten<T>(def, a), tree::unflatten<T>(def, b)));
    if (!(d == def)) {
      throw jx::TypeError(StrCat("associative_scan: fn must return the structure of elems: ", tree::FirstDifference(def, d)));
    }
    return Arrays(out.begin(), out.end());
  };
  Arrays out = associative_scan_flat(flat, leaves, options);
  return tree::unflatten<T>(def, out);
}

}  // namespace jx::lax

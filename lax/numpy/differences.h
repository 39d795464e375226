// jnp.diff and jnp.cross (https://numpy.org/doc/stable/reference/generated/numpy.diff.html,
// numpy.cross.html): differentiable, traceable under jit and vmap.
//
//   jnp::diff(jnp::array({1, 2, 4, 7, 0}));                    // [1 2 3 -7]
//   jnp::diff(x, 2);                                            // second differences
//   jnp::diff(x, 1, 0, /*prepend=*/0.0);                        // along axis 0, x[-1] = 0
//   jnp::cross(jnp::array({1, 2, 3}), jnp::array({4, 5, 6}));   // [-3 6 -3]
//   jnp::cross(a, b, {.axisa = 0, .axisb = 0});                 // vectors along axis 0
#pragma once

#include <optional>

#include "jx/core/array.h"
#include "jx/lax/numpy/promotion.h"

namespace jx::numpy {

// The n-th discrete difference along axis: out[i] = a[i+1] - a[i], n times (bool arrays use
// not_equal, as NumPy). prepend/append (scalars broadcast along axis, arrays must match a's
// other dims) are concatenated to a first.
Array diff(const Array& a, int64_t n = 1, int64_t axis = -1, const std::optional<ArrayLike>& prepend = std::nullopt,
           const std::optional<ArrayLike>& append = std::nullopt);

// jnp.cross's axis arguments: where the 2- or 3-vectors lie in a and b, and where the
// result's vector axis goes; `axis` sets all three.
struct CrossAxes {
  int64_t axisa = -1;
  int64_t axisb = -1;
  int64_t axisc = -1;
  std::optional<int64_t> axis{};
};

// The cross product of 2- or 3-vectors, broadcast over the other dims. A 2-vector is a
// 3-vector with z = 0; two 2-vectors give the z component alone (no vector axis).
Array cross(const ArrayLike& a, const ArrayLike& b, const CrossAxes& axes = {});

}  // namespace jx::numpy

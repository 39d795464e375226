// jnp order statistics and averages: quantile, percentile, median (and their nan* forms in
// nan_reductions.h), average, bincount
// (https://numpy.org/doc/stable/reference/routines.statistics.html).
//
// quantile/percentile/median sort along the reduced axes and gather, so they differentiate
// (through sort's jvp and gather's transpose) and trace under jit and vmap, as JAX's do.
// Methods are JAX's: "linear" (default), "lower", "higher", "nearest" (ties go to the lower
// neighbour, as jnp's select on high_weight <= 0.5), "midpoint". A NaN in a slice makes its
// result NaN.
//
//   jnp::median(x);                                   // over everything
//   jnp::quantile(x, 0.25, 1);                        // along axis 1
//   jnp::quantile(x, jnp::array({0.1f, 0.9f}), {}, "lower");   // q's dims lead the result
//   jnp::percentile(x, 50.0, 0, "linear", /*keepdims=*/true);
//   jnp::average(x, 0, w);                            // weighted along axis 0
//   auto [avg, wsum] = jnp::average(x, 0, w, jnp::returned);
//   jnp::bincount(jnp::array({0, 1, 1, 3}));          // [1 2 0 1]
#pragma once

#include <optional>
#include <string_view>
#include <utility>

#include "jx/core/array.h"
#include "jx/lax/numpy/promotion.h"

namespace jx::numpy {

// q in [0, 1] (a scalar or a 1-D array, whose dim leads the result).
Array quantile(const Array& a, const ArrayLike& q, const Axis& axis = {}, std::string_view method = "linear",
               bool keepdims = false);
// quantile(a, q / 100).
Array percentile(const Array& a, const ArrayLike& q, const Axis& axis = {}, std::string_view method = "linear",
                 bool keepdims = false);
// quantile(a, 0.5, axis, "midpoint").
Array median(const Array& a, const Axis& axis = {}, bool keepdims = false);

// Weighted mean along axis; weights of a's shape, or 1-D along a single axis. Without weights,
// the mean.
Array average(const Array& a, const Axis& axis = {}, const std::optional<Array>& weights = std::nullopt,
              bool keepdims = false);
// jnp.average(..., returned=True): the average and the sum of the weights (broadcast to the
// average's shape; the element count when unweighted).
struct returned_t {
  explicit returned_t() = default;
};
inline constexpr returned_t returned{};
std::pair<Array, Array> average(const Array& a, const Axis& axis, const std::optional<Array>& weights, returned_t,
                                bool keepdims = false);

// Counts (or summed weights) of each value in the 1-D nonnegative integer array x: out[i] is
// the number of (weight of) elements equal to i; negative values count as 0, values >= length
// are dropped. The length is max(max(x) + 1, minlength) on concrete x; under jit pass `length`
// (ConcretizationError otherwise), as JAX. int32 unless weights give another dtype.
Array bincount(const Array& x, const std::optional<Array>& weights = std::nullopt, int64_t minlength = 0,
               std::optional<int64_t> length = std::nullopt);

namespace internal {
// JAX's _quantile; squash_nans ignores NaNs (nanquantile).
Array Quantile(std::string_view op, const Array& a, const ArrayLike& q, const Axis& axis, std::string_view method,
               bool keepdims, bool squash_nans);
// q / 100 for percentile (a C++ scalar divided exactly, as a weak double).
ArrayLike PercentToFraction(const ArrayLike& q);
}  // namespace internal

}  // namespace jx::numpy

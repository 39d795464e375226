// jnp reductions with JAX's dtype rules: sum/prod/cumsum/cumprod accumulate bool and narrow
// ints in int32 (uint32 for narrow unsigned), 16-bit floats accumulate in float32 and round
// back once; mean/var/std of integers are float32. `axis` is one int, a list, or absent
// (all axes).
//
//   jnp::sum(x);                        // everything
//   jnp::sum(x, 1);                     // along axis 1
//   jnp::mean(x, {0, 2}, /*keepdims=*/true);
//   jnp::argmax(x, 1);                  // int32 indices
//   jnp::var(x, -1, false, /*ddof=*/1);
//   jnp::logsumexp(logits, -1);
#pragma once

#include <optional>

#include "jx/core/array.h"
#include "jx/lax/numpy/promotion.h"

namespace jx::numpy {

Array sum(const Array& x, const Axis& axis = {}, bool keepdims = false, std::optional<DType> dtype = std::nullopt);
Array prod(const Array& x, const Axis& axis = {}, bool keepdims = false, std::optional<DType> dtype = std::nullopt);
// max/min of an empty selection throw ValueError (no identity), as in NumPy.
Array max(const Array& x, const Axis& axis = {}, bool keepdims = false);
Array min(const Array& x, const Axis& axis = {}, bool keepdims = false);
Array amax(const Array& x, const Axis& axis = {}, bool keepdims = false);
Array amin(const Array& x, const Axis& axis = {}, bool keepdims = false);
Array ptp(const Array& x, const Axis& axis = {}, bool keepdims = false);
Array all(const Array& x, const Axis& axis = {}, bool keepdims = false);
Array any(const Array& x, const Axis& axis = {}, bool keepdims = false);
Array mean(const Array& x, const Axis& axis = {}, bool keepdims = false, std::optional<DType> dtype = std::nullopt);
Array var(const Array& x, const Axis& axis = {}, bool keepdims = false, int64_t ddof = 0,
          std::optional<DType> dtype = std::nullopt);
Array std(const Array& x, const Axis& axis = {}, bool keepdims = false, int64_t ddof = 0,
          std::optional<DType> dtype = std::nullopt);
// Index of the first max/min along axis (flattened when axis is absent); int32.
Array argmax(const Array& x, std::optional<int64_t> axis = std::nullopt, bool keepdims = false);
Array argmin(const Array& x, std::optional<int64_t> axis = std::nullopt, bool keepdims = false);
// Along axis (flattened when absent).
Array cumsum(const Array& x, std::optional<int64_t> axis = std::nullopt, std::optional<DType> dtype = std::nullopt);
Array cumprod(const Array& x, std::optional<int64_t> axis = std::nullopt, std::optional<DType> dtype = std::nullopt);
Array cummax(const Array& x, std::optional<int64_t> axis = std::nullopt);
Array cummin(const Array& x, std::optional<int64_t> axis = std::nullopt);
// log(sum(exp(x))) computed stably (jax.nn.logsumexp).
Array logsumexp(const Array& x, const Axis& axis = {}, bool keepdims = false);
Array count_nonzero(const Array& x, const Axis& axis = {}, bool keepdims = false);

}  // namespace jx::numpy

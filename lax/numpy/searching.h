// jnp searching: searchsorted, and the data-dependent nonzero / argwhere / flatnonzero
// (https://numpy.org/doc/stable/reference/routines.sort.html#searching).
//
// The result shape of nonzero depends on the values, so on a traced array (under jit, vmap,
// grad) these need `size`: the first `size` indices are kept, missing ones are `fill_value`
// (0 by default), exactly as jnp.nonzero(x, size=..., fill_value=...). Without `size` they
// read the values on the host (also under grad and jvp, whose tracers carry concrete values)
// and throw ConcretizationError under jit and vmap.
//
//   jnp::searchsorted(jnp::array({1, 2, 3, 4, 5}), 3);            // 2
//   jnp::searchsorted(a, v, "right");
//   auto idx = jnp::nonzero(x);                                     // one int32 array per axis
//   auto f = jx::jit([](Array x) { return jnp::flatnonzero(x, 4, -1); });
//   jnp::argwhere(x);                                               // i32[count, ndim]
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "jx/core/array.h"
#include "jx/lax/numpy/promotion.h"

namespace jx::numpy {

// Indices (int32, v's shape) where v's elements would be inserted into the sorted 1-D `a`
// to keep it sorted: side "left" gives the first such index, "right" the last. `sorter`
// (argsort(a)) sorts an unsorted `a`. NaNs sort last, as in jnp.sort. One vectorized binary
// search (ceil(log2(len(a) + 1)) gathers), traceable under jit and vmap.
Array searchsorted(const Array& a, const ArrayLike& v, std::string_view side = "left",
                   const std::optional<Array>& sorter = std::nullopt);

// The indices of the nonzero elements, one int32 array per axis of a (ndim >= 1), in
// row-major order.
std::vector<Array> nonzero(const Array& a, std::optional<int64_t> size = std::nullopt,
                           std::optional<int64_t> fill_value = std::nullopt);
// The same indices as rows: int32[count (or size), a.ndim].
Array argwhere(const Array& a, std::optional<int64_t> size = std::nullopt,
               std::optional<int64_t> fill_value = std::nullopt);
// nonzero(ravel(a))[0].
Array flatnonzero(const Array& a, std::optional<int64_t> size = std::nullopt,
                  std::optional<int64_t> fill_value = std::nullopt);

namespace internal {
// The host value of a data-dependent result size, or JAX's ConcretizationError when x is a
// tracer: "The size argument of jnp.<op> must be statically specified ...".
int64_t ConcreteSize(std::string_view op, const Array& x, std::string_view size_argument, int64_t (*count)(const Array&));
}  // namespace internal

}  // namespace jx::numpy

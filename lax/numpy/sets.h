// jnp.unique (https://numpy.org/doc/stable/reference/generated/numpy.unique.html): the sorted
// unique elements of the flattened array, optionally with the first index of each, the inverse
// indices (input-shaped, NumPy 2's layout: values[inverse] == x) and the counts.
//
// The result size depends on the values: under jit or vmap pass `size` (ConcretizationError
// otherwise, as JAX); missing entries are fill_value (default: the minimum, values[0]), their
// indices point at the minimum's and their counts are 0, as jnp.unique(..., size=...).
//
//   jnp::unique(jnp::array({3, 1, 3, 2}));                                  // [1 2 3]
//   auto r = jnp::unique(x, {.return_inverse = true, .return_counts = true});
//   r.values; *r.inverse; *r.counts;
//   auto [values, counts] = jnp::unique_counts(x);                        // array API form
//   auto f = jx::jit([](Array x) { return jnp::unique(x, {.size = 4, .fill_value = -1}).values; });
#pragma once

#include <optional>

#include "jx/core/array.h"
#include "jx/lax/numpy/promotion.h"

namespace jx::numpy {

struct UniqueOptions {
  bool return_index = false;
  bool return_inverse = false;
  bool return_counts = false;
  bool equal_nan = true;  // NaNs count as one value
  std::optional<int64_t> size{};
  std::optional<double> fill_value{};
};

// What unique returns: the values, and each requested extra (int32).
struct UniqueResult {
  Array values;
  std::optional<Array> indices;
  std::optional<Array> inverse;
  std::optional<Array> counts;
};

Array unique(const Array& x);
UniqueResult unique(const Array& x, const UniqueOptions& options);

// The array API's forms (jnp.unique_all, unique_counts, unique_inverse, unique_values): NaNs
// are distinct values there (equal_nan=False), and the results are named fields.
struct UniqueAllResult {
  Array values, indices, inverse_indices, counts;
};
struct UniqueCountsResult {
  Array values, counts;
};
struct UniqueInverseResult {
  Array values, inverse_indices;
};
UniqueAllResult unique_all(const Array& x, std::optional<int64_t> size = std::nullopt,
                           std::optional<double> fill_value = std::nullopt);
UniqueCountsResult unique_counts(const Array& x, std::optional<int64_t> size = std::nullopt,
                                 std::optional<double> fill_value = std::nullopt);
UniqueInverseResult unique_inverse(const Array& x, std::optional<int64_t> size = std::nullopt,
                                   std::optional<double> fill_value = std::nullopt);
Array unique_values(const Array& x, std::optional<int64_t> size = std::nullopt,
                    std::optional<double> fill_value = std::nullopt);

}  // namespace jx::numpy

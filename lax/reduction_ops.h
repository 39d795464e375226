// Reductions over a set of axes, and argmax/argmin along one axis.
//
//   lax::reduce_sum(x, {0, 2}); lax::argmax(x, 1, jx::int32);
#pragma once

#include <vector>

#include "jx/core/array.h"

namespace jx::lax {

Array reduce_sum(const Array& x, const std::vector<int64_t>& axes);
Array reduce_prod(const Array& x, const std::vector<int64_t>& axes);
Array reduce_max(const Array& x, const std::vector<int64_t>& axes);
Array reduce_min(const Array& x, const std::vector<int64_t>& axes);
Array reduce_and(const Array& x, const std::vector<int64_t>& axes);
Array reduce_or(const Array& x, const std::vector<int64_t>& axes);
// First index of the max/min along axis (NaN counts as the max, as in NumPy).
Array argmax(const Array& x, int64_t axis, DType index_dtype = int32);
Array argmin(const Array& x, int64_t axis, DType index_dtype = int32);

}  // namespace jx::lax

// Cumulative (scan-like) reductions along one axis.
//
//   lax::cumsum(x, 0); lax::cumlogsumexp(x, 1, /*reverse=*/true);
#pragma once

#include "jx/core/array.h"

namespace jx::lax {

Array cumsum(const Array& x, int64_t axis = 0, bool reverse = false);
Array cumprod(const Array& x, int64_t axis = 0, bool reverse = false);
Array cummax(const Array& x, int64_t axis = 0, bool reverse = false);
Array cummin(const Array& x, int64_t axis = 0, bool reverse = false);
Array cumlogsumexp(const Array& x, int64_t axis = 0, bool reverse = false);

}  // namespace jx::lax

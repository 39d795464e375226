// Windowed reductions (pooling): reduce_window with max or sum.
//
//   lax::reduce_window_max(x, {1, 2, 2, 1}, {1, 2, 2, 1}, {{0,0},{0,0},{0,0},{0,0}});
#pragma once

#include <utility>
#include <vector>

#include "jx/core/array.h"

namespace jx::lax {

using WindowPadding = std::vector<std::pair<int64_t, int64_t>>;

Array reduce_window_sum(const Array& x, const std::vector<int64_t>& window_dimensions,
                        const std::vector<int64_t>& window_strides, const WindowPadding& padding,
                        const std::vector<int64_t>& base_dilation = {},
                        const std::vector<int64_t>& window_dilation = {});
Array reduce_window_max(const Array& x, const std::vector<int64_t>& window_dimensions,
                        const std::vector<int64_t>& window_strides, const WindowPadding& padding,
                        const std::vector<int64_t>& base_dilation = {},
                        const std::vector<int64_t>& window_dilation = {});

// lax.reduce_window with a named monoid: computation is "add" (init 0) or "max" (init -inf).
enum class WindowReduction { kSum, kMax };
Array reduce_window(const Array& x, WindowReduction computation, const std::vector<int64_t>& window_dimensions,
                    const std::vector<int64_t>& window_strides, const WindowPadding& padding,
                    const std::vector<int64_t>& base_dilation = {},
                    const std::vector<int64_t>& window_dilation = {});

}  // namespace jx::lax

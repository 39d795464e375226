// Windowed reductions (pooling): reduce_window with sum, max or min. Padding is explicit
// (low, high) pairs per axis or one of JAX's strings "SAME", "SAME_LOWER", "VALID" (resolved
// by lax::padtype_to_pads against the window, its dilation and the strides).
//
//   lax::reduce_window_max(x, {1, 2, 2, 1}, {1, 2, 2, 1}, {{0,0},{0,0},{0,0},{0,0}});
//   lax::reduce_window_min(x, {1, 3, 3, 1}, {1, 1, 1, 1}, "SAME");   // min pooling
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "jx/core/array.h"

namespace jx::lax {

using WindowPadding = std::vector<std::pair<int64_t, int64_t>>;

// A window padding as JAX takes it: explicit pairs or a string ("SAME", "SAME_LOWER",
// "VALID", any case).
class WindowPaddingLike {
 public:
  WindowPaddingLike(WindowPadding pads) : value_(std::move(pads)) {}
  WindowPaddingLike(std::initializer_list<std::pair<int64_t, int64_t>> pads) : value_(WindowPadding(pads)) {}
  WindowPaddingLike(const char* padtype) : value_(std::string(padtype)) {}
  WindowPaddingLike(std::string padtype) : value_(std::move(padtype)) {}
  // The explicit pads for operand shape x: a string resolved by lax::padtype_to_pads against
  // window_dimensions and window_strides, as JAX's reduce_window does (dilations play no part).
  WindowPadding Resolve(const Shape& x, const std::vector<int64_t>& window_dimensions,
                        const std::vector<int64_t>& window_strides) const;

 private:
  std::variant<WindowPadding, std::string> value_;
};

Array reduce_window_sum(const Array& x, const std::vector<int64_t>& window_dimensions,
                        const std::vector<int64_t>& window_strides, const WindowPaddingLike& padding,
                        const std::vector<int64_t>& base_dilation = {},
                        const std::vector<int64_t>& window_dilation = {});
Array reduce_window_max(const Array& x, const std::vector<int64_t>& window_dimensions,
                        const std::vector<int64_t>& window_strides, const WindowPaddingLike& padding,
                        const std::vector<int64_t>& base_dilation = {},
                        const std::vector<int64_t>& window_dilation = {});

Array reduce_window_min(const Array& x, const std::vector<int64_t>& window_dimensions,
                        const std::vector<int64_t>& window_strides, const WindowPaddingLike& padding,
                        const std::vector<int64_t>& base_dilation = {},
                        const std::vector<int64_t>& window_dilation = {});

// lax.reduce_window with a named monoid: "add" (init 0), "max" (init -inf) or "min" (+inf).
enum class WindowReduction { kSum, kMax, kMin };
Array reduce_window(const Array& x, WindowReduction computation, const std::vector<int64_t>& window_dimensions,
                    const std::vector<int64_t>& window_strides, const WindowPaddingLike& padding,
                    const std::vector<int64_t>& base_dilation = {},
                    const std::vector<int64_t>& window_dilation = {});

}  // namespace jx::lax

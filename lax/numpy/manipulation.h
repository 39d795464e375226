// jnp shape manipulation, joining/splitting, indexing helpers and sorting.
//
//   auto y = jnp::reshape(x, {2, -1});             // -1 is inferred
//   jnp::transpose(x);                              // reverses the axes
//   jnp::moveaxis(x, 0, -1);
//   jnp::concatenate({a, b}, 1);                    // promotes dtypes like JAX
//   jnp::stack({a, b});                             // new leading axis
//   auto parts = jnp::split(x, 3, /*axis=*/1);      // 3 equal parts
//   jnp::take(x, jnp::array({2, 0}), 1);            // columns 2 and 0
//   jnp::pad(x, {{1, 1}, {0, 2}});                  // zeros; also "edge", "wrap", "reflect", "symmetric"
//   jnp::tile(x, {2, 1}); jnp::repeat(x, 3, 0);
#pragma once

#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "jx/core/array.h"
#include "jx/lax/numpy/promotion.h"

namespace jx::numpy {

// Shape.
Array reshape(const Array& x, const Shape& new_shape);  // one dimension may be -1
Array ravel(const Array& x);
Array transpose(const Array& x, std::optional<std::vector<int64_t>> axes = std::nullopt);
Array matrix_transpose(const Array& x);  // swaps the last two axes
Array swapaxes(const Array& x, int64_t axis1, int64_t axis2);
Array moveaxis(const Array& x, int64_t source, int64_t destination);
Array moveaxis(const Array& x, const std::vector<int64_t>& source, const std::vector<int64_t>& destination);
Array expand_dims(const Array& x, const Axis& axis);
// Removes the given size-1 axes (all size-1 axes by default).
Array squeeze(const Array& x, const Axis& axis = {});
Array atleast_1d(const Array& x);
Array atleast_2d(const Array& x);
Array atleast_3d(const Array& x);
std::vector<Array> broadcast_arrays(const std::vector<Array>& xs);

// Joining and splitting (operands are promoted to a common dtype).
// axis std::nullopt flattens the operands first.
Array concatenate(const std::vector<Array>& xs, std::optional<int64_t> axis = 0);
Array stack(const std::vector<Array>& xs, int64_t axis = 0);
Array vstack(const std::vector<Array>& xs);
Array hstack(const std::vector<Array>& xs);
Array dstack(const std::vector<Array>& xs);
Array column_stack(const std::vector<Array>& xs);
// sections equal parts (ValueError unless they divide the axis), or split before each index.
std::vector<Array> split(const Array& x, int64_t sections, int64_t axis = 0);
std::vector<Array> split(const Array& x, const std::vector<int64_t>& indices, int64_t axis = 0);
// Like split with sections, but allows unequal parts (the first ones one longer).
std::vector<Array> array_split(const Array& x, int64_t sections, int64_t axis = 0);
Array tile(const Array& x, const std::vector<int64_t>& reps);
// Repeats each element; axis std::nullopt flattens first.
Array repeat(const Array& x, int64_t repeats, std::optional<int64_t> axis = std::nullopt);
Array repeat(const Array& x, const std::vector<int64_t>& repeats, std::optional<int64_t> axis = std::nullopt);

// Padding: pad_width per axis as (before, after); one pair or one int applies to every axis.
// mode: "constant" (constant_value), "edge", "wrap", "reflect", "symmetric".
Array pad(const Array& x, const std::vector<std::pair<int64_t, int64_t>>& pad_width,
          std::string_view mode = "constant", const ArrayLike& constant_value = 0);
Array pad(const Array& x, std::pair<int64_t, int64_t> pad_width, std::string_view mode = "constant",
          const ArrayLike& constant_value = 0);
Array pad(const Array& x, int64_t pad_width, std::string_view mode = "constant", const ArrayLike& constant_value = 0);

// Reordering.
Array flip(const Array& x, const Axis& axis = {});
Array fliplr(const Array& x);
Array flipud(const Array& x);
// Rolls elements along axis (the flattened array when absent).
Array roll(const Array& x, int64_t shift, std::optional<int64_t> axis = std::nullopt);
Array rot90(const Array& x, int64_t k = 1, std::pair<int64_t, int64_t> axes = {0, 1});

// Indexing. Negative indices count from the end. mode "fill" (default, JAX's): out-of-range
// indices give NaN for floats, the minimum for signed ints, the maximum for unsigned ints and
// true for bool; "clip" clamps; "wrap" wraps around.
Array take(const Array& x, const ArrayLike& indices, std::optional<int64_t> axis = std::nullopt,
           std::string_view mode = "fill");
Array take_along_axis(const Array& x, const Array& indices, int64_t axis, std::string_view mode = "fill");

// Triangles and diagonals (of the last two axes for tril/triu).
Array tril(const Array& x, int64_t k = 0);
Array triu(const Array& x, int64_t k = 0);
Array diagonal(const Array& x, int64_t offset = 0, int64_t axis1 = 0, int64_t axis2 = 1);
// 1-D v: the square matrix with v on the k-th diagonal; 2-D v: its k-th diagonal.
Array diag(const Array& v, int64_t k = 0);
Array trace(const Array& x, int64_t offset = 0, int64_t axis1 = 0, int64_t axis2 = 1);

// Sorting (stable; NaNs last). axis std::nullopt sorts the flattened array.
Array sort(const Array& x, std::optional<int64_t> axis = -1);
Array argsort(const Array& x, std::optional<int64_t> axis = -1);

// Coordinate grids ("xy": Cartesian, the first two outputs transposed; "ij": matrix indexing).
std::vector<Array> meshgrid(const std::vector<Array>& xs, std::string_view indexing = "xy");

}  // namespace jx::numpy

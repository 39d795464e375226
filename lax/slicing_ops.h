// Slicing, indexing and update primitives, with XLA's gather/scatter dimension numbers.
//
//   lax::slice(x, {0, 1}, {2, 3});
//   lax::dynamic_slice(x, {i, j}, {2, 2});   // a negative start counts from the end (once, as in
//                                            // JAX), then starts are clamped into range (XLA)
//   lax::pad(x, 0.0, {{1, 1, 0}, {0, 0, 1}});          // (low, high, interior) per axis
#pragma once

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "jx/core/array.h"

namespace jx::lax {

Array slice(const Array& x, const std::vector<int64_t>& start_indices, const std::vector<int64_t>& limit_indices,
            const std::vector<int64_t>& strides = {});
Array dynamic_slice(const Array& x, const std::vector<Array>& start_indices, const std::vector<int64_t>& slice_sizes);
Array dynamic_update_slice(const Array& x, const Array& update, const std::vector<Array>& start_indices);
Array concatenate(const std::vector<Array>& operands, int64_t dimension);
// padding_config: (low, high, interior) per axis; low/high may be negative (cropping).
Array pad(const Array& x, const Array& padding_value, const std::vector<std::array<int64_t, 3>>& padding_config);

// How out-of-bounds indices behave (JAX's GatherScatterMode; JAX's mode=None is kFillOrDrop).
//   kClip: start indices are clamped so the whole slice/window is in bounds.
//   kFillOrDrop: a gather slice that is not entirely in bounds is filled with fill_value; a
//     scatter window that is not entirely in bounds is dropped.
//   kPromiseInBounds: the caller promises in-bounds indices (jx clamps, like XLA's gather,
//     and drops out-of-bounds scatter windows).
enum class GatherScatterMode { kClip, kFillOrDrop, kPromiseInBounds };

// XLA gather: index_vector_dim is the last axis of start_indices. The batching dims (pairs of
// operand and start_indices axes gathered together, as vmap produces) default to none.
struct GatherDimensionNumbers {
  std::vector<int64_t> offset_dims;
  std::vector<int64_t> collapsed_slice_dims;
  std::vector<int64_t> start_index_map;
  std::vector<int64_t> operand_batching_dims = {};
  std::vector<int64_t> start_indices_batching_dims = {};
};
// fill_value (kFillOrDrop only) defaults as in JAX: NaN for floats, the most negative value for
// signed integers, the largest for unsigned integers, true for bool.
Array gather(const Array& operand, const Array& start_indices, const GatherDimensionNumbers& dimension_numbers,
             const std::vector<int64_t>& slice_sizes, GatherScatterMode mode = GatherScatterMode::kFillOrDrop,
             std::optional<double> fill_value = std::nullopt);

struct ScatterDimensionNumbers {
  std::vector<int64_t> update_window_dims;
  std::vector<int64_t> inserted_window_dims;
  std::vector<int64_t> scatter_dims_to_operand_dims;
  std::vector<int64_t> operand_batching_dims = {};
  std::vector<int64_t> scatter_indices_batching_dims = {};
};
// scatter overwrites (the last update wins for duplicate indices); scatter_add accumulates, in
// update order (deterministic, also when parallel; bool adds are logical or).
Array scatter(const Array& operand, const Array& scatter_indices, const Array& updates,
              const ScatterDimensionNumbers& dimension_numbers, GatherScatterMode mode = GatherScatterMode::kFillOrDrop);
Array scatter_add(const Array& operand, const Array& scatter_indices, const Array& updates,
                  const ScatterDimensionNumbers& dimension_numbers,
                  GatherScatterMode mode = GatherScatterMode::kFillOrDrop);
// Multiply / take the min / the max of each operand element with every update landing on it
// (JAX's lax.scatter_mul, scatter_min, scatter_max). scatter_mul's derivative in the updates
// needs unique indices (as JAX's); scatter_min/max's tangent averages the tangents of the
// tied winners (the operand included), as JAX's.
Array scatter_mul(const Array& operand, const Array& scatter_indices, const Array& updates,
                  const ScatterDimensionNumbers& dimension_numbers,
                  GatherScatterMode mode = GatherScatterMode::kFillOrDrop, bool unique_indices = false);
Array scatter_min(const Array& operand, const Array& scatter_indices, const Array& updates,
                  const ScatterDimensionNumbers& dimension_numbers,
                  GatherScatterMode mode = GatherScatterMode::kFillOrDrop);
Array scatter_max(const Array& operand, const Array& scatter_indices, const Array& updates,
                  const ScatterDimensionNumbers& dimension_numbers,
                  GatherScatterMode mode = GatherScatterMode::kFillOrDrop);

}  // namespace jx::lax

// The parsed form of an index, shared by the read (indexing.cc) and update (index_update.cc)
// paths. Internal to lax.
#pragma once

#include <functional>
#include <optional>
#include <string_view>
#include <vector>

#include "absl/types/span.h"
#include "jx/core/array.h"
#include "jx/core/jaxpr.h"
#include "jx/core/param_map.h"
#include "jx/lax/indexing.h"
#include "jx/lax/slicing_ops.h"

namespace jx::lax::internal {

// One entry per operand dim (plus newaxis entries) after the ellipsis is expanded, trailing
// full slices added, boolean masks replaced by their nonzero coordinates and 0-d booleans by
// one new axis of size 1 or 0.
struct IndexEntry {
  enum Kind { kInt, kSlice, kNewAxis, kArray } kind;
  int64_t i = 0;     // kInt: as written (may be negative or out of bounds); kNewAxis: its size (1, or
                     // 0 for a false 0-d boolean index)
  Slice slice;       // kSlice
  Array array;       // kArray: an integer array (any rank; 0-d when a traced integer)
  int64_t dim = -1;  // the operand dim it indexes (-1 for newaxis)
};
std::vector<IndexEntry> ParseIndex(const Array& x, absl::Span<const Index> indices, std::string_view op);

// NumPy's 0-d booleans among integer-array or mask indices (x[True, idx]): each becomes an
// integer-array index (zeros of shape (1,) for true, (0,) for false) into a unit axis inserted
// into x where it stands, so it broadcasts with the other advanced indices as NumPy's does.
// Returns false, leaving the outputs alone, for an index without that combination (ParseIndex
// turns lone 0-d booleans into a new axis of size 1 or 0).
bool ExpandScalarBooleans(const Array& x, absl::Span<const Index> indices, Array* expanded,
                          std::vector<Index>* expanded_indices);

// Python's slice.indices(n) and the number of elements it selects.
struct SliceBounds {
  int64_t start, step, length;
};
SliceBounds ResolveSlice(const Slice& s, int64_t n);

// int32, or int64 when an operand dim or an index needs it.
DType IndexDTypeFor(const Array& x, const std::vector<IndexEntry>& entries);
// i converted to dtype, negative values counting from the end (once) of an axis of size n.
Array NormalizeIndex(const Array& i, int64_t n, DType dtype);
// x with every kSlice entry applied (lax::slice with strides, rev for negative steps).
Array ApplyStaticSlices(const Array& x, const std::vector<IndexEntry>& entries);
// The shape of x[index]: sliced dims (their sizes from sliced_shape), newaxis dims and the
// broadcast integer-index dims (batch_shape) where NumPy puts them.
Shape ResultShape(const Array& x, const std::vector<IndexEntry>& entries, const Shape& sliced_shape,
                  const Shape& batch_shape);
// Where a gather over `entries` (integer entries collapsed, batch_shape broadcast from them)
// puts the sliced dims: their positions in its output (offset_dims), and that output's shape
// (newaxis dims left out; the batch dims where NumPy puts them).
struct GatherLayout {
  std::vector<int64_t> offset_dims;
  Shape out_shape;
};
GatherLayout LayoutOf(const std::vector<IndexEntry>& entries, const Shape& sliced_shape, const Shape& batch_shape);
// JAX's indices_are_sorted / unique_indices promises (x.at[idx].op(..., unique_indices=True)),
// recorded on the scatter equations; unique_indices lets scatter_mul differentiate in its
// updates, as in JAX.
struct ScatterHints {
  bool indices_are_sorted = false;
  bool unique_indices = false;
};

// UpdateItem with the caller's promises.
Array UpdateItem(const Array& x, absl::Span<const Index> indices, const Array& values, UpdateOp op,
                 GatherScatterMode mode, const ScatterHints& hints);

// x.at[indices].apply(fn), as JAX's: one scatter_apply (a `scatter` whose update_jaxpr is
// (x, _) -> fn(x)) of zeros into x at the index, fn applied once per update, so once per
// time the index names an element (a duplicated index applies it twice, in update order).
// Its jvp raises JAX's NotImplementedError, whatever the index.
Array ApplyItem(const Array& x, absl::Span<const Index> indices, const std::function<Array(const Array&)>& fn,
                GatherScatterMode mode, const ScatterHints& hints);

// The scatter primitive that combines as op does (scatter for kSet, scatter_add, scatter_mul,
// scatter_min, scatter_max) with the hints in its params.
Array ScatterOp(UpdateOp op, const Array& operand, const Array& scatter_indices, const Array& updates,
                const ScatterDimensionNumbers& dimension_numbers, GatherScatterMode mode, const ScatterHints& hints);

// JAX's scatter_apply equation: kScatter with update_jaxpr (a closed jaxpr (old, update) ->
// new over scalars of the operand's dtype); scatter_apply.cc evaluates it.
Array ScatterApplyOp(const ClosedJaxpr& update_jaxpr, const Array& operand, const Array& scatter_indices,
                     const Array& updates, const ScatterDimensionNumbers& dimension_numbers, GatherScatterMode mode,
                     const ScatterHints& hints);
// The jaxpr (x, _) -> fn(x) over scalars of dtype, fn checked to map a scalar to a scalar of
// dtype (a weak result is cast); `op` names the caller in errors.
ClosedJaxpr ApplyJaxpr(const std::function<Array(const Array&)>& fn, DType dtype, std::string_view op);
// The impl of a scatter with an update_jaxpr: every update element's flat destination, each
// applied in update order as rounds of distinct destinations: O(updates) work, one vmapped
// call of the update computation per round.
Arrays ScatterApplyImpl(absl::Span<const Array> in, const ParamMap& params);

// The gather path of GetItem (also used with kFillOrDrop for flat positions of updates).
Array GatherGetItem(const Array& x, const std::vector<IndexEntry>& entries, GatherScatterMode mode,
                    std::optional<double> fill_value);

}  // namespace jx::lax::internal

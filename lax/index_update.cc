// x.at[idx].set/add/multiply/min/max/apply as JAX's _scatter_update (lax/indexing.h).
#include <algorithm>
#include <limits>
#include <vector>

#include "jx/lax/binary_ops.h"
#include "jx/lax/convert_ops.h"
#include "jx/lax/indexing.h"
#include "jx/lax/indexing_internal.h"
#include "jx/lax/numpy/promotion.h"
#include "jx/lax/shape_ops.h"

namespace jx::lax::internal {
namespace {

std::string_view OpName(UpdateOp op) {
  switch (op) {
    case UpdateOp::kSet: return "at[].set";
    case UpdateOp::kAdd: return "at[].add";
    case UpdateOp::kMultiply: return "at[].multiply";
    case UpdateOp::kMin: return "at[].min";
    case UpdateOp::kMax: return "at[].max";
  }
  return "at[]";
}

Array Combine(UpdateOp op, const Array& old_values, const Array& values) {
  switch (op) {
    case UpdateOp::kSet: return values;
    case UpdateOp::kAdd: return add(old_values, values);
    case UpdateOp::kMultiply: return mul(old_values, values);
    case UpdateOp::kMin: return min(old_values, values);
    case UpdateOp::kMax: return max(old_values, values);
  }
  return values;
}

// The values cast to x's dtype (JAX casts scatter updates to the operand's type) and broadcast
// to the indexed shape.
Array PrepareValues(const Array& x, const Array& values, const Shape& indexed_shape, UpdateOp op) {
  Array v = values.dtype() == x.dtype() ? values : convert_element_type(values, x.dtype());
  const Shape& s = v.shape();
  bool ok = s.size() <= indexed_shape.size();
  for (size_t k = 0; ok && k < s.size(); ++k) {
    const int64_t want = indexed_shape[indexed_shape.size() - s.size() + k];
    ok = s[k] == want || s[k] == 1;
  }
  if (!ok) {
    ThrowOpError<ShapeError>(OpName(op), "values of shape ", ShapeToString(values.shape()), " (",
                             values.aval().str(), ") cannot be broadcast to the indexed shape ",
                             ShapeToString(indexed_shape), " of ", x.aval().str());
  }
  return s == indexed_shape ? v : numpy::broadcast_to(v, indexed_shape);
}

// Integers (static or traced) and unit-step slices: one window, updated with
// dynamic_update_slice (in place under jit when x is dead after it or donated).
bool IsBasic(const std::vector<IndexEntry>& entries) {
  for (const IndexEntry& e : entries) {
    if (e.kind == IndexEntry::kArray && e.array.ndim() != 0) return false;
    if (e.kind == IndexEntry::kSlice && e.slice.step.value_or(1) != 1) return false;
  }
  return true;
}

Array BasicUpdate(const Array& x, const std::vector<IndexEntry>& entries, const Array& values, UpdateOp op,
                  GatherScatterMode mode) {
  const DType idt = IndexDTypeFor(x, entries);
  const bool drop = mode == GatherScatterMode::kFillOrDrop;
  std::vector<int64_t> sizes = x.shape();
  std::vector<Array> starts;
  for (int64_t d = 0; d < x.ndim(); ++d) starts.push_back(Array::Scalar(0, idt));
  Array in_bounds;  // a traced bool scalar, when some traced index may be out of bounds
  bool statically_dropped = false;
  for (const IndexEntry& e : entries) {
    if (e.kind == IndexEntry::kNewAxis) continue;
    const size_t d = static_cast<size_t>(e.dim);
    const int64_t n = x.shape()[d];
    if (e.kind == IndexEntry::kSlice) {
      const SliceBounds b = ResolveSlice(e.slice, n);
      starts[d] = Array::Scalar(static_cast<double>(b.start), idt);
      sizes[d] = b.length;
    } else if (e.kind == IndexEntry::kInt) {
      const int64_t c = e.i < 0 ? e.i + n : e.i;
      if (c < 0 || c >= n) {
        if (drop) statically_dropped = true;
      }
      starts[d] = Array::Scalar(static_cast<double>(std::clamp<int64_t>(c, 0, std::max<int64_t>(n - 1, 0))), idt);
      sizes[d] = 1;
    } else {
      const Array i = NormalizeIndex(e.array, n, idt);
      const Array zero = Array::Scalar(0, idt), top = Array::Scalar(static_cast<double>(std::max<int64_t>(n - 1, 0)), idt);
      if (drop) {
        const Array ok = bitwise_and(ge(i, zero), lt(i, Array::Scalar(static_cast<double>(n), idt)));
        in_bounds = in_bounds.defined() ? bitwise_and(in_bounds, ok) : ok;
      }
      starts[d] = clamp(zero, i, top);
      sizes[d] = 1;
    }
  }
  const Shape indexed_shape = ResultShape(x, entries, sizes, {});
  const Array v = PrepareValues(x, values, indexed_shape, op);
  if (statically_dropped || std::find(sizes.begin(), sizes.end(), 0) != sizes.end() || NumElements(indexed_shape) == 0) {
    return x;
  }
  const Array window_values = reshape(v, sizes);
  const bool needs_old = op != UpdateOp::kSet || in_bounds.defined();
  const Array old_values = needs_old ? dynamic_slice(x, starts, sizes) : Array();
  Array window = Combine(op, old_values, window_values);
  if (in_bounds.defined()) {
    // An out-of-bounds traced index writes the window's own values back: a no-op, as JAX drops it.
    window = select(broadcast_in_dim(in_bounds, sizes, {}), window, old_values);
  }
  return dynamic_update_slice(x, window, starts);
}

// Integer arrays with integers, unit-step slices and newaxis: one scatter into x whose index
// vectors are the (broadcast, normalized) integer indices plus each slice's start, and whose
// windows are the slices (JAX's _index_to_gather, used for scatter). O(updates) work.
Array DirectScatterUpdate(const Array& x, const std::vector<IndexEntry>& entries, const Array& values, UpdateOp op,
                          GatherScatterMode mode, const ScatterHints& hints, const ClosedJaxpr* apply) {
  const DType idt = IndexDTypeFor(x, entries);
  std::vector<Array> adv;
  std::vector<int64_t> adv_dims;
  std::vector<Shape> shapes;
  Shape sliced_shape = x.shape();
  std::vector<std::pair<int64_t, int64_t>> slice_starts;  // (dim, start) of slices not covering their dim
  for (const IndexEntry& e : entries) {
    if (e.kind == IndexEntry::kNewAxis) continue;
    const size_t d = static_cast<size_t>(e.dim);
    const int64_t n = x.shape()[d];
    if (e.kind == IndexEntry::kSlice) {
      const SliceBounds b = ResolveSlice(e.slice, n);
      sliced_shape[d] = b.length;
      if (b.length != n) slice_starts.push_back({e.dim, b.start});
      continue;
    }
    const Array raw = e.kind == IndexEntry::kInt ? Array::Scalar(static_cast<double>(e.i), int64) : e.array;
    adv.push_back(NormalizeIndex(raw, n, idt));
    adv_dims.push_back(e.dim);
    shapes.push_back(raw.shape());
  }
  const Shape batch = numpy::broadcast_shapes(shapes, OpName(op));
  const Array v = PrepareValues(x, values, ResultShape(x, entries, sliced_shape, batch), op);
  if (std::find(sliced_shape.begin(), sliced_shape.end(), 0) != sliced_shape.end() || NumElements(batch) == 0) {
    return x;
  }
  Shape one = batch;
  one.push_back(1);
  std::vector<Array> parts;
  ScatterDimensionNumbers dn;
  for (size_t k = 0; k < adv.size(); ++k) {
    parts.push_back(reshape(numpy::broadcast_to(adv[k], batch), one));
    dn.scatter_dims_to_operand_dims.push_back(adv_dims[k]);
  }
  for (const auto& [dim, start] : slice_starts) {
    parts.push_back(broadcast_in_dim(Array::Scalar(static_cast<double>(start), idt), one, {}));
    dn.scatter_dims_to_operand_dims.push_back(dim);
  }
  // No index vector components (x.at[:] or x.at[...]): one window, the whole of x.
  Shape no_components = batch;
  no_components.push_back(0);
  const Array indices = parts.empty() ? broadcast_in_dim(Array::Scalar(0, idt), no_components, {})
                                      : concatenate(parts, static_cast<int64_t>(batch.size()));
  dn.inserted_window_dims = adv_dims;
  const GatherLayout layout = LayoutOf(entries, sliced_shape, batch);
  dn.update_window_dims = layout.offset_dims;
  const Array updates = reshape(v, layout.out_shape);
  if (apply != nullptr) return ScatterApplyOp(*apply, x, indices, updates, dn, mode, hints);
  return ScatterOp(op, x, indices, updates, dn, mode, hints);
}

bool HasStridedSlice(const std::vector<IndexEntry>& entries) {
  for (const IndexEntry& e : entries) {
    if (e.kind == IndexEntry::kSlice && e.slice.step.value_or(1) != 1) return true;
  }
  return false;
}

// Strided slices: scatter into x flattened, at the flat positions x[index] reads (the same index
// applied to an iota; out-of-bounds positions become -1 and are dropped unless clamped).
Array ScatterUpdate(const Array& x, const std::vector<IndexEntry>& entries, const Array& values, UpdateOp op,
                    GatherScatterMode mode, const ScatterHints& hints, const ClosedJaxpr* apply) {
  const DType idt = x.size() > std::numeric_limits<int32_t>::max() ? int64 : int32;
  const Array positions_of_x = reshape(iota(idt, x.size()), x.shape());
  const GatherScatterMode read_mode =
      mode == GatherScatterMode::kFillOrDrop ? GatherScatterMode::kFillOrDrop : GatherScatterMode::kClip;
  const Array positions = GatherGetItem(positions_of_x, entries, read_mode, -1.0);
  const Array v = PrepareValues(x, values, positions.shape(), op);
  Shape index_shape = positions.shape();
  index_shape.push_back(1);
  const Array flat = reshape(x, {x.size()});
  const ScatterDimensionNumbers dn{{}, {0}, {0}};
  const Array indices = reshape(positions, index_shape);
  const GatherScatterMode scatter_mode =
      mode == GatherScatterMode::kFillOrDrop ? GatherScatterMode::kFillOrDrop : GatherScatterMode::kPromiseInBounds;
  const Array out = apply != nullptr ? ScatterApplyOp(*apply, flat, indices, v, dn, scatter_mode, hints)
                                     : ScatterOp(op, flat, indices, v, dn, scatter_mode, hints);
  return reshape(out, x.shape());
}

}  // namespace

Array ApplyItem(const Array& x, absl::Span<const Index> indices, const std::function<Array(const Array&)>& fn,
                GatherScatterMode mode, const ScatterHints& hints) {
  if (!fn) ThrowOpError<ValueError>("at[].apply", "fn is empty");
  Array expanded;
  std::vector<Index> expanded_indices;
  if (ExpandScalarBooleans(x, indices, &expanded, &expanded_indices)) {
    return reshape(ApplyItem(expanded, expanded_indices, fn, mode, hints), x.shape());
  }
  const std::vector<IndexEntry> entries = ParseIndex(x, indices, "at[].apply");
  const ClosedJaxpr update = ApplyJaxpr(fn, x.dtype(), "at[].apply");
  // JAX's unused updates: zeros of x's dtype in the indexed shape.
  const Array zero = Array::Scalar(0, x.dtype());
  return HasStridedSlice(entries) ? ScatterUpdate(x, entries, zero, UpdateOp::kSet, mode, hints, &update)
                                  : DirectScatterUpdate(x, entries, zero, UpdateOp::kSet, mode, hints, &update);
}

Array UpdateItem(const Array& x, absl::Span<const Index> indices, const Array& values, UpdateOp op,
                 GatherScatterMode mode) {
  return UpdateItem(x, indices, values, op, mode, ScatterHints{});
}

Array UpdateItem(const Array& x, absl::Span<const Index> indices, const Array& values, UpdateOp op,
                 GatherScatterMode mode, const ScatterHints& hints) {
  if (!values.defined()) ThrowOpError<ValueError>(OpName(op), "values is an empty Array handle");
  Array expanded;
  std::vector<Index> expanded_indices;
  if (ExpandScalarBooleans(x, indices, &expanded, &expanded_indices)) {
    return reshape(UpdateItem(expanded, expanded_indices, values, op, mode, hints), x.shape());
  }
  const std::vector<IndexEntry> entries = ParseIndex(x, indices, OpName(op));
  if (IsBasic(entries)) return BasicUpdate(x, entries, values, op, mode);
  return HasStridedSlice(entries) ? ScatterUpdate(x, entries, values, op, mode, hints, nullptr)
                                  : DirectScatterUpdate(x, entries, values, op, mode, hints, nullptr);
}

}  // namespace jx::lax::internal

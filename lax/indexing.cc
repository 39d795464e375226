// x[...] as JAX reads it (lax/indexing.h): parsing the index, the slice path and the gather path.
#include "jx/lax/indexing.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "jx/core/str_util.h"
#include "jx/lax/binary_ops.h"
#include "jx/lax/convert_ops.h"
#include "jx/lax/indexing_internal.h"
#include "jx/lax/numpy/promotion.h"
#include "jx/lax/shape_ops.h"

namespace jx::lax::internal {
namespace {

constexpr std::string_view kOp = "getitem";

// The nonzero coordinates of a concrete boolean mask, one int32/int64 array per mask axis.
std::vector<Array> MaskToIndices(const Array& mask, const Shape& indexed_dims, int64_t first_axis) {
  const ConcreteArray* value = mask.impl()->ConcreteValue();
  if (value == nullptr) {
    ThrowOpError<NonConcreteBooleanIndexError>(
        kOp, "Array boolean indices must be concrete; got ", mask.aval().str(),
        " (its result shape depends on its values). Use jnp::where(mask, x, fill) or a gather with integer "
        "indices instead.",
        mask.impl()->Provenance());
  }
  if (mask.shape() != indexed_dims) {
    for (size_t k = 0; k < indexed_dims.size() && k < mask.shape().size(); ++k) {
      if (mask.shape()[k] != indexed_dims[k]) {
        ThrowOpError<IndexError>(kOp, "boolean index did not match indexed array along axis ",
                                 first_axis + static_cast<int64_t>(k), "; size of axis is ", indexed_dims[k],
                                 " but size of corresponding boolean axis is ", mask.shape()[k]);
      }
    }
  }
  const int64_t n = mask.size();
  auto flags = std::make_unique<bool[]>(static_cast<size_t>(std::max<int64_t>(n, 1)));
  ConvertElements<bool>(mask.dtype(), value->data(), n, flags.get());
  const size_t rank = mask.shape().size();
  std::vector<std::vector<int64_t>> coords(rank);
  std::vector<int64_t> idx(rank, 0);
  for (int64_t flat = 0; flat < n; ++flat) {
    if (flags[static_cast<size_t>(flat)]) {
      for (size_t k = 0; k < rank; ++k) coords[k].push_back(idx[k]);
    }
    for (size_t k = rank; k-- > 0;) {
      if (++idx[k] < mask.shape()[k]) break;
      idx[k] = 0;
    }
  }
  std::vector<Array> out;
  for (size_t k = 0; k < rank; ++k) {
    const DType dt = indexed_dims[k] > std::numeric_limits<int32_t>::max() ? int64 : int32;
    out.push_back(numpy::internal::FromInt64s(coords[k], {static_cast<int64_t>(coords[k].size())}, dt));
  }
  return out;
}

// The value of a 0-d boolean index, which must be concrete (JAX's rule for boolean indices).
bool ScalarBoolValue(const Array& b, std::string_view op) {
  const ConcreteArray* value = b.impl()->ConcreteValue();
  if (value == nullptr) {
    ThrowOpError<NonConcreteBooleanIndexError>(
        op, "Array boolean indices must be concrete; got ", b.aval().str(),
        " (its value decides the result's shape). Use lax::cond or jnp::where instead.", b.impl()->Provenance());
  }
  bool flag = false;
  ConvertElements<bool>(b.dtype(), value->data(), 1, &flag);
  return flag;
}

}  // namespace

std::vector<IndexEntry> ParseIndex(const Array& x, absl::Span<const Index> indices, std::string_view op) {
  const int64_t rank = x.ndim();
  int64_t consumed = 0, ellipses = 0, scalar_bools = 0, arrays = 0;
  for (const Index& index : indices) {
    const Index::Value& v = index.value();
    if (std::holds_alternative<EllipsisType>(v)) {
      ++ellipses;
    } else if (const Array* a = std::get_if<Array>(&v)) {
      if (!a->defined()) ThrowOpError<ValueError>(op, "an index array is empty (a default-constructed Array)");
      if (IsBool(a->dtype())) {
        consumed += a->ndim();  // a 0-d boolean consumes no dim (NumPy's x[True])
        if (a->ndim() == 0) ++scalar_bools;
        if (a->ndim() > 0) ++arrays;
      } else {
        if (!IsInteger(a->dtype())) {
          ThrowOpError<TypeError>(op, "Indexer must have integer or boolean type, got indexer with type ",
                                  dtype_name(a->dtype()), " (", a->aval().str(), ") for array ", x.aval().str());
        }
        ++consumed;
        if (a->ndim() > 0) ++arrays;
      }
    } else if (!std::holds_alternative<NewAxis>(v)) {
      ++consumed;
    }
  }
  if (ellipses > 1) ThrowOpError<IndexError>(op, "an index can only have a single ellipsis ('...')");
  if (scalar_bools > 0 && arrays > 0) {  // ExpandScalarBooleans rewrites these first
    throw InternalError(StrCat("[", op, "] 0-d boolean indices with array indices reached ParseIndex"));
  }
  if (consumed > rank) {
    ThrowOpError<IndexError>(op, "too many indices for array: array is ", rank, "-dimensional (", x.aval().str(),
                             "), but ", consumed, " were indexed");
  }
  std::vector<IndexEntry> out;
  int64_t dim = 0, first_scalar_bool = -1;
  auto full_slices = [&](int64_t count) {
    for (int64_t k = 0; k < count; ++k) out.push_back(IndexEntry{IndexEntry::kSlice, 0, Slice{}, {}, dim++});
  };
  for (const Index& index : indices) {
    const Index::Value& v = index.value();
    if (std::holds_alternative<EllipsisType>(v)) {
      full_slices(rank - consumed);
    } else if (std::holds_alternative<NewAxis>(v)) {
      out.push_back(IndexEntry{IndexEntry::kNewAxis, 1, Slice{}, {}, -1});
    } else if (const int64_t* i = std::get_if<int64_t>(&v)) {
      out.push_back(IndexEntry{IndexEntry::kInt, *i, Slice{}, {}, dim++});
    } else if (const Slice* s = std::get_if<Slice>(&v)) {
      if (s->step && *s->step == 0) ThrowOpError<ValueError>(op, "slice step cannot be zero");
      out.push_back(IndexEntry{IndexEntry::kSlice, 0, *s, {}, dim++});
    } else {
      const Array& a = std::get<Array>(v);
      if (IsBool(a.dtype()) && a.ndim() == 0) {
        // NumPy's (and JAX's) scalar boolean: one new axis, of size 1 when every 0-d boolean
        // of the index is true and 0 otherwise, where the first one stands.
        const bool value = ScalarBoolValue(a, op);
        if (first_scalar_bool < 0) {
          first_scalar_bool = static_cast<int64_t>(out.size());
          out.push_back(IndexEntry{IndexEntry::kNewAxis, value ? 1 : 0, Slice{}, {}, -1});
        } else if (!value) {
          out[static_cast<size_t>(first_scalar_bool)].i = 0;
        }
      } else if (IsBool(a.dtype())) {
        const Shape dims(x.shape().begin() + dim, x.shape().begin() + dim + a.ndim());
        // The mask's coordinates are adjacent integer-array indices, as in NumPy.
        for (Array& c : MaskToIndices(a, dims, dim)) {
          out.push_back(IndexEntry{IndexEntry::kArray, 0, Slice{}, std::move(c), dim++});
        }
      } else {
        out.push_back(IndexEntry{IndexEntry::kArray, 0, Slice{}, a, dim++});
      }
    }
  }
  full_slices(rank - dim);
  return out;
}

bool ExpandScalarBooleans(const Array& x, absl::Span<const Index> indices, Array* expanded,
                          std::vector<Index>* expanded_indices) {
  int64_t consumed = 0;
  bool any_bool = false, any_array = false;
  for (const Index& index : indices) {
    const Index::Value& v = index.value();
    if (const Array* a = std::get_if<Array>(&v)) {
      if (!a->defined()) return false;  // ParseIndex names the error
      const bool is_bool = IsBool(a->dtype());
      any_bool |= is_bool && a->ndim() == 0;
      any_array |= a->ndim() > 0;
      consumed += is_bool ? a->ndim() : 1;
    } else if (!std::holds_alternative<NewAxis>(v) && !std::holds_alternative<EllipsisType>(v)) {
      ++consumed;
    }
  }
  if (!any_bool || !any_array) return false;
  std::vector<int64_t> inserted;  // the unit axes, in the expanded array's dims
  int64_t pos = 0;
  for (const Index& index : indices) {
    const Index::Value& v = index.value();
    if (std::holds_alternative<EllipsisType>(v)) {
      pos += std::max<int64_t>(x.ndim() - consumed, 0);
      expanded_indices->push_back(index);
    } else if (std::holds_alternative<NewAxis>(v)) {
      expanded_indices->push_back(index);
    } else if (const Array* a = std::get_if<Array>(&v); a != nullptr && IsBool(a->dtype()) && a->ndim() == 0) {
      const bool value = ScalarBoolValue(*a, kOp);
      inserted.push_back(pos++);
      expanded_indices->push_back(Index(broadcast_in_dim(Array::Scalar(0, int32), {value ? 1 : 0}, {})));
    } else {
      pos += a != nullptr && IsBool(a->dtype()) ? a->ndim() : 1;
      expanded_indices->push_back(index);
    }
  }
  *expanded = expand_dims(x, inserted);
  return true;
}

SliceBounds ResolveSlice(const Slice& s, int64_t n) {
  // Python's slice.indices(n).
  const int64_t step = s.step.value_or(1);
  int64_t start, stop;
  if (step > 0) {
    start = s.start ? (*s.start < 0 ? std::max<int64_t>(*s.start + n, 0) : std::min(*s.start, n)) : 0;
    stop = s.stop ? (*s.stop < 0 ? std::max<int64_t>(*s.stop + n, 0) : std::min(*s.stop, n)) : n;
  } else {
    start = s.start ? (*s.start < 0 ? std::max<int64_t>(*s.start + n, -1) : std::min(*s.start, n - 1)) : n - 1;
    stop = s.stop ? (*s.stop < 0 ? std::max<int64_t>(*s.stop + n, -1) : std::min(*s.stop, n - 1)) : -1;
  }
  int64_t length = 0;
  if (step > 0 && stop > start) length = (stop - start + step - 1) / step;
  if (step < 0 && start > stop) length = (start - stop + (-step) - 1) / (-step);
  return {start, step, length};
}

DType IndexDTypeFor(const Array& x, const std::vector<IndexEntry>& entries) {
  for (int64_t d : x.shape()) {
    if (d > std::numeric_limits<int32_t>::max()) return int64;
  }
  for (const IndexEntry& e : entries) {
    if (e.kind == IndexEntry::kArray && (ItemSize(e.array.dtype()) == 8 || e.array.dtype() == uint32)) return int64;
  }
  return int32;
}

Array NormalizeIndex(const Array& i, int64_t n, DType dtype) {
  Array a = i.dtype() == dtype ? i : convert_element_type(i, dtype);
  if (!IsSignedInt(i.dtype())) return a;
  // JAX's _normalize_index: 0-d constants, so `lt a 0:i32[]` and `add a 5:i32[]` stage literals.
  const Array zero = Array::Scalar(0, dtype), size = Array::Scalar(static_cast<double>(n), dtype);
  const Array negative = lt(a, zero);  // named: JAX's order, whatever the compiler's argument order
  const Array wrapped = add(a, size);
  return select(negative, wrapped, a);
}

Array ApplyStaticSlices(const Array& x, const std::vector<IndexEntry>& entries) {
  std::vector<int64_t> start(static_cast<size_t>(x.ndim()), 0), limit = x.shape(),
      stride(static_cast<size_t>(x.ndim()), 1), reversed;
  bool any = false;
  for (const IndexEntry& e : entries) {
    if (e.kind != IndexEntry::kSlice) continue;
    const size_t d = static_cast<size_t>(e.dim);
    const SliceBounds b = ResolveSlice(e.slice, x.shape()[d]);
    if (b.length == 0) {
      start[d] = limit[d] = 0;
    } else if (b.step > 0) {
      start[d] = b.start;
      limit[d] = b.start + (b.length - 1) * b.step + 1;
      stride[d] = b.step;
    } else {
      // Elements start, start+step, ...: read them upward from the last, then reverse.
      const int64_t last = b.start + (b.length - 1) * b.step;
      start[d] = last;
      limit[d] = b.start + 1;
      stride[d] = -b.step;
      if (b.length > 1) reversed.push_back(e.dim);
    }
    any = any || start[d] != 0 || limit[d] != x.shape()[d] || stride[d] != 1;
  }
  Array out = x;
  if (any) {
    const bool unit = std::all_of(stride.begin(), stride.end(), [](int64_t s) { return s == 1; });
    out = slice(x, start, limit, unit ? std::vector<int64_t>{} : stride);
  }
  return reversed.empty() ? out : rev(out, reversed);
}

namespace {

// Static ints and 0-d traced ints, slices, newaxis: slice, dynamic_slice, reshape.
Array BasicGetItem(const Array& x, const std::vector<IndexEntry>& entries) {
  Array y = ApplyStaticSlices(x, entries);
  const DType idt = IndexDTypeFor(x, entries);
  std::vector<int64_t> start(static_cast<size_t>(x.ndim()), 0), limit = y.shape();
  std::vector<Array> dyn_start;
  bool any_static = false, any_dynamic = false;
  for (const IndexEntry& e : entries) {
    if (e.kind == IndexEntry::kInt) {
      const int64_t n = x.shape()[static_cast<size_t>(e.dim)];
      if (n == 0) {
        ThrowOpError<IndexError>(kOp, "index ", e.i, " is out of bounds for axis ", e.dim, " with size 0 (array ",
                                 x.aval().str(), ")");
      }
      int64_t c = e.i < 0 ? e.i + n : e.i;
      c = std::clamp<int64_t>(c, 0, n - 1);  // JAX clamps out-of-bounds reads
      start[static_cast<size_t>(e.dim)] = c;
      limit[static_cast<size_t>(e.dim)] = c + 1;
      any_static = true;
    } else if (e.kind == IndexEntry::kArray) {
      any_dynamic = true;
    }
  }
  if (any_static) y = slice(y, start, limit);
  if (any_dynamic) {
    std::vector<int64_t> sizes = y.shape();
    for (int64_t d = 0; d < y.ndim(); ++d) dyn_start.push_back(Array::Scalar(0, idt));
    for (const IndexEntry& e : entries) {
      if (e.kind != IndexEntry::kArray) continue;
      const int64_t n = x.shape()[static_cast<size_t>(e.dim)];
      if (n == 0) {
        ThrowOpError<IndexError>(kOp, "cannot index axis ", e.dim, " of size 0 (array ", x.aval().str(), ")");
      }
      // Negative counts from the end once; then dynamic_slice clamps (JAX's clamped read).
      dyn_start[static_cast<size_t>(e.dim)] = NormalizeIndex(e.array, n, idt);
      sizes[static_cast<size_t>(e.dim)] = 1;
    }
    y = dynamic_slice(y, dyn_start, sizes);
  }
  // As JAX's jaxprs: squeeze the integer-indexed dims, expand_dims for newaxis.
  std::vector<int64_t> squeezed, inserted;
  int64_t pos = 0;
  for (const IndexEntry& e : entries) {
    if (e.kind == IndexEntry::kInt || e.kind == IndexEntry::kArray) squeezed.push_back(e.dim);
    if (e.kind == IndexEntry::kSlice) ++pos;
    if (e.kind == IndexEntry::kNewAxis) inserted.push_back(pos++);
  }
  if (!squeezed.empty()) y = squeeze(y, squeezed);
  return inserted.empty() ? y : expand_dims(y, inserted);
}

}  // namespace

Shape ResultShape(const Array& x, const std::vector<IndexEntry>& entries, const Shape& sliced_shape,
                  const Shape& batch_shape) {
  (void)x;
  bool adjacent = true;
  int64_t first = -1, last = -1, count = 0;
  for (size_t k = 0; k < entries.size(); ++k) {
    if (entries[k].kind != IndexEntry::kArray && entries[k].kind != IndexEntry::kInt) continue;
    if (first < 0) first = static_cast<int64_t>(k);
    last = static_cast<int64_t>(k);
    ++count;
  }
  adjacent = count == 0 || last - first + 1 == count;
  Shape out;
  if (!adjacent) out = batch_shape;
  bool placed = !adjacent;
  for (const IndexEntry& e : entries) {
    switch (e.kind) {
      case IndexEntry::kNewAxis: out.push_back(e.i); break;
      case IndexEntry::kSlice: out.push_back(sliced_shape[static_cast<size_t>(e.dim)]); break;
      case IndexEntry::kInt:
      case IndexEntry::kArray:
        if (!placed) out.insert(out.end(), batch_shape.begin(), batch_shape.end());
        placed = true;
        break;
    }
  }
  return out;
}

GatherLayout LayoutOf(const std::vector<IndexEntry>& entries, const Shape& sliced_shape, const Shape& batch_shape) {
  int64_t first = -1, last = -1, count = 0;
  for (size_t k = 0; k < entries.size(); ++k) {
    if (entries[k].kind != IndexEntry::kArray && entries[k].kind != IndexEntry::kInt) continue;
    if (first < 0) first = static_cast<int64_t>(k);
    last = static_cast<int64_t>(k);
    ++count;
  }
  const bool adjacent = count == 0 || last - first + 1 == count;
  GatherLayout layout;
  if (!adjacent) layout.out_shape = batch_shape;
  bool placed = !adjacent;
  for (const IndexEntry& e : entries) {
    if (e.kind == IndexEntry::kSlice) {
      layout.offset_dims.push_back(static_cast<int64_t>(layout.out_shape.size()));
      layout.out_shape.push_back(sliced_shape[static_cast<size_t>(e.dim)]);
    } else if ((e.kind == IndexEntry::kInt || e.kind == IndexEntry::kArray) && !placed) {
      layout.out_shape.insert(layout.out_shape.end(), batch_shape.begin(), batch_shape.end());
      placed = true;
    }
  }
  return layout;
}

Array GatherGetItem(const Array& x, const std::vector<IndexEntry>& entries, GatherScatterMode mode,
                    std::optional<double> fill_value) {
  const Array y = ApplyStaticSlices(x, entries);
  const bool any_int = std::any_of(entries.begin(), entries.end(), [](const IndexEntry& e) {
    return e.kind == IndexEntry::kInt || e.kind == IndexEntry::kArray;
  });
  if (!any_int) return reshape(y, ResultShape(x, entries, y.shape(), {}));
  const DType idt = IndexDTypeFor(x, entries);
  std::vector<Array> adv;
  std::vector<int64_t> adv_dims;
  std::vector<Shape> shapes;
  for (const IndexEntry& e : entries) {
    if (e.kind != IndexEntry::kInt && e.kind != IndexEntry::kArray) continue;
    const int64_t n = x.shape()[static_cast<size_t>(e.dim)];
    const Array raw = e.kind == IndexEntry::kInt ? Array::Scalar(static_cast<double>(e.i), int64) : e.array;
    adv.push_back(NormalizeIndex(raw, n, idt));
    adv_dims.push_back(e.dim);
    shapes.push_back(raw.shape());
  }
  const Shape batch = numpy::broadcast_shapes(shapes, kOp);
  const int64_t nb = static_cast<int64_t>(batch.size());
  Shape one = batch;
  one.push_back(1);
  std::vector<Array> parts;
  for (const Array& a : adv) parts.push_back(reshape(numpy::broadcast_to(a, batch), one));
  const Array indices = concatenate(parts, nb);

  // Gather output: the sliced dims in order with the batch dims where ResultShape puts them
  // (newaxis dims are added by the final reshape).
  GatherDimensionNumbers dn;
  dn.offset_dims = LayoutOf(entries, y.shape(), batch).offset_dims;
  dn.collapsed_slice_dims = adv_dims;
  dn.start_index_map = adv_dims;
  std::vector<int64_t> slice_sizes = y.shape();
  for (int64_t d : adv_dims) slice_sizes[static_cast<size_t>(d)] = 1;
  const Array g = gather(y, indices, dn, slice_sizes, mode, fill_value);
  return reshape(g, ResultShape(x, entries, y.shape(), batch));
}

Array GetItem(const Array& x, absl::Span<const Index> indices, GatherScatterMode mode,
              std::optional<double> fill_value) {
  Array expanded;
  std::vector<Index> expanded_indices;
  if (ExpandScalarBooleans(x, indices, &expanded, &expanded_indices)) {
    return GetItem(expanded, expanded_indices, mode, fill_value);
  }
  std::vector<IndexEntry> entries = ParseIndex(x, indices, kOp);
  bool empty_axis = false;
  for (IndexEntry& e : entries) {
    if (e.kind == IndexEntry::kNewAxis && e.i == 0) {
      empty_axis = true;
      e.i = 1;
    }
  }
  if (empty_axis) {
    // x[False]: x[None] with the new axis sliced to size 0 (only basic indices come with it).
    std::vector<IndexEntry> with_empty = ParseIndex(x, indices, kOp);
    Shape shape;
    for (const IndexEntry& e : with_empty) {
      if (e.kind == IndexEntry::kNewAxis) shape.push_back(e.i);
      if (e.kind == IndexEntry::kSlice) shape.push_back(ResolveSlice(e.slice, x.shape()[static_cast<size_t>(e.dim)]).length);
    }
    const Array y = BasicGetItem(x, entries);
    return slice(y, std::vector<int64_t>(static_cast<size_t>(y.ndim()), 0), shape);
  }
  bool gather_needed = false, any_int = false;
  for (const IndexEntry& e : entries) {
    if (e.kind == IndexEntry::kArray && e.array.ndim() > 0) gather_needed = true;
    if (e.kind == IndexEntry::kArray || e.kind == IndexEntry::kInt) any_int = true;
  }
  // Filling out-of-bounds integers needs the gather's masks; clamping needs only slices.
  if (mode == GatherScatterMode::kFillOrDrop && any_int) gather_needed = true;
  return gather_needed ? GatherGetItem(x, entries, mode, fill_value) : BasicGetItem(x, entries);
}

GatherScatterMode ParseIndexMode(std::string_view mode, bool for_update, std::string_view op) {
  if (mode.empty()) return for_update ? GatherScatterMode::kFillOrDrop : GatherScatterMode::kPromiseInBounds;
  if (mode == "clip") return GatherScatterMode::kClip;
  if (mode == "drop" || mode == "fill") return GatherScatterMode::kFillOrDrop;
  if (mode == "promise_in_bounds") return GatherScatterMode::kPromiseInBounds;
  ThrowOpError<ValueError>(op, "mode must be one of 'clip', 'drop', 'fill', 'promise_in_bounds'; got '", mode, "'");
}

}  // namespace jx::lax::internal

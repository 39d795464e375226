#include "jx/lax/numpy/manipulation.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "jx/core/errors.h"
#include "jx/lax/binary_ops.h"
#include "jx/lax/convert_ops.h"
#include "jx/lax/shape_ops.h"
#include "jx/lax/slicing_ops.h"
#include "jx/lax/sort_ops.h"
#include "jx/lax/numpy/creation.h"
#include "jx/lax/numpy/math.h"
#include "jx/lax/numpy/reductions.h"

namespace jx::numpy {
namespace {

size_t U(int64_t i) { return static_cast<size_t>(i); }

std::vector<int64_t> Iota(int64_t n) {
  std::vector<int64_t> v(U(n));
  std::iota(v.begin(), v.end(), 0);
  return v;
}

// x[start:limit] along one axis.
Array SliceAxis(const Array& x, int64_t axis, int64_t start, int64_t limit) {
  std::vector<int64_t> starts(U(x.ndim()), 0);
  std::vector<int64_t> limits = x.shape();
  starts[U(axis)] = start;
  limits[U(axis)] = limit;
  return lax::slice(x, starts, limits);
}

Array ZerosLike(const Array& x) { return zeros(x.shape(), x.dtype()); }

}  // namespace

// ---- shape ----

Array reshape(const Array& x, const Shape& new_shape) { return x.reshape(new_shape); }
Array ravel(const Array& x) { return lax::reshape(x, {x.size()}); }

Array transpose(const Array& x, std::optional<std::vector<int64_t>> axes) {
  std::vector<int64_t> perm;
  if (!axes) {
    perm = Iota(x.ndim());
    std::reverse(perm.begin(), perm.end());
  } else {
    if (static_cast<int64_t>(axes->size()) != x.ndim()) {
      ThrowOpError<ValueError>("transpose", "axes ", ShapeToString(*axes), " don't match array ", x.aval().str());
    }
    for (int64_t a : *axes) perm.push_back(CanonicalizeAxis(a, x.ndim(), "transpose"));
  }
  return lax::transpose(x, perm);
}

Array matrix_transpose(const Array& x) {
  if (x.ndim() < 2) ThrowOpError<ValueError>("matrix_transpose", "requires at least 2 dimensions, got ", x.aval().str());
  return swapaxes(x, -1, -2);
}

Array swapaxes(const Array& x, int64_t axis1, int64_t axis2) {
  std::vector<int64_t> perm = Iota(x.ndim());
  std::swap(perm[U(CanonicalizeAxis(axis1, x.ndim(), "swapaxes"))], perm[U(CanonicalizeAxis(axis2, x.ndim(), "swapaxes"))]);
  return lax::transpose(x, perm);
}

Array moveaxis(const Array& x, int64_t source, int64_t destination) {
  return moveaxis(x, std::vector<int64_t>{source}, std::vector<int64_t>{destination});
}

Array moveaxis(const Array& x, const std::vector<int64_t>& source, const std::vector<int64_t>& destination) {
  if (source.size() != destination.size()) {
    ThrowOpError<ValueError>("moveaxis", "source and destination must have the same number of elements, got ",
                             ShapeToString(source), " and ", ShapeToString(destination));
  }
  const int64_t n = x.ndim();
  std::vector<int64_t> src, dst;
  for (int64_t a : source) src.push_back(CanonicalizeAxis(a, n, "moveaxis"));
  for (int64_t a : destination) dst.push_back(CanonicalizeAxis(a, n, "moveaxis"));
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < n; ++i) {
    if (std::find(src.begin(), src.end(), i) == src.end()) perm.push_back(i);
  }
  // Insert the moved axes at their destinations in increasing destination order.
  std::vector<size_t> order(src.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return dst[a] < dst[b]; });
  for (size_t k : order) perm.insert(perm.begin() + dst[k], src[k]);
  return lax::transpose(x, perm);
}

Array expand_dims(const Array& x, const Axis& axis) {
  if (axis.all()) ThrowOpError<ValueError>("expand_dims", "requires an axis, got none for ", x.aval().str());
  const int64_t out_rank = x.ndim() + static_cast<int64_t>(axis.axes().size());
  return lax::expand_dims(x, axis.Canonical(out_rank, "expand_dims"));
}

Array squeeze(const Array& x, const Axis& axis) {
  std::vector<int64_t> dims;
  if (axis.all()) {
    for (int64_t i = 0; i < x.ndim(); ++i) {
      if (x.shape()[U(i)] == 1) dims.push_back(i);
    }
  } else {
    dims = axis.Canonical(x.ndim(), "squeeze");
    for (int64_t d : dims) {
      if (x.shape()[U(d)] != 1) {
        ThrowOpError<ValueError>("squeeze", "cannot select an axis to squeeze out which has size not equal to one (axis ",
                                 d, " of ", x.aval().str(), ")");
      }
    }
  }
  return lax::squeeze(x, dims);
}

Array atleast_1d(const Array& x) { return x.ndim() >= 1 ? x : lax::reshape(x, {1}); }
Array atleast_2d(const Array& x) {
  if (x.ndim() >= 2) return x;
  return lax::reshape(x, x.ndim() == 0 ? Shape{1, 1} : Shape{1, x.shape()[0]});
}
Array atleast_3d(const Array& x) {
  if (x.ndim() >= 3) return x;
  if (x.ndim() == 0) return lax::reshape(x, {1, 1, 1});
  if (x.ndim() == 1) return lax::reshape(x, {1, x.shape()[0], 1});
  return lax::reshape(x, {x.shape()[0], x.shape()[1], 1});
}

std::vector<Array> broadcast_arrays(const std::vector<Array>& xs) {
  std::vector<Shape> shapes;
  for (const Array& x : xs) shapes.push_back(x.shape());
  const Shape shape = broadcast_shapes(shapes, "broadcast_arrays");
  std::vector<Array> out;
  for (const Array& x : xs) out.push_back(broadcast_to(x, shape));
  return out;
}

// ---- joining and splitting ----

Array concatenate(const std::vector<Array>& xs, std::optional<int64_t> axis) {
  if (xs.empty()) ThrowOpError<ValueError>("concatenate", "need at least one array to concatenate");
  std::vector<ArrayLike> args(xs.begin(), xs.end());
  std::vector<Array> ops = promote_dtypes(args);
  if (!axis) {
    for (Array& a : ops) a = ravel(a);
    return lax::concatenate(ops, 0);
  }
  if (ops[0].ndim() == 0) ThrowOpError<ValueError>("concatenate", "zero-dimensional arrays cannot be concatenated");
  const int64_t ax = CanonicalizeAxis(*axis, ops[0].ndim(), "concatenate");
  if (ops.size() == 1) return ops[0];
  return lax::concatenate(ops, ax);
}

Array stack(const std::vector<Array>& xs, int64_t axis) {
  if (xs.empty()) ThrowOpError<ValueError>("stack", "need at least one array to stack");
  const Shape& s0 = xs[0].shape();
  const int64_t ax = CanonicalizeAxis(axis, xs[0].ndim() + 1, "stack");
  std::vector<Array> parts;
  for (const Array& x : xs) {
    if (x.shape() != s0) {
      ThrowOpError<ShapeError>("stack", "all input arrays must have the same shape, got ", xs[0].aval().str(), " and ",
                               x.aval().str());
    }
    parts.push_back(lax::expand_dims(x, {ax}));
  }
  return concatenate(parts, ax);
}

Array vstack(const std::vector<Array>& xs) {
  std::vector<Array> parts;
  for (const Array& x : xs) parts.push_back(atleast_2d(x));
  return concatenate(parts, 0);
}

Array hstack(const std::vector<Array>& xs) {
  std::vector<Array> parts;
  for (const Array& x : xs) parts.push_back(atleast_1d(x));
  return concatenate(parts, !parts.empty() && parts[0].ndim() == 1 ? 0 : 1);
}

Array dstack(const std::vector<Array>& xs) {
  std::vector<Array> parts;
  for (const Array& x : xs) parts.push_back(atleast_3d(x));
  return concatenate(parts, 2);
}

Array column_stack(const std::vector<Array>& xs) {
  std::vector<Array> parts;
  for (const Array& x : xs) parts.push_back(x.ndim() < 2 ? lax::reshape(atleast_1d(x), {atleast_1d(x).size(), 1}) : x);
  return concatenate(parts, 1);
}

std::vector<Array> split(const Array& x, const std::vector<int64_t>& indices, int64_t axis) {
  const int64_t ax = CanonicalizeAxis(axis, x.ndim(), "split");
  const int64_t n = x.shape()[U(ax)];
  std::vector<Array> out;
  int64_t start = 0;
  for (size_t i = 0; i <= indices.size(); ++i) {
    int64_t end = i < indices.size() ? indices[i] : n;
    if (end < 0) end += n;
    end = std::clamp<int64_t>(end, 0, n);
    const int64_t s = std::min(start, end);
    out.push_back(SliceAxis(x, ax, s, end));
    start = std::max(start, end);
  }
  return out;
}

std::vector<Array> split(const Array& x, int64_t sections, int64_t axis) {
  const int64_t ax = CanonicalizeAxis(axis, x.ndim(), "split");
  const int64_t n = x.shape()[U(ax)];
  if (sections <= 0 || n % sections != 0) {
    ThrowOpError<ValueError>("split", "array split does not result in an equal division: ", n, " elements into ",
                             sections, " sections (", x.aval().str(), ", axis ", axis, ")");
  }
  std::vector<int64_t> idx;
  for (int64_t i = 1; i < sections; ++i) idx.push_back(i * (n / sections));
  return split(x, idx, ax);
}

std::vector<Array> array_split(const Array& x, int64_t sections, int64_t axis) {
  const int64_t ax = CanonicalizeAxis(axis, x.ndim(), "array_split");
  if (sections <= 0) ThrowOpError<ValueError>("array_split", "number sections must be larger than 0, got ", sections);
  const int64_t n = x.shape()[U(ax)];
  const int64_t each = n / sections, extra = n % sections;
  std::vector<int64_t> idx;
  int64_t pos = 0;
  for (int64_t i = 0; i + 1 < sections; ++i) {
    pos += each + (i < extra ? 1 : 0);
    idx.push_back(pos);
  }
  return split(x, idx, ax);
}

Array tile(const Array& x, const std::vector<int64_t>& reps) {
  for (int64_t r : reps) {
    if (r < 0) ThrowOpError<ValueError>("tile", "negative repetitions ", ShapeToString(reps), " for ", x.aval().str());
  }
  const int64_t d = std::max<int64_t>(static_cast<int64_t>(reps.size()), x.ndim());
  std::vector<int64_t> r(U(d) - reps.size(), 1);
  r.insert(r.end(), reps.begin(), reps.end());
  Shape s(U(d) - U(x.ndim()), 1);
  s.insert(s.end(), x.shape().begin(), x.shape().end());
  // Broadcast to (r0, s0, r1, s1, ...) and merge each pair.
  Shape wide, out;
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < d; ++i) {
    wide.push_back(r[U(i)]);
    wide.push_back(s[U(i)]);
    dims.push_back(2 * i + 1);
    out.push_back(r[U(i)] * s[U(i)]);
  }
  return lax::reshape(lax::broadcast_in_dim(lax::reshape(x, s), wide, dims), out);
}

Array repeat(const Array& x, int64_t repeats, std::optional<int64_t> axis) {
  if (repeats < 0) ThrowOpError<ValueError>("repeat", "repeats may not be negative, got ", repeats);
  Array a = axis ? x : ravel(x);
  const int64_t ax = CanonicalizeAxis(axis.value_or(0), a.ndim(), "repeat");
  const Shape& s = a.shape();
  Shape wide(s.begin(), s.begin() + ax + 1);
  wide.push_back(repeats);
  wide.insert(wide.end(), s.begin() + ax + 1, s.end());
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < a.ndim(); ++i) dims.push_back(i <= ax ? i : i + 1);
  Shape out = s;
  out[U(ax)] *= repeats;
  return lax::reshape(lax::broadcast_in_dim(a, wide, dims), out);
}

Array repeat(const Array& x, const std::vector<int64_t>& repeats, std::optional<int64_t> axis) {
  if (repeats.size() == 1) return repeat(x, repeats[0], axis);
  Array a = axis ? x : ravel(x);
  const int64_t ax = CanonicalizeAxis(axis.value_or(0), a.ndim(), "repeat");
  const int64_t n = a.shape()[U(ax)];
  if (static_cast<int64_t>(repeats.size()) != n) {
    ThrowOpError<ValueError>("repeat", "repeats ", ShapeToString(repeats), " do not match axis ", ax, " of ", a.aval().str());
  }
  std::vector<int64_t> idx;
  for (int64_t i = 0; i < n; ++i) {
    if (repeats[U(i)] < 0) ThrowOpError<ValueError>("repeat", "repeats may not be negative, got ", ShapeToString(repeats));
    idx.insert(idx.end(), U(repeats[U(i)]), i);
  }
  return take(a, internal::FromInt64s(idx, Shape{static_cast<int64_t>(idx.size())}, int32), ax, "clip");
}

// ---- padding ----

namespace {

// Padding along one axis by repeating/reflecting slices of x.
Array PadAxis(const Array& x, int64_t ax, int64_t lo, int64_t hi, std::string_view mode) {
  const int64_t n = x.shape()[U(ax)];
  if (lo == 0 && hi == 0) return x;
  if (n == 0) ThrowOpError<ValueError>("pad", "can't extend empty axis ", ax, " of ", x.aval().str(), " using mode '", mode, "'");
  std::vector<Array> parts;
  if (mode == "edge") {
    Shape s = x.shape();
    if (lo > 0) {
      s[U(ax)] = lo;
      parts.push_back(broadcast_to(SliceAxis(x, ax, 0, 1), s));
    }
    parts.push_back(x);
    if (hi > 0) {
      s[U(ax)] = hi;
      parts.push_back(broadcast_to(SliceAxis(x, ax, n - 1, n), s));
    }
    return lax::concatenate(parts, ax);
  }
  if (mode == "wrap") {
    // Whole copies first, then the remainder.
    Array out = x;
    int64_t left = lo, right = hi;
    while (left > 0 || right > 0) {
      const int64_t l = std::min(left, n), r = std::min(right, n);
      std::vector<Array> p;
      if (l > 0) p.push_back(SliceAxis(x, ax, n - l, n));
      p.push_back(out);
      if (r > 0) p.push_back(SliceAxis(x, ax, 0, r));
      out = lax::concatenate(p, ax);
      left -= l;
      right -= r;
    }
    return out;
  }
  if (mode == "reflect" || mode == "symmetric") {
    const bool reflect = mode == "reflect";
    // Each step mirrors the current edge; repeated for pads longer than the axis.
    Array out = x;
    int64_t left = lo, right = hi;
    if (reflect && n == 1) {
      Shape s = x.shape();
      s[U(ax)] = n + lo + hi;
      return broadcast_to(x, s);
    }
    while (left > 0 || right > 0) {
      const int64_t cur = out.shape()[U(ax)];
      const int64_t avail = reflect ? cur - 1 : cur;
      const int64_t l = std::min(left, avail), r = std::min(right, avail);
      std::vector<Array> p;
      if (l > 0) {
        Array edge = reflect ? SliceAxis(out, ax, 1, l + 1) : SliceAxis(out, ax, 0, l);
        p.push_back(lax::rev(edge, {ax}));
      }
      p.push_back(out);
      if (r > 0) {
        Array edge = reflect ? SliceAxis(out, ax, cur - r - 1, cur - 1) : SliceAxis(out, ax, cur - r, cur);
        p.push_back(lax::rev(edge, {ax}));
      }
      out = lax::concatenate(p, ax);
      left -= l;
      right -= r;
    }
    return out;
  }
  ThrowOpError<NotImplementedError>("pad", "mode '", mode, "' (supported: constant, edge, wrap, reflect, symmetric)");
}

}  // namespace

Array pad(const Array& x, const std::vector<std::pair<int64_t, int64_t>>& pad_width, std::string_view mode,
          const ArrayLike& constant_value) {
  std::vector<std::pair<int64_t, int64_t>> pw = pad_width;
  if (pw.size() == 1 && x.ndim() != 1) pw.assign(U(x.ndim()), pad_width[0]);
  if (static_cast<int64_t>(pw.size()) != x.ndim()) {
    ThrowOpError<ValueError>("pad", "pad_width has ", pad_width.size(), " entries for array ", x.aval().str());
  }
  for (const auto& [lo, hi] : pw) {
    if (lo < 0 || hi < 0) ThrowOpError<ValueError>("pad", "index can't contain negative values (", lo, ", ", hi, ")");
  }
  if (mode == "constant") {
    std::vector<std::array<int64_t, 3>> config;
    for (const auto& [lo, hi] : pw) config.push_back({lo, hi, 0});
    return lax::pad(x, constant_value.as(x.dtype(), false), config);
  }
  Array out = x;
  for (int64_t i = 0; i < x.ndim(); ++i) out = PadAxis(out, i, pw[U(i)].first, pw[U(i)].second, mode);
  return out;
}

Array pad(const Array& x, std::pair<int64_t, int64_t> pad_width, std::string_view mode, const ArrayLike& constant_value) {
  return pad(x, std::vector<std::pair<int64_t, int64_t>>(U(x.ndim()), pad_width), mode, constant_value);
}

Array pad(const Array& x, int64_t pad_width, std::string_view mode, const ArrayLike& constant_value) {
  return pad(x, std::pair<int64_t, int64_t>{pad_width, pad_width}, mode, constant_value);
}

// ---- reordering ----

Array flip(const Array& x, const Axis& axis) { return lax::rev(x, axis.Canonical(x.ndim(), "flip")); }
Array fliplr(const Array& x) {
  if (x.ndim() < 2) ThrowOpError<ValueError>("fliplr", "requires at least 2 dimensions, got ", x.aval().str());
  return lax::rev(x, {1});
}
Array flipud(const Array& x) {
  if (x.ndim() < 1) ThrowOpError<ValueError>("flipud", "requires at least 1 dimension, got ", x.aval().str());
  return lax::rev(x, {0});
}

Array roll(const Array& x, int64_t shift, std::optional<int64_t> axis) {
  if (!axis) return lax::reshape(roll(ravel(x), shift, 0), x.shape());
  const int64_t ax = CanonicalizeAxis(*axis, x.ndim(), "roll");
  const int64_t n = x.shape()[U(ax)];
  if (n == 0) return x;
  const int64_t s = ((shift % n) + n) % n;
  if (s == 0) return x;
  return lax::concatenate({SliceAxis(x, ax, n - s, n), SliceAxis(x, ax, 0, n - s)}, ax);
}

Array rot90(const Array& x, int64_t k, std::pair<int64_t, int64_t> axes) {
  const int64_t a0 = CanonicalizeAxis(axes.first, x.ndim(), "rot90");
  const int64_t a1 = CanonicalizeAxis(axes.second, x.ndim(), "rot90");
  if (a0 == a1) ThrowOpError<ValueError>("rot90", "axes must be different, got (", axes.first, ", ", axes.second, ")");
  k = ((k % 4) + 4) % 4;
  if (k == 0) return x;
  if (k == 2) return lax::rev(x, {std::min(a0, a1), std::max(a0, a1)});
  if (k == 1) return swapaxes(lax::rev(x, {a1}), a0, a1);
  return lax::rev(swapaxes(x, a0, a1), {a1});
}

// ---- indexing ----

namespace {

lax::GatherScatterMode GatherMode(std::string_view op, std::string_view mode) {
  if (mode == "fill") return lax::GatherScatterMode::kFillOrDrop;
  if (mode == "clip") return lax::GatherScatterMode::kClip;
  if (mode == "wrap") return lax::GatherScatterMode::kPromiseInBounds;
  ThrowOpError<ValueError>(op, "invalid mode '", mode, "' (expected fill, clip or wrap)");
}

double FillValue(DType d) {
  if (IsFloating(d)) return std::numeric_limits<double>::quiet_NaN();
  if (IsBool(d)) return 1;
  switch (d) {
    case DType::kInt8: return -128;
    case DType::kInt16: return -32768;
    case DType::kInt32: return -2147483648.0;
    case DType::kInt64: return -9223372036854775808.0;
    case DType::kUInt8: return 255;
    case DType::kUInt16: return 65535;
    case DType::kUInt32: return 4294967295.0;
    default: return 18446744073709551615.0;
  }
}

// Integer indices into an axis of size n: negatives count from the end ("wrap": modulo n).
Array NormalizeIndices(std::string_view op, const ArrayLike& indices, int64_t n, std::string_view mode) {
  Array idx = indices.to_array();
  if (!IsInteger(idx.dtype())) {
    ThrowOpError<TypeError>(op, "indices must be integers, got ", idx.aval().str());
  }
  if (idx.weak_type()) idx = lax::convert_element_type(idx, idx.dtype(), false);
  if (mode == "wrap") return remainder(idx, ArrayLike(n).as(idx.dtype(), false));
  if (IsUnsignedInt(idx.dtype())) return idx;
  return where(less(idx, 0), add(idx, ArrayLike(n).as(idx.dtype(), false)), idx);
}

}  // namespace

Array take(const Array& x, const ArrayLike& indices, std::optional<int64_t> axis, std::string_view mode) {
  Array a = axis ? x : ravel(x);
  const int64_t ax = CanonicalizeAxis(axis.value_or(0), a.ndim(), "take");
  const lax::GatherScatterMode gmode = GatherMode("take", mode);
  Array idx = NormalizeIndices("take", indices, a.shape()[U(ax)], mode);
  const int64_t nidx = idx.ndim();
  lax::GatherDimensionNumbers dnums;
  for (int64_t i = 0; i < ax; ++i) dnums.offset_dims.push_back(i);
  for (int64_t i = ax + nidx; i < a.ndim() + nidx - 1; ++i) dnums.offset_dims.push_back(i);
  dnums.collapsed_slice_dims = {ax};
  dnums.start_index_map = {ax};
  std::vector<int64_t> slice_sizes = a.shape();
  slice_sizes[U(ax)] = 1;
  return lax::gather(a, lax::expand_dims(idx, {nidx}), dnums, slice_sizes, gmode, FillValue(a.dtype()));
}

Array take_along_axis(const Array& x, const Array& indices, int64_t axis, std::string_view mode) {
  const int64_t r = x.ndim();
  const int64_t ax = CanonicalizeAxis(axis, r, "take_along_axis");
  if (indices.ndim() != r) {
    ThrowOpError<ShapeError>("take_along_axis", "indices and array must have the same number of dimensions, got ",
                             indices.aval().str(), " and ", x.aval().str());
  }
  Shape out(U(r));
  for (int64_t d = 0; d < r; ++d) {
    const int64_t xd = x.shape()[U(d)], id = indices.shape()[U(d)];
    if (d == ax) {
      out[U(d)] = id;
    } else if (xd == id || id == 1 || xd == 1) {
      out[U(d)] = xd == 1 ? id : xd;
    } else {
      ThrowOpError<ShapeError>("take_along_axis", "indices ", indices.aval().str(), " do not broadcast with array ",
                               x.aval().str(), " at dimension ", d);
    }
  }
  const lax::GatherScatterMode gmode = GatherMode("take_along_axis", mode);
  Array idx = lax::convert_element_type(NormalizeIndices("take_along_axis", indices, x.shape()[U(ax)], mode), int32);
  idx = broadcast_to(idx, out);
  // One full index vector per output element: the given index on axis, the position elsewhere.
  std::vector<Array> coords;
  for (int64_t d = 0; d < r; ++d) {
    Array c = d == ax ? idx
                      : (x.shape()[U(d)] == 1 ? zeros(out, int32) : lax::broadcasted_iota(int32, out, d));
    coords.push_back(lax::expand_dims(c, {r}));
  }
  Array start = r == 0 ? idx : lax::concatenate(coords, r);
  lax::GatherDimensionNumbers dnums;
  dnums.collapsed_slice_dims = Iota(r);
  dnums.start_index_map = Iota(r);
  return lax::gather(x, start, dnums, std::vector<int64_t>(U(r), 1), gmode, FillValue(x.dtype()));
}

// ---- triangles and diagonals ----

namespace {
Array TriMask(const Array& x, int64_t k, bool lower) {
  const int64_t r = x.ndim();
  if (r < 2) ThrowOpError<ValueError>(lower ? "tril" : "triu", "requires at least 2 dimensions, got ", x.aval().str());
  const Shape s = {x.shape()[U(r - 2)], x.shape()[U(r - 1)]};
  Array i = lax::broadcasted_iota(int64, s, 0);
  Array j = lax::broadcasted_iota(int64, s, 1);
  Array ik = add(i, k);
  return lower ? less_equal(j, ik) : greater_equal(j, ik);
}
}  // namespace

Array tril(const Array& x, int64_t k) { return where(TriMask(x, k, true), x, ZerosLike(x)); }
Array triu(const Array& x, int64_t k) { return where(TriMask(x, k - 1, true), ZerosLike(x), x); }

Array diagonal(const Array& x, int64_t offset, int64_t axis1, int64_t axis2) {
  if (x.ndim() < 2) ThrowOpError<ValueError>("diagonal", "requires at least 2 dimensions, got ", x.aval().str());
  const int64_t a1 = CanonicalizeAxis(axis1, x.ndim(), "diagonal");
  const int64_t a2 = CanonicalizeAxis(axis2, x.ndim(), "diagonal");
  if (a1 == a2) ThrowOpError<ValueError>("diagonal", "axis1 and axis2 cannot be the same (", axis1, ")");
  Array t = moveaxis(x, {a1, a2}, {-2, -1});
  const int64_t r = t.ndim();
  const int64_t n = t.shape()[U(r - 2)], m = t.shape()[U(r - 1)];
  const int64_t len = offset >= 0 ? std::max<int64_t>(0, std::min(n, m - offset)) : std::max<int64_t>(0, std::min(n + offset, m));
  Shape batch(t.shape().begin(), t.shape().end() - 2);
  Shape flat = batch;
  flat.push_back(n * m);
  Array f = lax::reshape(t, flat);
  if (len == 0) {
    Shape out = batch;
    out.push_back(0);
    return zeros(out, x.dtype());
  }
  // Elements (i, i + offset) sit at stride m + 1 in the flattened matrix.
  const int64_t start = offset >= 0 ? offset : -offset * m;
  std::vector<int64_t> starts(U(r - 1), 0), limits = flat, strides(U(r - 1), 1);
  starts.back() = start;
  limits.back() = start + (len - 1) * (m + 1) + 1;
  strides.back() = m + 1;
  return lax::slice(f, starts, limits, strides);
}

Array diag(const Array& v, int64_t k) {
  if (v.ndim() == 2) return diagonal(v, k);
  if (v.ndim() != 1) ThrowOpError<ValueError>("diag", "input must be 1- or 2-d, got ", v.aval().str());
  const int64_t n = v.shape()[0] + (k >= 0 ? k : -k);
  Array padded = pad(v, std::vector<std::pair<int64_t, int64_t>>{{0, k >= 0 ? k : -k}});
  // For k >= 0 row i holds v[i] at column i + k; for k < 0 column j holds v[j] at row j - k.
  Array values = k >= 0 ? broadcast_to(lax::reshape(padded, {n, 1}), {n, n}) : broadcast_to(lax::reshape(padded, {1, n}), {n, n});
  return where(eye(n, n, k, bool_), values, zeros({n, n}, v.dtype()));
}

Array trace(const Array& x, int64_t offset, int64_t axis1, int64_t axis2) {
  return sum(diagonal(x, offset, axis1, axis2), -1);
}

// ---- sorting ----

Array sort(const Array& x, std::optional<int64_t> axis) {
  Array a = axis ? x : ravel(x);
  if (a.ndim() == 0) return a;
  return lax::sort(a, CanonicalizeAxis(axis.value_or(0), a.ndim(), "sort"), true);
}

Array argsort(const Array& x, std::optional<int64_t> axis) {
  Array a = axis ? x : ravel(x);
  if (a.ndim() == 0) return zeros({}, int32);
  const int64_t ax = CanonicalizeAxis(axis.value_or(0), a.ndim(), "argsort");
  return lax::sort({a, lax::broadcasted_iota(int32, a.shape(), ax)}, ax, true, 1)[1];
}

std::vector<Array> meshgrid(const std::vector<Array>& xs, std::string_view indexing) {
  if (indexing != "xy" && indexing != "ij") ThrowOpError<ValueError>("meshgrid", "indexing must be 'xy' or 'ij', got '", indexing, "'");
  Shape shape;
  for (const Array& x : xs) shape.push_back(x.size());
  if (indexing == "xy" && xs.size() >= 2) std::swap(shape[0], shape[1]);
  std::vector<Array> out;
  for (size_t i = 0; i < xs.size(); ++i) {
    int64_t dim = static_cast<int64_t>(i);
    if (indexing == "xy" && xs.size() >= 2 && i < 2) dim = 1 - dim;
    out.push_back(lax::broadcast_in_dim(ravel(xs[i]), shape, {dim}));
  }
  return out;
}

}  // namespace jx::numpy

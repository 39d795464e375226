// JAX's associative_scan (lax/control_flow/loops.py): combine neighbouring pairs, scan the
// half-length result recursively (the odd positions), combine it with the remaining even
// elements, and interleave the two by padding and adding.
#include "jx/lax/associative_scan.h"

#include <array>

#include "jx/core/errors.h"
#include "jx/lax/binary_ops.h"
#include "jx/lax/shape_ops.h"
#include "jx/lax/slicing_ops.h"

namespace jx::lax {
namespace {

// x[start:stop:stride] along axis (stop < 0 counts from the end, as slice_in_dim's -1).
Array SliceInDim(const Array& x, int64_t start, int64_t stop, int64_t stride, int64_t axis) {
  std::vector<int64_t> lo(x.ndim(), 0), hi(x.shape().begin(), x.shape().end()), strides(x.ndim(), 1);
  const int64_t n = x.shape()[axis];
  lo[axis] = start;
  hi[axis] = stop < 0 ? n + stop : stop;
  strides[axis] = stride;
  return slice(x, lo, hi, strides);
}

Arrays SliceAll(absl::Span<const Array> xs, int64_t start, int64_t stop, int64_t stride, int64_t axis) {
  Arrays out;
  for (const Array& x : xs) out.push_back(SliceInDim(x, start, stop, stride, axis));
  return out;
}

// a and b interleaved along axis: a[0], b[0], a[1], b[1], ... (a has as many elements as b
// or one more).
Array Interleave(const Array& a, const Array& b, int64_t axis) {
  const bool same = a.shape()[axis] == b.shape()[axis];
  std::vector<std::array<int64_t, 3>> a_pad(a.ndim(), {0, 0, 0}), b_pad(b.ndim(), {0, 0, 0});
  a_pad[axis] = {0, same ? 1 : 0, 1};
  b_pad[axis] = {1, same ? 0 : 1, 1};
  const Array a_padded = pad(a, Array::Scalar(0, a.dtype()), a_pad);
  const Array b_padded = pad(b, Array::Scalar(0, b.dtype()), b_pad);
  return a.dtype() == bool_ ? bitwise_or(a_padded, b_padded) : add(a_padded, b_padded);
}

Arrays Combine(const AssociativeFn& fn, absl::Span<const Array> a, absl::Span<const Array> b) {
  Arrays c = fn(a, b);
  for (size_t i = 0; i < c.size(); ++i) {
    if (c[i].shape() != a[i].shape() || c[i].dtype() != a[i].dtype()) {
      ThrowOpError<TypeError>("associative_scan", "fn must return arrays shaped like its inputs: output leaf ", i,
                              " is ", c[i].aval().str(), " for inputs ", a[i].aval().str());
    }
  }
  return c;
}

Arrays Scan(const AssociativeFn& fn, absl::Span<const Array> elems, int64_t axis) {
  const int64_t n = elems[0].shape()[axis];
  if (n < 2) return Arrays(elems.begin(), elems.end());
  const Arrays reduced = Combine(fn, SliceAll(elems, 0, -1, 2, axis), SliceAll(elems, 1, n, 2, axis));
  const Arrays odd = Scan(fn, reduced, axis);
  const Arrays rest = SliceAll(elems, 2, n, 2, axis);
  const Arrays even = n % 2 == 0 ? Combine(fn, SliceAll(odd, 0, -1, 1, axis), rest) : Combine(fn, odd, rest);
  Arrays out;
  for (size_t i = 0; i < elems.size(); ++i) {
    const Array first_and_even = concatenate({SliceInDim(elems[i], 0, 1, 1, axis), even[i]}, axis);
    out.push_back(Interleave(first_and_even, odd[i], axis));
  }
  return out;
}

}  // namespace

Arrays associative_scan_flat(const AssociativeFn& fn, absl::Span<const Array> elems,
                             const AssociativeScanOptions& options) {
  if (elems.empty()) return {};
  if (elems[0].ndim() == 0) {
    ThrowOpError<ValueError>("associative_scan", "elems leaf 0 is a scalar ", elems[0].aval().str(),
                             ": there is no axis to scan along");
  }
  const int64_t axis = CanonicalizeAxis(options.axis, elems[0].ndim(), "associative_scan");
  for (size_t i = 1; i < elems.size(); ++i) {
    if (elems[i].ndim() <= axis || elems[i].shape()[axis] != elems[0].shape()[axis]) {
      ThrowOpError<ValueError>("associative_scan", "array inputs must have the same size along axis ", axis,
                               ": leaf 0 is ", elems[0].aval().str(), " but leaf ", i, " is ", elems[i].aval().str());
    }
  }
  Arrays xs(elems.begin(), elems.end());
  if (options.reverse) {
    for (Array& x : xs) x = rev(x, {axis});
  }
  Arrays out = Scan(fn, xs, axis);
  if (options.reverse) {
    for (Array& x : out) x = rev(x, {axis});
  }
  return out;
}

}  // namespace jx::lax

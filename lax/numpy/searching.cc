#include "jx/lax/numpy/searching.h"

#include <bit>

#include "jx/core/errors.h"
#include "jx/lax/binary_ops.h"
#include "jx/lax/convert_ops.h"
#include "jx/lax/shape_ops.h"
#include "jx/lax/slicing_ops.h"
#include "jx/lax/sort_ops.h"
#include "jx/lax/numpy/creation.h"
#include "jx/lax/numpy/manipulation.h"
#include "jx/lax/numpy/math.h"
#include "jx/lax/numpy/reductions.h"

namespace jx::numpy {

namespace internal {

int64_t ConcreteSize(std::string_view op, const Array& x, std::string_view size_argument,
                     int64_t (*count)(const Array&)) {
  // A jvp tracer's concrete primal counts (JAX's to_concrete_value): grad works without size.
  if (x.impl() == nullptr || x.impl()->ConcreteValue() == nullptr) {
    ThrowOpError<ConcretizationError>(
        op, "The ", size_argument, " argument of jnp.", op, " must be statically specified to use jnp.", op,
        " under jit or vmap: its result shape depends on the values of the traced ", x.aval().str(), ". Pass ",
        size_argument, "= (and fill_value=) to fix the result size.", x.impl() ? x.impl()->Provenance() : "");
  }
  return count(x);
}

}  // namespace internal

namespace {

// x < y in jnp.sort's total order: NaNs after every number.
Array SortLess(const Array& x, const Array& y) {
  if (!IsFloating(x.dtype())) return lax::lt(x, y);
  return logical_or(lax::lt(x, y), logical_and(isnan(y), logical_not(isnan(x))));
}

int64_t CountNonzero(const Array& x) { return count_nonzero(x).item<int64_t>(); }

}  // namespace

Array searchsorted(const Array& a, const ArrayLike& v, std::string_view side, const std::optional<Array>& sorter) {
  if (a.ndim() != 1) ThrowOpError<ValueError>("searchsorted", "a should be 1-dimensional, got ", a.aval().str());
  if (side != "left" && side != "right") {
    ThrowOpError<ValueError>("searchsorted", "side=\"", side, "\" is not recognized; expected \"left\" or \"right\"");
  }
  Array sorted_a = a;
  if (sorter) {
    if (sorter->shape() != a.shape() || !IsInteger(sorter->dtype())) {
      ThrowOpError<ValueError>("searchsorted", "sorter must be an integer array of a's shape ", a.aval().str(),
                               ", got ", sorter->aval().str());
    }
    sorted_a = take(a, *sorter, 0, "clip");
  }
  std::vector<Array> promoted = promote_dtypes({sorted_a, v});
  const Array& sa = promoted[0];
  const Array& q = promoted[1];
  const int64_t n = sa.size();
  if (n == 0) return zeros(q.shape(), int32);
  if (n > int64_t{0x7FFFFFFF}) ThrowOpError<ValueError>("searchsorted", "a has more than 2^31 - 1 elements: ", a.aval().str());
  // Binary search on [lo, hi), every query at once: each step halves the open intervals, so
  // bit_width(n) steps close them all.
  Array lo = zeros(q.shape(), int32);
  Array hi = full(q.shape(), n, int32);
  Array one = internal::ScalarOf(int64_t{1}, int32);
  const int steps = std::bit_width(static_cast<uint64_t>(n));
  for (int s = 0; s < steps; ++s) {
    Array mid = lax::shift_right_logical(lax::add(lo, hi), broadcast_to(one, q.shape()));
    Array at_mid = take(sa, mid, 0, "clip");
    // left: the answer is past mid while a[mid] < v; right: while !(v < a[mid]).
    Array go_right = side == "left" ? SortLess(at_mid, q) : logical_not(SortLess(q, at_mid));
    Array open = lax::lt(lo, hi);
    lo = lax::select(logical_and(open, go_right), lax::add(mid, broadcast_to(one, q.shape())), lo);
    hi = lax::select(logical_and(open, logical_not(go_right)), mid, hi);
  }
  return lo;
}

std::vector<Array> nonzero(const Array& a, std::optional<int64_t> size, std::optional<int64_t> fill_value) {
  if (a.ndim() == 0) {
    ThrowOpError<ValueError>("nonzero", "Calling nonzero on 0d arrays is not allowed (got ", a.aval().str(),
                             "). Use jnp::atleast_1d(x) first.");
  }
  const int64_t n_out = size ? *size : internal::ConcreteSize("nonzero", a, "size", CountNonzero);
  if (n_out < 0) ThrowOpError<ValueError>("nonzero", "size must be nonnegative, got ", n_out);
  Array mask = ravel(IsBool(a.dtype()) ? a : not_equal(a, 0));
  const int64_t n = mask.size();
  // The flat positions of the true entries first, in order: a stable sort on !mask.
  Array flat_idx;
  if (n == 0) {
    flat_idx = zeros({n_out}, int32);
  } else {
    Array order = lax::sort({lax::convert_element_type(logical_not(mask), int32), lax::iota(int32, n)}, 0,
                            /*is_stable=*/true, /*num_keys=*/1)[1];
    flat_idx = n_out <= n ? lax::slice(order, {0}, {n_out}) : concatenate({order, zeros({n_out - n}, int32)});
  }
  Array count = sum(mask, {}, false, int32);
  Array valid = lax::lt(lax::iota(int32, n_out), broadcast_to(count, {n_out}));
  Array fill = full({n_out}, fill_value.value_or(0), int32);
  std::vector<Array> out;
  int64_t stride = n;
  for (int64_t d : a.shape()) {
    stride = d == 0 ? 0 : stride / d;
    Array coord = d == 0 ? zeros({n_out}, int32)
                         : remainder(floor_divide(flat_idx, static_cast<int32_t>(std::max<int64_t>(stride, 1))),
                                     static_cast<int32_t>(d));
    out.push_back(lax::select(valid, coord, fill));
  }
  return out;
}

Array argwhere(const Array& a, std::optional<int64_t> size, std::optional<int64_t> fill_value) {
  std::vector<Array> idx = nonzero(atleast_1d(a), size, fill_value);
  Array rows = stack(idx, 1);
  if (a.ndim() == 0) return lax::slice(rows, {0, 0}, {rows.shape()[0], 0});
  return rows;
}

Array flatnonzero(const Array& a, std::optional<int64_t> size, std::optional<int64_t> fill_value) {
  return nonzero(ravel(a), size, fill_value)[0];
}

}  // namespace jx::numpy

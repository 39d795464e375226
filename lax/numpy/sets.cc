#include "jx/lax/numpy/sets.h"

#include "jx/core/errors.h"
#include "jx/lax/convert_ops.h"
#include "jx/lax/shape_ops.h"
#include "jx/lax/slicing_ops.h"
#include "jx/lax/sort_ops.h"
#include "jx/lax/numpy/creation.h"
#include "jx/lax/numpy/differences.h"
#include "jx/lax/numpy/manipulation.h"
#include "jx/lax/numpy/math.h"
#include "jx/lax/numpy/reductions.h"
#include "jx/lax/numpy/searching.h"

namespace jx::numpy {
namespace {

int64_t CountTrue(const Array& mask) { return sum(mask, {}, false, int64).item<int64_t>(); }

}  // namespace

Array unique(const Array& x) { return unique(x, UniqueOptions{}).values; }

UniqueResult unique(const Array& x, const UniqueOptions& o) {
  Array flat = ravel(x);
  const int64_t n = flat.size();
  if (n == 0 && o.size && *o.size > 0 && !o.fill_value) {
    ThrowOpError<ValueError>("unique", "for zero-sized input with nonzero size argument, fill_value must be specified");
  }
  // Sort (stable, NaNs last) and mark the first element of each run of equal values.
  Array perm = n == 0 ? zeros({0}, int32)
                      : lax::sort({flat, lax::iota(int32, n)}, 0, /*is_stable=*/true, /*num_keys=*/1)[1];
  Array aux = n == 0 ? flat : take(flat, perm, 0, "clip");
  Array mask = zeros({n}, bool_);
  if (n > 0) {
    Array hi = lax::slice(aux, {1}, {n});
    Array lo = lax::slice(aux, {0}, {n - 1});
    Array neq = not_equal(hi, lo);
    if (o.equal_nan && IsFloating(x.dtype())) neq = logical_and(neq, logical_not(logical_and(isnan(hi), isnan(lo))));
    mask = concatenate({ones({1}, bool_), neq});
  }
  const int64_t size = o.size ? *o.size : internal::ConcreteSize("unique", mask, "size", CountTrue);
  if (size < 0) ThrowOpError<ValueError>("unique", "size must be nonnegative, got ", size);

  UniqueResult r;
  Array ind = nonzero(mask, size)[0];
  if (n == 0) {
    r.values = full({size}, o.fill_value.value_or(0.0), x.dtype());
  } else {
    r.values = take(aux, ind, 0, "clip");
    if (o.size && o.fill_value) {
      Array valid = less(lax::iota(int32, size), sum(mask, {}, false, int32));
      r.values = where(valid, r.values, internal::ScalarOf(*o.fill_value, x.dtype()));
    }
  }
  if (o.return_index) r.indices = n == 0 ? zeros({size}, int32) : take(perm, ind, 0, "clip");
  if (o.return_inverse) {
    Array inverse = zeros({n}, int32);
    if (n > 0) inverse = inverse.at(perm).set(subtract(cumsum(mask, 0, int32), 1));
    r.inverse = reshape(inverse, x.shape());
  }
  if (o.return_counts) {
    if (n == 0) {
      r.counts = zeros({size}, int32);
    } else {
      // Run starts, padded with n: their differences are the run lengths (0 past the end).
      r.counts = diff(nonzero(mask, size + 1, n)[0]);
    }
  }
  return r;
}

UniqueAllResult unique_all(const Array& x, std::optional<int64_t> size, std::optional<double> fill_value) {
  UniqueResult r = unique(x, {.return_index = true, .return_inverse = true, .return_counts = true, .equal_nan = false,
                              .size = size, .fill_value = fill_value});
  return {r.values, *r.indices, *r.inverse, *r.counts};
}

UniqueCountsResult unique_counts(const Array& x, std::optional<int64_t> size, std::optional<double> fill_value) {
  UniqueResult r = unique(x, {.return_counts = true, .equal_nan = false, .size = size, .fill_value = fill_value});
  return {r.values, *r.counts};
}

UniqueInverseResult unique_inverse(const Array& x, std::optional<int64_t> size, std::optional<double> fill_value) {
  UniqueResult r = unique(x, {.return_inverse = true, .equal_nan = false, .size = size, .fill_value = fill_value});
  return {r.values, *r.inverse};
}

Array unique_values(const Array& x, std::optional<int64_t> size, std::optional<double> fill_value) {
  return unique(x, {.equal_nan = false, .size = size, .fill_value = fill_value}).values;
}

}  // namespace jx::numpy

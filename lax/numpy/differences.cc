#include "jx/lax/numpy/differences.h"

#include "jx/core/errors.h"
#include "jx/lax/slicing_ops.h"
#include "jx/lax/numpy/manipulation.h"
#include "jx/lax/numpy/math.h"

namespace jx::numpy {
namespace {

// An edge for diff: a scalar becomes a size-1 slab along axis, an array broadcasts to a's
// other dims (NumPy's rule for prepend/append).
Array DiffEdge(const ArrayLike& edge, const Array& a, int64_t axis, std::string_view what) {
  Array e = edge.to_array();
  Shape slab = a.shape();
  slab[static_cast<size_t>(axis)] = 1;
  if (e.ndim() == 0) return broadcast_to(e, slab);
  if (e.ndim() != a.ndim()) {
    ThrowOpError<ShapeError>("diff", what, " must be a scalar or have a's rank: a ", a.aval().str(), ", ", what, " ",
                             e.aval().str());
  }
  return e;
}

Array SliceAlong(const Array& x, int64_t axis, int64_t start, int64_t stop) {
  std::vector<int64_t> lo(static_cast<size_t>(x.ndim()), 0);
  std::vector<int64_t> hi = x.shape();
  lo[static_cast<size_t>(axis)] = start;
  hi[static_cast<size_t>(axis)] = stop;
  return lax::slice(x, lo, hi);
}

// Component i of vectors along the last axis.
Array Component(const Array& v, int64_t i) {
  return squeeze(SliceAlong(v, v.ndim() - 1, i, i + 1), {v.ndim() - 1});
}

}  // namespace

Array diff(const Array& a, int64_t n, int64_t axis, const std::optional<ArrayLike>& prepend,
           const std::optional<ArrayLike>& append) {
  if (n < 0) ThrowOpError<ValueError>("diff", "order must be non-negative but got ", n);
  if (a.ndim() == 0) ThrowOpError<ValueError>("diff", "diff requires input that is at least one dimensional; got ", a.aval().str());
  if (n == 0) return a;
  const int64_t ax = CanonicalizeAxis(axis, a.ndim(), "diff");
  Array x = a;
  if (prepend || append) {
    std::vector<Array> parts;
    if (prepend) parts.push_back(DiffEdge(*prepend, a, ax, "prepend"));
    parts.push_back(a);
    if (append) parts.push_back(DiffEdge(*append, a, ax, "append"));
    x = concatenate(parts, ax);
  }
  for (int64_t i = 0; i < n; ++i) {
    const int64_t len = x.shape()[static_cast<size_t>(ax)];
    if (len == 0) break;
    Array hi = SliceAlong(x, ax, 1, len);
    Array lo = SliceAlong(x, ax, 0, len - 1);
    x = IsBool(x.dtype()) ? not_equal(hi, lo) : subtract(hi, lo);
  }
  return x;
}

Array cross(const ArrayLike& a_like, const ArrayLike& b_like, const CrossAxes& axes) {
  std::vector<Array> ab = promote_dtypes({a_like, b_like});
  const int64_t axisa = axes.axis.value_or(axes.axisa);
  const int64_t axisb = axes.axis.value_or(axes.axisb);
  const int64_t axisc = axes.axis.value_or(axes.axisc);
  if (ab[0].ndim() == 0 || ab[1].ndim() == 0) {
    ThrowOpError<ValueError>("cross", "inputs must be at least 1-dimensional, got ", ab[0].aval().str(), " and ",
                             ab[1].aval().str());
  }
  Array a = moveaxis(ab[0], CanonicalizeAxis(axisa, ab[0].ndim(), "cross"), -1);
  Array b = moveaxis(ab[1], CanonicalizeAxis(axisb, ab[1].ndim(), "cross"), -1);
  const int64_t na = a.shape().back(), nb = b.shape().back();
  if ((na != 2 && na != 3) || (nb != 2 && nb != 3)) {
    ThrowOpError<ValueError>("cross", "incompatible dimensions for cross product (dimension must be 2 or 3): a ",
                             ab[0].aval().str(), " axis ", axisa, " has ", na, ", b ", ab[1].aval().str(), " axis ",
                             axisb, " has ", nb);
  }
  Array a0 = Component(a, 0), a1 = Component(a, 1);
  Array b0 = Component(b, 0), b1 = Component(b, 1);
  Array cz = subtract(multiply(a0, b1), multiply(a1, b0));
  if (na == 2 && nb == 2) return cz;
  // A missing z component is 0: drop its terms rather than multiply by zeros.
  std::optional<Array> a2, b2;
  if (na == 3) a2 = Component(a, 2);
  if (nb == 3) b2 = Component(b, 2);
  auto mul_or_zero = [](const std::optional<Array>& x, const Array& y) -> std::optional<Array> {
    if (!x) return std::nullopt;
    return multiply(*x, y);
  };
  auto diff_terms = [&](std::optional<Array> p, std::optional<Array> q, const Array& like) {
    if (p && q) return subtract(*p, *q);
    if (p) return broadcast_to(*p, like.shape());
    return negative(broadcast_to(*q, like.shape()));
  };
  // cx = a1 b2 - a2 b1; cy = a2 b0 - a0 b2.
  Array cx = diff_terms(mul_or_zero(b2, a1), mul_or_zero(a2, b1), cz);
  Array cy = diff_terms(mul_or_zero(a2, b0), mul_or_zero(b2, a0), cz);
  Array c = stack({cx, cy, cz}, -1);
  return moveaxis(c, -1, CanonicalizeAxis(axisc, c.ndim(), "cross"));
}

}  // namespace jx::numpy

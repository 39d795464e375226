// lax::map as JAX builds it: a scan with an empty carry; with batch_size, a scan over
// (num_batches, batch_size, ...) reshaped xs whose body is vmap(f), then vmap(f) over the
// remainder, concatenated.
#include "jx/lax/map.h"

#include "jx/core/errors.h"
#include "jx/lax/control_flow.h"
#include "jx/lax/shape_ops.h"
#include "jx/lax/slicing_ops.h"
#include "jx/transforms/vmap.h"

namespace jx::lax {
namespace {

int64_t LeadingSize(absl::Span<const Array> xs) {
  if (xs.empty()) ThrowOpError<ValueError>("map", "xs has no array leaves: there is nothing to map over");
  for (size_t i = 0; i < xs.size(); ++i) {
    if (xs[i].ndim() == 0) {
      ThrowOpError<ValueError>("map", "xs leaf ", i, " is a scalar ", xs[i].aval().str(),
                               ": every leaf needs a leading axis to map over");
    }
    if (xs[i].shape()[0] != xs[0].shape()[0]) {
      ThrowOpError<ValueError>("map", "xs leaves have different leading sizes: leaf 0 is ", xs[0].aval().str(),
                               " but leaf ", i, " is ", xs[i].aval().str());
    }
  }
  return xs[0].shape()[0];
}

// x[start:stop] along axis 0.
Array LeadingSlice(const Array& x, int64_t start, int64_t stop) {
  std::vector<int64_t> lo(x.ndim(), 0);
  std::vector<int64_t> hi(x.shape().begin(), x.shape().end());
  lo[0] = start;
  hi[0] = stop;
  return slice(x, lo, hi);
}

Arrays Vmapped(const ArraysFn& f, absl::Span<const Array> xs) {
  return VmapCall(f, xs, std::vector<int64_t>(xs.size(), 0), {0});
}

}  // namespace

Arrays map_flat(const ArraysFn& f, absl::Span<const Array> xs, std::optional<int64_t> batch_size) {
  const int64_t n = LeadingSize(xs);
  ArraysFn body = [&f](absl::Span<const Array> x) { return f(x); };  // no carry: (x...) -> (y...)
  if (!batch_size) return scan_flat(body, {}, xs, std::nullopt, false);
  if (*batch_size < 0) ThrowOpError<ValueError>("map", "batch_size must be non-negative, got ", *batch_size);
  if (*batch_size == 0) return Vmapped(f, xs);  // JAX: batch_size=0 is one full batch (vmap)
  const int64_t b = *batch_size, num_batches = n / b, remainder = n % b;
  Arrays chunks;
  for (const Array& x : xs) {
    Shape s = x.shape();
    s[0] = b;
    s.insert(s.begin(), num_batches);
    chunks.push_back(reshape(LeadingSlice(x, 0, num_batches * b), s));
  }
  ArraysFn batched_body = [&f](absl::Span<const Array> x) { return Vmapped(f, x); };
  Arrays ys = scan_flat(batched_body, {}, chunks, num_batches, false);
  for (Array& y : ys) {  // (num_batches, b, ...) -> (num_batches * b, ...)
    Shape s(y.shape().begin() + 1, y.shape().end());
    s[0] = num_batches * b;
    y = reshape(y, s);
  }
  if (remainder == 0) return ys;
  Arrays rest;
  for (const Array& x : xs) rest.push_back(LeadingSlice(x, num_batches * b, n));
  Arrays rest_ys = Vmapped(f, rest);
  for (size_t i = 0; i < ys.size(); ++i) ys[i] = concatenate({ys[i], rest_ys[i]}, 0);
  return ys;
}

}  // namespace jx::lax

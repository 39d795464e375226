#include "jx/lax/rule_util.h"

#include <numeric>

#include "jx/core/interpreter.h"
#include "jx/lax/binary_ops.h"
#include "jx/lax/convert_ops.h"
#include "jx/lax/reduction_ops.h"
#include "jx/lax/shape_ops.h"

namespace jx::lax::internal {

Array Instantiate(const Array& tangent, const Array& primal) {
  if (tangent.defined()) return tangent;
  return Zeros(ShapedArray{primal.shape(), primal.dtype()});
}

Array AddTangents(const Array& a, const Array& b) {
  if (!a.defined()) return b;
  if (!b.defined()) return a;
  return AddAny(a, b);
}

Array MoveBatchToFront(const Array& x, int64_t dim, int64_t n) {
  if (dim == kNotMapped) return BroadcastAxis(x, n, 0);
  return MoveAxis(x, dim, 0);
}

Array BroadcastScalarTo(const Array& t, const Shape& shape) {
  if (!t.defined() || t.ndim() != 0 || shape.empty()) return t;
  return broadcast_in_dim(t, shape, {});
}

Array UnbroadcastScalar(const Array& ct, const ShapedArray& aval) {
  if (!ct.defined() || !aval.shape.empty() || ct.ndim() == 0) return ct;
  std::vector<int64_t> axes(static_cast<size_t>(ct.ndim()));
  std::iota(axes.begin(), axes.end(), 0);
  return reduce_sum(ct, axes);
}

BatchRule BatchElementwise(Primitive p, uint64_t scalar_ok) {
  return [p, scalar_ok](absl::Span<const Array> args, absl::Span<const int64_t> dims, int64_t n,
                        const ParamMap& params) {
    // The per-example shape: the highest-rank operand's (others are equal or 0-d).
    Shape example;
    for (size_t i = 0; i < args.size(); ++i) {
      const int64_t rank = args[i].ndim() - (dims[i] == kNotMapped ? 0 : 1);
      if (rank > static_cast<int64_t>(example.size())) {
        example = args[i].shape();
        if (dims[i] != kNotMapped) example.erase(example.begin() + dims[i]);
      }
    }
    Shape full = example;
    full.insert(full.begin(), n);
    Arrays moved;
    moved.reserve(args.size());
    for (size_t i = 0; i < args.size(); ++i) {
      const Array& x = args[i];
      const bool may_stay_scalar = i < 64 && ((scalar_ok >> i) & 1) != 0;
      if (dims[i] == kNotMapped) {
        if (x.ndim() == 0) {
          moved.push_back(may_stay_scalar ? x : broadcast_in_dim(x, full, {}));
        } else {
          moved.push_back(BroadcastAxis(x, n, 0));
        }
        continue;
      }
      Array front = MoveAxis(x, dims[i], 0);
      // [n] against shaped operands: each example's value spreads over its example.
      if (front.ndim() == 1 && !example.empty()) front = broadcast_in_dim(front, full, {0});
      moved.push_back(std::move(front));
    }
    Arrays outs = Bind(p, moved, params);
    const size_t num_outs = outs.size();
    return BatchResult{std::move(outs), std::vector<int64_t>(num_outs, 0)};
  };
}

Array MatchAval(const Array& x, const ShapedArray& aval) {
  if (x.dtype() == aval.dtype && x.aval().weak_type == aval.weak_type) return x;
  return convert_element_type(x, aval.dtype, aval.weak_type);
}

std::vector<int64_t> InversePermutation(const std::vector<int64_t>& perm) {
  std::vector<int64_t> inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inv[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  return inv;
}

}  // namespace jx::lax::internal

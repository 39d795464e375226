#include "jx/lax/rule_util.h"

#include "jx/core/interpreter.h"
#include "jx/lax/binary_ops.h"
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

BatchRule BatchElementwise(Primitive p) {
  return [p](absl::Span<const Array> args, absl::Span<const int64_t> dims, int64_t n, const ParamMap& params) {
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
    for (size_t i = 0; i < args.size(); ++i) {
      const Array& x = args[i];
      if (dims[i] == kNotMapped) {
        moved.push_back(x.ndim() == 0 ? broadcast_in_dim(x, full, {}) : BroadcastAxis(x, n, 0));
        continue;
      }
      Array front = MoveAxis(x, dims[i], 0);
      if (front.ndim() == 1 && !example.empty()) front = broadcast_in_dim(front, full, {0});
      moved.push_back(std::move(front));
    }
    Arrays outs = Bind(p, moved, params);
    return BatchResult{std::move(outs), std::vector<int64_t>(outs.size(), 0)};
  };
}

}  // namespace jx::lax::internal

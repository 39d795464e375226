// Lowering rules of the shape primitives (broadcast_in_dim, reshape, transpose, squeeze,
// expand_dims, rev, copy, iota): each maps to the HLO op of the same meaning (squeeze and
// expand_dims are reshapes).
#include <functional>
#include <vector>

#include "jx/compiler/lower/lower_ops.h"
#include "jx/core/registry.h"
#include "jx/lax/primitives.h"

namespace jx::lax::internal {
namespace {

using lower::XOp;

void DefineUnary(Registry& r, Primitive p, std::function<XOp(const XOp&, LowerContext&)> fn) {
  r.Define(p).lower = [fn = std::move(fn)](LowerContext& ctx) -> absl::Status {
    return lower::Output(ctx, fn(lower::Operands(ctx)[0], ctx));
  };
}

XOp ReshapeTo(const XOp& x, LowerContext& ctx) { return lower::Reshape(x, ctx.out_aval(0).shape); }

// broadcast_in_dim: operand dims of size 1 may stretch; HLO's broadcast needs equal sizes, so
// those dims are reshaped away first.
XOp BroadcastInDim(const XOp& x, const std::vector<int64_t>& shape, const std::vector<int64_t>& bdims) {
  std::vector<int64_t> kept_dims, kept_sizes;
  for (size_t i = 0; i < bdims.size(); ++i) {
    if (x.dims()[i] == shape[static_cast<size_t>(bdims[i])]) {
      kept_dims.push_back(bdims[i]);
      kept_sizes.push_back(x.dims()[i]);
    }
  }
  const XOp y = kept_sizes.size() == bdims.size() ? x : lower::Reshape(x, kept_sizes);
  return lower::Broadcast(y, shape, kept_dims);
}

}  // namespace

void RegisterShapeLowering(Registry& r) {
  DefineUnary(r, kBroadcastInDim, [](const XOp& x, LowerContext& ctx) {
    return BroadcastInDim(x, ctx.params().GetInts("shape"), ctx.params().GetInts("broadcast_dimensions"));
  });
  DefineUnary(r, kReshape, [](const XOp& x, LowerContext& ctx) {
    const Param& dims = ctx.params().Get("dimensions");
    XOp y = x;
    if (!dims.is_none()) y = lower::Wrap(ctx.builder(), ctx.builder().Transpose(x.instr(), ctx.params().GetInts("dimensions")));
    return ReshapeTo(y, ctx);
  });
  DefineUnary(r, kTranspose, [](const XOp& x, LowerContext& ctx) {
    return lower::Wrap(ctx.builder(), ctx.builder().Transpose(x.instr(), ctx.params().GetInts("permutation")));
  });
  DefineUnary(r, kSqueeze, ReshapeTo);
  DefineUnary(r, kExpandDims, ReshapeTo);
  DefineUnary(r, kRev, [](const XOp& x, LowerContext& ctx) {
    return lower::Wrap(ctx.builder(), ctx.builder().Reverse(x.instr(), ctx.params().GetInts("dimensions")));
  });
  DefineUnary(r, kCopy, [](const XOp& x, LowerContext& ctx) { return lower::Wrap(ctx.builder(), ctx.builder().Copy(x.instr())); });
  r.Define(kIota).lower = [](LowerContext& ctx) -> absl::Status {
    return lower::Output(ctx, lower::Wrap(ctx.builder(), ctx.builder().Iota(LowerContext::ShapeOf(ctx.out_aval(0)),
                                                                            ctx.params().GetInt("dimension"))));
  };
}

}  // namespace jx::lax::internal

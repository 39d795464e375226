// Lowering rules of gather and scatter. gather in FILL_OR_DROP mode masks slices that are not
// entirely in bounds with the fill value (HLO's gather clamps); scatter in CLIP mode clamps its
// indices first (HLO's scatter drops such windows). Batching dims (vmap of gather/scatter)
// become extra collapsed dims indexed by an iota, as XLA's batched gather/scatter normalizer
// does.
#include <algorithm>
#include <cstring>
#include <vector>

#include "jx/compiler/hlo/status_macros.h"
#include "jx/compiler/lower/lower_ops.h"
#include "jx/core/registry.h"
#include "jx/lax/primitives.h"
#include "jx/lax/slicing_ops.h"
#include "jx/transforms/jaxpr_util.h"

namespace jx::lax::internal {

// Accessors of gather/scatter params (gather_scatter.cc).
const GatherDimensionNumbers& GatherDnOf(const ParamMap& p);
const ScatterDimensionNumbers& ScatterDnOf(const ParamMap& p);
GatherScatterMode GatherScatterModeOf(const ParamMap& p);
Array GatherFillValue(DType dtype, const ParamMap& p);

namespace {

using hlo::HloBuilder;
using lower::XOp;

bool Contains(const std::vector<int64_t>& v, int64_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }

// The index vectors as the last dim of the indices plus, per batching dim pair, an iota
// coordinate; returns the extended indices.
XOp AddBatchingCoordinates(const XOp& indices, const std::vector<int64_t>& indices_batching_dims) {
  if (indices_batching_dims.empty()) return indices;
  std::vector<int64_t> batch(indices.dims().begin(), indices.dims().end() - 1);
  std::vector<hlo::HloInstruction*> parts = {indices.instr()};
  std::vector<int64_t> one = batch;
  one.push_back(1);
  for (int64_t d : indices_batching_dims) {
    HloBuilder& b = indices.builder();
    const XOp iota = lower::Wrap(b, b.Iota(hlo::ShapeUtil::MakeShape(indices.type(), one), d));
    parts.push_back(iota.instr());
  }
  return lower::Wrap(indices.builder(), indices.builder().Concatenate(parts, indices.rank() - 1));
}

std::vector<int64_t> SortedUnion(std::vector<int64_t> a, const std::vector<int64_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  std::sort(a.begin(), a.end());
  return a;
}

absl::Status LowerGather(LowerContext& ctx) {
  const GatherDimensionNumbers& dn = GatherDnOf(ctx.params());
  const std::vector<int64_t>& slice_sizes = ctx.params().GetInts("slice_sizes");
  const XOp operand(&ctx.builder(), ctx.operand(0));
  const XOp indices = AddBatchingCoordinates(XOp(&ctx.builder(), ctx.operand(1)), dn.start_indices_batching_dims);
  hlo::GatherDimensionNumbers g;
  g.offset_dims = dn.offset_dims;
  g.collapsed_slice_dims = SortedUnion(dn.collapsed_slice_dims, dn.operand_batching_dims);
  g.start_index_map = dn.start_index_map;
  g.start_index_map.insert(g.start_index_map.end(), dn.operand_batching_dims.begin(), dn.operand_batching_dims.end());
  g.index_vector_dim = indices.rank() - 1;
  HloBuilder& b = ctx.builder();
  XOp out = lower::Wrap(b, b.Gather(operand.instr(), indices.instr(), g, slice_sizes));
  if (GatherScatterModeOf(ctx.params()) != GatherScatterMode::kFillOrDrop) return lower::Output(ctx, out);
  // In bounds: 0 <= index[k] <= operand_dim - slice_size for every indexed dim.
  const XOp raw(&ctx.builder(), ctx.operand(1));
  const std::vector<int64_t> batch(raw.dims().begin(), raw.dims().end() - 1);
  XOp ok = lower::FullInt(b, hlo::PRED, batch, 1);
  for (size_t k = 0; k < dn.start_index_map.size(); ++k) {
    std::vector<int64_t> start(raw.dims().size(), 0), limit = hlo::SpanToVector(raw.dims());
    start.back() = static_cast<int64_t>(k);
    limit.back() = static_cast<int64_t>(k) + 1;
    const XOp idx = lower::Reshape(lower::Slice(raw, start, limit), batch);
    const size_t d = static_cast<size_t>(dn.start_index_map[k]);
    const int64_t hi = operand.dims()[d] - slice_sizes[d];
    const XOp zero = lower::FullInt(b, idx.type(), batch, 0), top = lower::FullInt(b, idx.type(), batch, hi);
    ok = ok & (idx >= zero) & (idx <= top);
    if (hlo::IsUnsignedIntegralType(idx.type()) && hi < 0) ok = ok & lower::FullInt(b, hlo::PRED, batch, 0);
  }
  std::vector<int64_t> batch_dims;
  for (int64_t i = 0; i < out.rank(); ++i) {
    if (!Contains(dn.offset_dims, i)) batch_dims.push_back(i);
  }
  const XOp mask = lower::Broadcast(ok, out.dims(), batch_dims);
  const Array fill = GatherFillValue(ctx.out_aval(0).dtype, ctx.params());
  hlo::Literal lit(hlo::ShapeUtil::MakeScalarShape(out.type()));
  std::memcpy(lit.mutable_untyped_data().data(), fill.data(), static_cast<size_t>(fill.nbytes()));
  const XOp fv = lower::BroadcastScalar(lower::Wrap(b, b.Constant(std::move(lit))), out.dims());
  return lower::Output(ctx, lower::Select(mask, out, fv));
}

enum class Combiner { kOverwrite, kAdd, kMul, kMin, kMax };

template <Combiner kCombiner>
absl::Status LowerScatter(LowerContext& ctx) {
  const ScatterDimensionNumbers& dn = ScatterDnOf(ctx.params());
  HloBuilder& b = ctx.builder();
  const XOp operand(&b, ctx.operand(0)), updates(&b, ctx.operand(2));
  XOp indices(&b, ctx.operand(1));
  if (GatherScatterModeOf(ctx.params()) == GatherScatterMode::kClip) {
    // Clamp each index so its whole window is in bounds.
    std::vector<int64_t> window(static_cast<size_t>(operand.rank()), 1);
    size_t w = 0;
    for (int64_t d = 0; d < operand.rank(); ++d) {
      if (Contains(dn.inserted_window_dims, d) || Contains(dn.operand_batching_dims, d)) continue;
      window[static_cast<size_t>(d)] = updates.dims()[static_cast<size_t>(dn.update_window_dims[w++])];
    }
    std::vector<int64_t> lo, hi;
    for (int64_t d : dn.scatter_dims_to_operand_dims) {
      lo.push_back(0);
      hi.push_back(operand.dims()[static_cast<size_t>(d)] - window[static_cast<size_t>(d)]);
    }
    const int64_t n = static_cast<int64_t>(hi.size());
    std::vector<int64_t> vec_dims = {n};
    hlo::Literal lo_lit(hlo::ShapeUtil::MakeShape(indices.type(), vec_dims)), hi_lit(lo_lit.shape());
    for (int64_t k = 0; k < n; ++k) {
      lo_lit.SetFromInt64(k, 0);
      hi_lit.SetFromInt64(k, std::max<int64_t>(hi[static_cast<size_t>(k)], 0));
    }
    const XOp lo_c = lower::Broadcast(lower::Wrap(b, b.Constant(std::move(lo_lit))), indices.dims(), {indices.rank() - 1});
    const XOp hi_c = lower::Broadcast(lower::Wrap(b, b.Constant(std::move(hi_lit))), indices.dims(), {indices.rank() - 1});
    indices = lower::Min(lower::Max(indices, lo_c), hi_c);
  }
  indices = AddBatchingCoordinates(indices, dn.scatter_indices_batching_dims);
  hlo::ScatterDimensionNumbers s;
  s.update_window_dims = dn.update_window_dims;
  s.inserted_window_dims = SortedUnion(dn.inserted_window_dims, dn.operand_batching_dims);
  s.scatter_dims_to_operand_dims = dn.scatter_dims_to_operand_dims;
  s.scatter_dims_to_operand_dims.insert(s.scatter_dims_to_operand_dims.end(), dn.operand_batching_dims.begin(),
                                        dn.operand_batching_dims.end());
  s.index_vector_dim = indices.rank() - 1;
  if (!ctx.params().Get("update_jaxpr").is_none()) {
    // scatter_apply: the update computation is the lowered update_jaxpr (JAX's _scatter_lower).
    HLO_ASSIGN_OR_RETURN(hlo::HloComputation * update,
                         ctx.LowerSubJaxpr(GetJaxpr(ctx.params(), "update_jaxpr"), "update_computation", "scatter",
                                           /*tuple_param=*/false, /*tuple_result=*/false));
    return lower::Output(ctx, lower::Wrap(b, b.Scatter({operand.instr()}, indices.instr(), {updates.instr()}, s, update)));
  }
  // The combiner: add (or for bool) for scatter_add; the update itself for scatter.
  HloBuilder cb = ctx.NewBuilder(std::string(ctx.primitive_name()) + "_combiner");
  const hlo::Shape scalar = hlo::ShapeUtil::MakeScalarShape(operand.type());
  const XOp old_v = lower::Wrap(cb, cb.Parameter(0, scalar, "old")), new_v = lower::Wrap(cb, cb.Parameter(1, scalar, "update"));
  const bool pred = operand.type() == hlo::PRED;
  XOp root = new_v;
  switch (kCombiner) {
    case Combiner::kOverwrite: break;
    case Combiner::kAdd: root = pred ? (old_v | new_v) : old_v + new_v; break;
    case Combiner::kMul: root = pred ? (old_v & new_v) : old_v * new_v; break;
    case Combiner::kMin: root = pred ? (old_v & new_v) : lower::Min(old_v, new_v); break;
    case Combiner::kMax: root = pred ? (old_v | new_v) : lower::Max(old_v, new_v); break;
  }
  HLO_ASSIGN_OR_RETURN(hlo::HloComputation * combiner, cb.Build(root.instr()));
  return lower::Output(ctx, lower::Wrap(b, b.Scatter({operand.instr()}, indices.instr(), {updates.instr()}, s, combiner)));
}

}  // namespace

void RegisterGatherScatterLowering(Registry& r) {
  r.Define(kGather).lower = LowerGather;
  r.Define(kScatter).lower = LowerScatter<Combiner::kOverwrite>;
  r.Define(kScatterAdd).lower = LowerScatter<Combiner::kAdd>;
  r.Define(kScatterMul).lower = LowerScatter<Combiner::kMul>;
  r.Define(kScatterMin).lower = LowerScatter<Combiner::kMin>;
  r.Define(kScatterMax).lower = LowerScatter<Combiner::kMax>;
}

}  // namespace jx::lax::internal

// JAX's scatter_apply (which x.at[idx].apply binds): a `scatter` whose update_jaxpr is
// (x, _) -> fn(x), run once per update in update order, so an element named k times gets
// fn applied k times (NumPy's ufunc.at). The kernel library lists every update element's flat
// destination (-1 where XLA drops its window); the updates then apply in rounds: round r
// takes each destination's r-th update, so a round's destinations are distinct, and its old
// values and updates are packed, run through one vmapped call of the update computation and
// written back. O(updates) work beyond the copy of x, one round per multiplicity; the CPU
// backend's scatter-apply kernel runs the lowered HLO scatter the same way.
#include <cstdint>
#include <cstring>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "jx/core/errors.h"
#include "jx/lax/convert_ops.h"
#include "jx/lax/indexing_internal.h"
#include "jx/lax/kernels/copy_kernels.h"
#include "jx/lax/kernels/gather_scatter.h"
#include "jx/transforms/jaxpr_util.h"
#include "jx/transforms/staging.h"
#include "jx/transforms/vmap.h"

namespace jx::lax::internal {

// Param accessors and kernel-library arguments (gather_scatter.cc).
const ScatterDimensionNumbers& ScatterDnOf(const ParamMap& p);
GatherScatterMode GatherScatterModeOf(const ParamMap& p);
kernels::IndexArray IndexArrayOf(const Array& a);
kernels::ScatterDims KernelScatterDims(const ScatterDimensionNumbers& dn);

ClosedJaxpr ApplyJaxpr(const std::function<Array(const Array&)>& fn, DType dtype, std::string_view op) {
  const ShapedArray scalar{Shape{}, dtype, false};
  ClosedJaxpr j = TraceToJaxpr(
      [&](absl::Span<const Array> xu) {
        Array r = fn(xu[0]);
        if (!r.defined()) ThrowOpError<ValueError>(op, "fn returned an empty Array handle");
        if (r.ndim() != 0) {
          ThrowOpError<ShapeError>(op, "fn must map a scalar to a scalar; for ", xu[0].aval().str(), " it returned ",
                                   r.aval().str());
        }
        if (r.dtype() != dtype) {
          if (!r.weak_type()) {
            ThrowOpError<TypeError>(op, "fn must keep the element type ", dtype_name(dtype), "; it returned ",
                                    r.aval().str());
          }
          r = convert_element_type(r, dtype);
        }
        return Arrays{r};
      },
      std::vector<ShapedArray>{scalar, scalar}, "scatter_apply func");
  for (const Array& c : j.consts) {
    if (!c.is_concrete()) {
      // JAX's _reduction_jaxpr raises the same for a func closing over a tracer.
      ThrowOpError<NotImplementedError>(op, "fn closes over a traced value (", c.aval().str(),
                                        "): reduction computations can't close over Tracers");
    }
  }
  return j;
}

Arrays ScatterApplyImpl(absl::Span<const Array> in, const ParamMap& params) {
  const Array& x = in[0];
  const Array& updates = in[2];
  Array out = Array::Empty(x.aval());
  kernels::ParallelMemcpy(out.mutable_data(), x.data(), x.nbytes());
  const int64_t count = updates.size();
  if (x.size() == 0 || count == 0) return {out};
  std::vector<int64_t> dest(static_cast<size_t>(count));
  kernels::ScatterDestinations(x.shape(), IndexArrayOf(in[1]), updates.shape(), KernelScatterDims(ScatterDnOf(params)),
                               GatherScatterModeOf(params) == GatherScatterMode::kClip, dest.data());
  // rounds[r]: the update elements that are the r-th to land on their destination.
  std::vector<std::vector<int64_t>> rounds;
  absl::flat_hash_map<int64_t, size_t> seen;
  for (int64_t e = 0; e < count; ++e) {
    if (dest[static_cast<size_t>(e)] < 0) continue;
    const size_t r = seen[dest[static_cast<size_t>(e)]]++;
    if (r == rounds.size()) rounds.emplace_back();
    rounds[r].push_back(e);
  }
  const ArraysFn update = AsFn(GetJaxpr(params, "update_jaxpr"));
  const size_t es = static_cast<size_t>(ItemSize(x.dtype()));
  auto* o = static_cast<uint8_t*>(out.mutable_data());
  const auto* u = static_cast<const uint8_t*>(updates.data());
  for (const std::vector<int64_t>& ids : rounds) {
    const int64_t c = static_cast<int64_t>(ids.size());
    Array old = Array::Empty(Shape{c}, x.dtype()), upd = Array::Empty(Shape{c}, x.dtype());
    auto* po = static_cast<uint8_t*>(old.mutable_data());
    auto* pu = static_cast<uint8_t*>(upd.mutable_data());
    for (size_t k = 0; k < ids.size(); ++k) {
      std::memcpy(po + k * es, o + static_cast<size_t>(dest[static_cast<size_t>(ids[k])]) * es, es);
      std::memcpy(pu + k * es, u + static_cast<size_t>(ids[k]) * es, es);
    }
    const Array fresh = VmapCall(update, {old, upd}, {0, 0}, {0})[0];
    const auto* pf = static_cast<const uint8_t*>(fresh.data());
    for (size_t k = 0; k < ids.size(); ++k) {
      std::memcpy(o + static_cast<size_t>(dest[static_cast<size_t>(ids[k])]) * es, pf + k * es, es);
    }
  }
  return {out};
}

}  // namespace jx::lax::internal

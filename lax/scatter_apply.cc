// JAX's scatter_apply (which x.at[idx].apply binds): a `scatter` whose update_jaxpr is
// (x, _) -> fn(x), run once per update in update order, so an element named k times gets
// fn applied k times (NumPy's ufunc.at). Eagerly, every update element's flat destination is
// read with a gather of the operand's positions through the scatter's windows (-1 where a
// window is dropped); the updates are then applied in rounds: round r takes each
// destination's r-th update, so a round's destinations are distinct and it is one vmapped
// call of the update computation between a gather and a scatter. O(updates) work in all, one
// round per multiplicity. The CPU backend runs the lowered HLO scatter the same way.
#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "jx/core/errors.h"
#include "jx/lax/convert_ops.h"
#include "jx/lax/indexing_internal.h"
#include "jx/lax/shape_ops.h"
#include "jx/lax/slicing_ops.h"
#include "jx/transforms/jaxpr_util.h"
#include "jx/transforms/staging.h"
#include "jx/transforms/vmap.h"

namespace jx::lax::internal {

// Param accessors (gather_scatter.cc).
const ScatterDimensionNumbers& ScatterDnOf(const ParamMap& p);
GatherScatterMode GatherScatterModeOf(const ParamMap& p);

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
  const ScatterDimensionNumbers& dn = ScatterDnOf(params);
  const int64_t n = x.size(), count = updates.size();
  if (n == 0 || count == 0) return {x};
  // Flat destinations of the update elements, in update order (-1: a dropped window).
  const Array positions = reshape(iota(int64, n), x.shape());
  const Array destinations =
      gather(positions, in[1], GatherDnOf(dn), WindowSliceSizes(dn, x.ndim(), updates.shape()),
             GatherModeReading(GatherScatterModeOf(params)), -1.0);
  const std::vector<int64_t> dest = destinations.to_vector<int64_t>();
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
  const GatherDimensionNumbers take{{}, {0}, {0}};
  const ScatterDimensionNumbers put{{}, {0}, {0}};
  const Array flat_updates = reshape(updates, {count});
  Array flat = reshape(x, {n});
  for (const std::vector<int64_t>& ids : rounds) {
    const int64_t c = static_cast<int64_t>(ids.size());
    std::vector<int64_t> at(ids.size());
    for (size_t k = 0; k < ids.size(); ++k) at[k] = dest[static_cast<size_t>(ids[k])];
    const Array where = Array::FromData(at.data(), {c, 1}, int64);
    const Array which = Array::FromData(ids.data(), {c, 1}, int64);
    const Array old = gather(flat, where, take, {1}, GatherScatterMode::kPromiseInBounds);
    const Array upd = gather(flat_updates, which, take, {1}, GatherScatterMode::kPromiseInBounds);
    const Array fresh = VmapCall(update, {old, upd}, {0, 0}, {0})[0];
    flat = scatter(flat, where, fresh, put, GatherScatterMode::kPromiseInBounds);  // distinct destinations
  }
  return {reshape(flat, x.shape())};
}

}  // namespace jx::lax::internal

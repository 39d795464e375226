#include "jx/transforms/checkpoint.h"

#include "jx/core/errors.h"
#include "jx/core/interpreter.h"
#include "jx/transforms/ad_util.h"
#include "jx/transforms/jaxpr_util.h"
#include "jx/transforms/jvp.h"
#include "jx/transforms/vmap.h"

namespace jx {
namespace {

const Primitive kCheckpoint = Primitive::Intern("checkpoint");

Arrays BindCheckpoint(const Hoisted& f, absl::Span<const Array> args, bool differentiated) {
  return Bind(kCheckpoint, Cat({f.consts, args}),
              ParamMap{{"differentiated", differentiated},
                       {"jaxpr", JaxprParamOf(f.jaxpr)},
                       {"policy", ParamNone{}},
                       {"prevent_cse", true}});
}

Avals CheckpointAbstractEval(InAvals in, const ParamMap& params) {
  const ClosedJaxpr& j = GetJaxpr(params, "jaxpr");
  const std::vector<ShapedArray> want = j.jaxpr->in_avals();
  bool ok = want.size() == in.size();
  for (size_t i = 0; ok && i < in.size(); ++i) ok = SameShapeDType(want[i], *in[i]);
  if (!ok) throw InternalError("checkpoint: operands do not match its jaxpr");
  const std::vector<ShapedArray> outs = j.jaxpr->out_avals();
  return Avals(outs.begin(), outs.end());
}

// Forward mode: the primal outputs by the function itself, the tangents by a second
// checkpoint over its jvp that returns only tangents. Under linearize the first runs now and
// the second is staged with only the primal inputs as residuals: nothing inside is saved.
JvpResult CheckpointJvp(absl::Span<const Array> primals, absl::Span<const Array> tangents, const ParamMap& params) {
  const ClosedJaxpr& j = GetJaxpr(params, "jaxpr");
  JvpResult r;
  r.primals_out = BindCheckpoint(Hoisted{j, {}}, primals, false);
  Arrays nonzero;
  for (const Array& t : tangents) {
    if (t.defined()) nonzero.push_back(t);
  }
  const std::vector<ShapedArray> out_avals = j.jaxpr->out_avals();
  std::vector<size_t> float_outs;
  for (size_t k = 0; k < out_avals.size(); ++k) {
    if (HasTangentSpace(out_avals[k].dtype)) float_outs.push_back(k);
  }
  r.tangents_out.resize(out_avals.size());
  if (nonzero.empty() || float_outs.empty()) return r;
  Hoisted tangent_fn = TraceHoisted(
      [&](absl::Span<const Array> a) {
        Arrays ts(primals.size());
        for (size_t i = 0, n = 0; i < primals.size(); ++i) {
          if (tangents[i].defined()) ts[i] = a[primals.size() + n++];
        }
        auto [po, to] = JvpCall(AsFn(j), a.subspan(0, primals.size()), ts);
        Arrays out;
        for (size_t k : float_outs) out.push_back(to[k].defined() ? to[k] : Zeros(out_avals[k]));
        return out;
      },
      AvalsOf(Cat({primals, nonzero})), "checkpoint jvp");
  Arrays touts = BindCheckpoint(tangent_fn, Cat({primals, nonzero}), false);
  for (size_t f = 0; f < float_outs.size(); ++f) r.tangents_out[float_outs[f]] = touts[f];
  return r;
}

// Reverse mode: one checkpoint that recomputes the non-linear part and runs the backward pass.
Arrays CheckpointTranspose(absl::Span<const Array> cts_out, absl::Span<const TransposeArg> args, const ParamMap& params) {
  const ClosedJaxpr& j = GetJaxpr(params, "jaxpr");
  std::vector<bool> linear;
  Arrays known;
  for (const TransposeArg& a : args) {
    linear.push_back(a.is_linear());
    if (!a.is_linear()) known.push_back(a.value);
  }
  const std::vector<ShapedArray> out_avals = j.jaxpr->out_avals();
  Arrays cts;
  for (size_t k = 0; k < cts_out.size(); ++k) cts.push_back(cts_out[k].defined() ? cts_out[k] : Zeros(out_avals[k]));
  Hoisted backward = TraceHoisted(
      [&](absl::Span<const Array> a) { return TransposeJaxpr(j, linear, a.subspan(0, known.size()), a.subspan(known.size())); },
      AvalsOf(Cat({known, cts})), "checkpoint transpose");
  Arrays outs = BindCheckpoint(backward, Cat({known, cts}), true);
  Arrays result(args.size());
  for (size_t i = 0, n = 0; i < args.size(); ++i) {
    if (linear[i]) result[i] = outs[n++];
  }
  return result;
}

BatchResult CheckpointBatch(absl::Span<const Array> args, absl::Span<const int64_t> dims, int64_t size,
                            const ParamMap& params) {
  std::vector<int64_t> axes;
  Arrays moved;
  for (size_t i = 0; i < args.size(); ++i) {
    moved.push_back(dims[i] == kNotMapped ? args[i] : MoveAxis(args[i], dims[i], 0));
    axes.push_back(dims[i] == kNotMapped ? kNotMapped : 0);
  }
  const ClosedJaxpr& j = GetJaxpr(params, "jaxpr");
  Hoisted batched = TraceHoisted([&](absl::Span<const Array> a) { return VmapCall(AsFn(j), a, axes, {0}, size); },
                                 AvalsOf(moved), "checkpoint vmap");
  Arrays outs = BindCheckpoint(batched, moved, params.GetBool("differentiated"));
  return BatchResult{outs, std::vector<int64_t>(outs.size(), 0)};
}

}  // namespace

Arrays CheckpointCall(const ArraysFn& f, absl::Span<const Array> args) {
  return BindCheckpoint(TraceHoisted(f, AvalsOf(args), "checkpoint"), args, false);
}

void RegisterCheckpoint(Registry& r) {
  PrimitiveRules& rules = r.Define(kCheckpoint);
  rules.abstract_eval = CheckpointAbstractEval;
  rules.impl = [](absl::Span<const Array> in, const ParamMap& params, absl::Span<const ShapedArray>) {
    return Apply(GetJaxpr(params, "jaxpr"), in);
  };
  rules.jvp = CheckpointJvp;
  rules.transpose = CheckpointTranspose;
  rules.batch = CheckpointBatch;
}

}  // namespace jx

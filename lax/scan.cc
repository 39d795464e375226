// scan: a loop over the leading axis of xs with a carry (JAX's scan_p). Inputs are
// (consts..., carry..., xs...); the body maps (consts, carry, x) -> (carry, y) and the ys
// stack along a new leading axis. Partial evaluation and transpose: scan_partial_eval.cc.
#include <algorithm>

#include "jx/core/interpreter.h"
#include "jx/lax/binary_ops.h"
#include "jx/lax/carry_types.h"
#include "jx/lax/control_flow.h"
#include "jx/transforms/jaxpr_util.h"
#include "jx/lax/op_util.h"
#include "jx/lax/rule_util.h"
#include "jx/lax/scan_internal.h"
#include "jx/lax/shape_ops.h"
#include "jx/lax/slicing_ops.h"
#include "jx/transforms/ad_util.h"
#include "jx/transforms/dce.h"
#include "jx/transforms/jvp.h"
#include "jx/transforms/vmap.h"

namespace jx::lax {
namespace internal {

const Primitive kScan = Primitive::Intern("scan");

ScanParts Parts(const ParamMap& params) {
  return ScanParts{GetJaxpr(params, "jaxpr"), params.GetInt("length"), params.GetBool("reverse"),
                   static_cast<size_t>(params.GetInt("num_consts")), static_cast<size_t>(params.GetInt("num_carry")),
                   params.GetInt("unroll")};
}

// `linear` marks the inputs known to be linear (none, as traced: JAX's transpose uses it only
// as a hint), `unroll` the iterations per loop step, and `_split_transpose` the experimental
// transpose split jx does not offer.
ParamMap ScanParams(const ClosedJaxpr& body, size_t num_consts, size_t num_carry, int64_t length, bool reverse,
                    int64_t unroll) {
  return ParamMap{{"_split_transpose", false},
                  {"jaxpr", JaxprParamOf(body)},
                  {"length", length},
                  {"linear", ParamList(body.jaxpr->invars.size(), Param(false))},
                  {"num_carry", static_cast<int64_t>(num_carry)},
                  {"num_consts", static_cast<int64_t>(num_consts)},
                  {"reverse", reverse},
                  {"unroll", unroll}};
}

Arrays BindScan(const Hoisted& body, absl::Span<const Array> consts, absl::Span<const Array> carry,
                absl::Span<const Array> xs, int64_t length, bool reverse, int64_t unroll) {
  const Arrays all_consts = Cat({body.consts, consts});
  return BindOp(kScan, Cat({all_consts, carry, xs}),
                ScanParams(body.jaxpr, all_consts.size(), carry.size(), length, reverse, unroll));
}

ShapedArray Unstacked(const ShapedArray& a) {
  return ShapedArray{Shape(a.shape.begin() + 1, a.shape.end()), a.dtype, a.weak_type};
}
ShapedArray Stacked(const ShapedArray& a, int64_t length) {
  Shape s = a.shape;
  s.insert(s.begin(), length);
  return ShapedArray{std::move(s), a.dtype, a.weak_type};
}

namespace {

Avals ScanAbstractEval(InAvals in, const ParamMap& params) {
  const ScanParts s = Parts(params);
  const std::vector<ShapedArray> body_in = s.body.jaxpr->in_avals(), body_out = s.body.jaxpr->out_avals();
  if (body_in.size() != in.size()) {
    ThrowOpError<TypeError>("scan", "the body takes ", body_in.size(), " inputs but scan got ", in.size());
  }
  for (size_t i = 0; i < in.size(); ++i) {
    const bool is_x = i >= s.num_consts + s.num_carry;
    if (is_x && (in[i]->ndim() == 0 || in[i]->shape[0] != s.length)) {
      ThrowOpError<TypeError>("scan", "xs input ", i - s.num_consts - s.num_carry, " is ", in[i]->str(),
                              " but the scan length is ", s.length);
    }
    const ShapedArray want = is_x ? Unstacked(*in[i]) : *in[i];
    if (!SameShapeDType(want, body_in[i])) {
      ThrowOpError<TypeError>("scan", "input ", i, " is ", in[i]->str(), " but the body expects ", body_in[i].str());
    }
  }
  Avals out;
  for (size_t k = 0; k < body_out.size(); ++k) {
    if (k < s.num_carry) {
      if (!SameShapeDType(body_out[k], *in[s.num_consts + k])) {
        ThrowOpError<TypeError>("scan", "the body returns carry ", k, " as ", body_out[k].str(), " but it enters as ",
                                in[s.num_consts + k]->str());
      }
      out.push_back(*in[s.num_consts + k]);
    } else {
      out.push_back(Stacked(body_out[k], s.length));
    }
  }
  return out;
}

Arrays ScanImpl(absl::Span<const Array> in, const ParamMap& params, absl::Span<const ShapedArray> out_avals) {
  const ScanParts s = Parts(params);
  const absl::Span<const Array> consts = in.subspan(0, s.num_consts);
  Arrays carry(in.begin() + static_cast<ptrdiff_t>(s.num_consts),
               in.begin() + static_cast<ptrdiff_t>(s.num_consts + s.num_carry));
  const absl::Span<const Array> xs = in.subspan(s.num_consts + s.num_carry);
  const size_t num_ys = out_avals.size() - s.num_carry;
  std::vector<std::vector<Array>> ys(num_ys, std::vector<Array>(static_cast<size_t>(s.length)));
  for (int64_t t = 0; t < s.length; ++t) {
    const int64_t i = s.reverse ? s.length - 1 - t : t;
    Arrays step = Cat({consts, carry});
    for (const Array& x : xs) {
      std::vector<int64_t> start(static_cast<size_t>(x.ndim()), 0), limit(x.shape().begin(), x.shape().end());
      start[0] = i;
      limit[0] = i + 1;
      step.push_back(reshape(slice(x, start, limit), Shape(x.shape().begin() + 1, x.shape().end())));
    }
    Arrays outs = Apply(s.body, step);
    carry.assign(outs.begin(), outs.begin() + static_cast<ptrdiff_t>(s.num_carry));
    for (size_t k = 0; k < num_ys; ++k) ys[k][static_cast<size_t>(i)] = outs[s.num_carry + k];
  }
  Arrays result = carry;
  for (size_t k = 0; k < num_ys; ++k) {
    const ShapedArray& aval = out_avals[s.num_carry + k];
    if (s.length == 0) {
      result.push_back(Zeros(aval));
      continue;
    }
    std::vector<Array> rows;
    for (const Array& y : ys[k]) rows.push_back(expand_dims(y, {0}));
    result.push_back(concatenate(rows, 0));
  }
  return result;
}

JvpResult ScanJvp(absl::Span<const Array> primals, absl::Span<const Array> tangents, const ParamMap& params) {
  const ScanParts s = Parts(params);
  const size_t nc = s.num_consts, nk = s.num_carry, nx = primals.size() - nc - nk;
  const absl::Span<const Array> consts = primals.subspan(0, nc), carry = primals.subspan(nc, nk),
                                xs = primals.subspan(nc + nk);
  Arrays consts_t, carry_t, xs_t;
  std::vector<size_t> float_carry;
  for (size_t i = 0; i < nc; ++i) {
    if (tangents[i].defined()) consts_t.push_back(tangents[i]);
  }
  for (size_t i = 0; i < nk; ++i) {
    if (!HasTangentSpace(carry[i].dtype())) continue;
    float_carry.push_back(i);
    carry_t.push_back(tangents[nc + i].defined() ? tangents[nc + i] : Zeros(carry[i].aval()));
  }
  for (size_t i = 0; i < nx; ++i) {
    if (tangents[nc + nk + i].defined()) xs_t.push_back(tangents[nc + nk + i]);
  }
  const std::vector<ShapedArray> body_out = s.body.jaxpr->out_avals();
  std::vector<ShapedArray> avals = AvalsOf(Cat({consts, consts_t, carry, carry_t}));
  for (const Array& x : Cat({xs, xs_t})) avals.push_back(Unstacked(x.aval()));
  Hoisted body = TraceHoisted(
      [&](absl::Span<const Array> a) {
        size_t at = 0;
        auto take = [&](size_t n) {
          absl::Span<const Array> part = a.subspan(at, n);
          at += n;
          return part;
        };
        const auto c = take(nc), ct = take(consts_t.size()), k = take(nk), kt = take(carry_t.size()), x = take(nx),
                   xt = take(xs_t.size());
        Arrays ps = Cat({c, k, x}), ts(ps.size());
        for (size_t i = 0, j = 0; i < nc; ++i) {
          if (tangents[i].defined()) ts[i] = ct[j++];
        }
        for (size_t f = 0; f < float_carry.size(); ++f) ts[nc + float_carry[f]] = kt[f];
        for (size_t i = 0, j = 0; i < nx; ++i) {
          if (tangents[nc + nk + i].defined()) ts[nc + nk + i] = xt[j++];
        }
        auto [po, to] = JvpCall(AsFn(s.body), ps, ts);
        auto tangent = [&](size_t k2) { return to[k2].defined() ? to[k2] : Zeros(body_out[k2]); };
        // (carry, carry tangents) are the new carry; (ys, float ys' tangents) the new ys.
        Arrays out(po.begin(), po.begin() + static_cast<ptrdiff_t>(nk));
        for (size_t f : float_carry) out.push_back(tangent(f));
        out.insert(out.end(), po.begin() + static_cast<ptrdiff_t>(nk), po.end());
        for (size_t k2 = nk; k2 < po.size(); ++k2) {
          if (HasTangentSpace(body_out[k2].dtype)) out.push_back(tangent(k2));
        }
        return out;
      },
      avals, "scan jvp");
  // One scan computes primals and tangents. Under linearize its partial_eval rule splits it:
  // a known scan runs now and saves residuals, and only the tangent scan is staged.
  Arrays outs = BindScan(body, Cat({consts, consts_t}), Cat({carry, carry_t}), Cat({xs, xs_t}), s.length, s.reverse, s.unroll);
  const size_t nft = float_carry.size(), ny = body_out.size() - nk;
  JvpResult r;
  r.primals_out.assign(outs.begin(), outs.begin() + static_cast<ptrdiff_t>(nk));
  r.primals_out.insert(r.primals_out.end(), outs.begin() + static_cast<ptrdiff_t>(nk + nft),
                       outs.begin() + static_cast<ptrdiff_t>(nk + nft + ny));
  r.tangents_out.resize(nk);
  for (size_t f = 0; f < nft; ++f) r.tangents_out[float_carry[f]] = outs[nk + f];
  for (size_t k = nk, j = nk + nft + ny; k < body_out.size(); ++k) {
    r.tangents_out.push_back(HasTangentSpace(body_out[k].dtype) ? outs[j++] : Array());
  }
  return r;
}

BatchResult ScanBatch(absl::Span<const Array> args, absl::Span<const int64_t> dims, int64_t size,
                      const ParamMap& params) {
  const ScanParts s = Parts(params);
  const size_t nc = s.num_consts, nk = s.num_carry;
  // Consts keep their batching; carries are batched along axis 0; xs along axis 1 (axis 0 is
  // the scanned one), so each slice is batched along axis 0.
  Arrays consts, carry, xs;
  std::vector<int64_t> axes;
  for (size_t i = 0; i < args.size(); ++i) {
    const bool mapped = dims[i] != kNotMapped;
    if (i < nc) {
      consts.push_back(mapped ? MoveAxis(args[i], dims[i], 0) : args[i]);
      axes.push_back(mapped ? 0 : kNotMapped);
    } else if (i < nc + nk) {
      carry.push_back(MoveBatchToFront(args[i], dims[i], size));
      axes.push_back(0);
    } else {
      xs.push_back(mapped ? MoveAxis(args[i], dims[i], 1) : args[i]);
      axes.push_back(mapped ? 0 : kNotMapped);
    }
  }
  std::vector<ShapedArray> avals = AvalsOf(Cat({consts, carry}));
  for (const Array& x : xs) avals.push_back(Unstacked(x.aval()));
  Hoisted body = TraceHoisted(
      [&](absl::Span<const Array> a) { return VmapCall(AsFn(s.body), a, axes, {0}, size); }, avals, "scan vmap");
  Arrays outs = BindScan(body, consts, carry, xs, s.length, s.reverse, s.unroll);
  std::vector<int64_t> out_dims(outs.size(), 1);
  for (size_t k = 0; k < nk; ++k) out_dims[k] = 0;
  return BatchResult{outs, out_dims};
}

// JAX's _scan_dce_rule: the unused ys go, and so do the carries nothing needs. A carry is
// needed when its final value is used or a needed carry's update reads it, so the body is
// pruned until the needed carries stop growing (at most num_carry + 1 rounds); needed carries
// stay inputs of the body even where it does not read them, as the loop passes them on.
DceRuleResult ScanDce(const std::vector<bool>& used_outputs, const Eqn& eqn) {
  const ScanParts s = Parts(eqn.params);
  const Jaxpr& body = *s.body.jaxpr;
  const size_t nc = s.num_consts, nk = s.num_carry, nin = body.invars.size();
  bool any_used = false;
  for (bool u : used_outputs) any_used |= u;
  if (!any_used && !HasEffect(eqn)) return {std::vector<bool>(eqn.inputs.size(), false), std::nullopt};
  std::vector<bool> used_carry(used_outputs.begin(), used_outputs.begin() + static_cast<std::ptrdiff_t>(nk));
  const std::vector<bool> used_ys(used_outputs.begin() + static_cast<std::ptrdiff_t>(nk), used_outputs.end());
  DceResult pruned;
  for (bool grew = true; grew;) {
    std::vector<bool> body_used = used_carry;
    body_used.insert(body_used.end(), used_ys.begin(), used_ys.end());
    std::vector<bool> instantiate(nin, false);
    std::copy(used_carry.begin(), used_carry.end(), instantiate.begin() + static_cast<std::ptrdiff_t>(nc));
    pruned = DceJaxpr(body, body_used, instantiate);
    grew = false;
    for (size_t k = 0; k < nk; ++k) {
      if (pruned.used_inputs[nc + k] && !used_carry[k]) grew = used_carry[k] = true;
    }
  }
  DceRuleResult r;
  r.used_inputs = pruned.used_inputs;
  std::copy(used_carry.begin(), used_carry.end(), r.used_inputs.begin() + static_cast<std::ptrdiff_t>(nc));
  size_t num_consts = 0, num_carry = 0;
  for (size_t i = 0; i < nc; ++i) num_consts += r.used_inputs[i];
  for (bool u : used_carry) num_carry += u;
  Eqn out{eqn.primitive, {}, {}, eqn.params};
  ParamList linear;
  const ParamList& old_linear = eqn.params.GetList("linear");
  for (size_t i = 0; i < eqn.inputs.size(); ++i) {
    if (!r.used_inputs[i]) continue;
    out.inputs.push_back(eqn.inputs[i]);
    linear.push_back(old_linear[i]);
  }
  for (size_t o = 0; o < eqn.outputs.size(); ++o) {
    if (o < nk ? used_carry[o] : used_ys[o - nk]) out.outputs.push_back(eqn.outputs[o]);
  }
  out.params.Set("jaxpr", JaxprParamOf(ClosedJaxpr{pruned.jaxpr, {}}))
      .Set("linear", std::move(linear))
      .Set("num_consts", static_cast<int64_t>(num_consts))
      .Set("num_carry", static_cast<int64_t>(num_carry));
  r.eqn = std::move(out);
  return r;
}

}  // namespace

void RegisterScan(Registry& r) {
  PrimitiveRules& rules = r.Define(kScan);
  rules.abstract_eval = ScanAbstractEval;
  rules.impl = ScanImpl;
  rules.jvp = ScanJvp;
  rules.batch = ScanBatch;
  rules.transpose = ScanTranspose;
  rules.partial_eval = ScanPartialEval;
  RegisterDceRule(kScan, ScanDce);
}

}  // namespace internal

Arrays scan_flat(const ArraysFn& f, absl::Span<const Array> init, absl::Span<const Array> xs,
                 std::optional<int64_t> length, bool reverse, int64_t unroll) {
  using namespace internal;
  int64_t n = -1;
  for (size_t i = 0; i < xs.size(); ++i) {
    if (xs[i].ndim() == 0) throw TypeError(StrCat("scan: xs leaf ", i, " is a scalar (", xs[i].aval().str(), "); xs are sliced along axis 0"));
    if (n >= 0 && xs[i].shape()[0] != n) {
      throw ValueError(StrCat("scan: xs leaves have different leading sizes: ", n, " and ", xs[i].shape()[0], " (leaf ", i, ")"));
    }
    n = xs[i].shape()[0];
  }
  if (length && n >= 0 && *length != n) throw ValueError(StrCat("scan: length ", *length, " but xs have leading size ", n));
  if (n < 0) {
    if (!length) throw ValueError("scan: with no xs, the length must be given");
    n = *length;
  }
  std::vector<Array> carry(init.begin(), init.end());
  std::vector<ShapedArray> avals = AvalsOf(carry);
  for (const Array& x : xs) avals.push_back(Unstacked(x.aval()));
  Hoisted body = TraceHoisted(f, avals, "scan body");
  if (PromoteWeakCarry(carry, body.jaxpr.jaxpr->out_avals())) {
    // JAX's _promote_weak_typed_inputs: trace again with the promoted carry.
    for (size_t k = 0; k < carry.size(); ++k) avals[k] = carry[k].aval();
    body = TraceHoisted(f, avals, "scan body");
  }
  CheckCarryTypes("scan body", AvalsOf(carry), body.jaxpr.jaxpr->out_avals());
  return BindScan(body, {}, carry, xs, n, reverse, unroll);
}

}  // namespace jx::lax

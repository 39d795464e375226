// while: iterates body_jaxpr while cond_jaxpr holds (JAX's while_p). Inputs are
// (cond consts..., body consts..., carry...). Forward mode and vmap; reverse mode is refused
// because the trip count is only known at run time.
#include "jx/core/interpreter.h"
#include "jx/lax/binary_ops.h"
#include "jx/lax/carry_types.h"
#include "jx/lax/control_flow.h"
#include "jx/transforms/jaxpr_util.h"
#include "jx/lax/op_util.h"
#include "jx/lax/reduction_ops.h"
#include "jx/lax/rule_util.h"
#include "jx/lax/shape_ops.h"
#include "jx/transforms/ad_util.h"
#include "jx/transforms/dce.h"
#include "jx/transforms/jvp.h"
#include "jx/transforms/vmap.h"

namespace jx::lax {
namespace internal {
namespace {

const Primitive kWhile = Primitive::Intern("while");

struct WhileParts {
  ClosedJaxpr cond, body;
  size_t cond_nconsts, body_nconsts;
};

WhileParts Parts(const ParamMap& params) {
  return WhileParts{GetJaxpr(params, "cond_jaxpr"), GetJaxpr(params, "body_jaxpr"),
                    static_cast<size_t>(params.GetInt("cond_nconsts")), static_cast<size_t>(params.GetInt("body_nconsts"))};
}

Arrays BindWhile(const Hoisted& cond, absl::Span<const Array> cond_consts, const Hoisted& body,
                 absl::Span<const Array> body_consts, absl::Span<const Array> init) {
  const Arrays cc = Cat({cond.consts, cond_consts}), bc = Cat({body.consts, body_consts});
  return BindOp(kWhile, Cat({cc, bc, init}),
                ParamMap{{"body_jaxpr", JaxprParamOf(body.jaxpr)},
                         {"body_nconsts", static_cast<int64_t>(bc.size())},
                         {"cond_jaxpr", JaxprParamOf(cond.jaxpr)},
                         {"cond_nconsts", static_cast<int64_t>(cc.size())}});
}

Avals WhileAbstractEval(InAvals in, const ParamMap& params) {
  const WhileParts w = Parts(params);
  const InAvals carry = in.subspan(w.cond_nconsts + w.body_nconsts);
  const std::vector<ShapedArray> body_out = w.body.jaxpr->out_avals();
  bool ok = body_out.size() == carry.size();
  for (size_t i = 0; ok && i < carry.size(); ++i) ok = SameShapeDType(body_out[i], *carry[i]);
  if (!ok) {
    ThrowOpError<TypeError>("while", "the body must return the carry's shapes and dtypes: carry (", AvalsToString(carry),
                            ") but the body returns (", AvalsStr(body_out), ")");
  }
  Avals out;
  for (const ShapedArray* a : carry) out.push_back(*a);
  return out;
}

Arrays WhileImpl(absl::Span<const Array> in, const ParamMap& params, absl::Span<const ShapedArray>) {
  const WhileParts w = Parts(params);
  const absl::Span<const Array> cc = in.subspan(0, w.cond_nconsts), bc = in.subspan(w.cond_nconsts, w.body_nconsts);
  Arrays carry(in.begin() + static_cast<ptrdiff_t>(w.cond_nconsts + w.body_nconsts), in.end());
  while (Apply(w.cond, Cat({cc, carry}))[0].item<bool>()) carry = Apply(w.body, Cat({bc, carry}));
  return carry;
}

JvpResult WhileJvp(absl::Span<const Array> primals, absl::Span<const Array> tangents, const ParamMap& params) {
  const WhileParts w = Parts(params);
  const absl::Span<const Array> cc = primals.subspan(0, w.cond_nconsts);
  const absl::Span<const Array> bc = primals.subspan(w.cond_nconsts, w.body_nconsts);
  const absl::Span<const Array> bc_t = tangents.subspan(w.cond_nconsts, w.body_nconsts);
  const absl::Span<const Array> init = primals.subspan(w.cond_nconsts + w.body_nconsts);
  const absl::Span<const Array> init_t = tangents.subspan(w.cond_nconsts + w.body_nconsts);
  // Every float carry gets a tangent (a body may make a zero tangent nonzero).
  Arrays nz_bc_t, carry_t;
  for (const Array& t : bc_t) {
    if (t.defined()) nz_bc_t.push_back(t);
  }
  std::vector<size_t> float_carry;
  for (size_t i = 0; i < init.size(); ++i) {
    if (!HasTangentSpace(init[i].dtype())) continue;
    float_carry.push_back(i);
    carry_t.push_back(init_t[i].defined() ? init_t[i] : Zeros(init[i].aval()));
  }
  const std::vector<ShapedArray> carry_avals = AvalsOf(Cat({init, carry_t}));
  const std::vector<ShapedArray> body_avals = AvalsOf(Cat({bc, nz_bc_t, init, carry_t}));
  Hoisted body = TraceHoisted(
      [&](absl::Span<const Array> a) {
        Arrays ps = Cat({a.subspan(0, bc.size()), a.subspan(bc.size() + nz_bc_t.size(), init.size())});
        Arrays ts(ps.size());
        for (size_t i = 0, j = bc.size(); i < bc.size(); ++i) {
          if (bc_t[i].defined()) ts[i] = a[j++];
        }
        const absl::Span<const Array> ct = a.subspan(bc.size() + nz_bc_t.size() + init.size());
        for (size_t f = 0; f < float_carry.size(); ++f) ts[bc.size() + float_carry[f]] = ct[f];
        auto [po, to] = JvpCall(AsFn(w.body), ps, ts);
        for (size_t i : float_carry) po.push_back(to[i].defined() ? to[i] : Zeros(po[i].aval()));
        return po;
      },
      body_avals, "while body jvp");
  const std::vector<ShapedArray> cond_avals = AvalsOf(Cat({cc, init, carry_t}));
  Hoisted cond = TraceHoisted(
      [&](absl::Span<const Array> a) { return Apply(w.cond, a.subspan(0, cc.size() + init.size())); }, cond_avals,
      "while cond jvp");
  // One loop computes primals and tangents; under linearize the partial_eval rule runs the
  // primal part now so the primal outputs stay known.
  Arrays outs = BindWhile(cond, cc, body, Cat({bc, nz_bc_t}), Cat({init, carry_t}));
  JvpResult r;
  r.primals_out.assign(outs.begin(), outs.begin() + static_cast<ptrdiff_t>(init.size()));
  r.tangents_out.resize(init.size());
  for (size_t f = 0; f < float_carry.size(); ++f) r.tangents_out[float_carry[f]] = outs[init.size() + f];
  return r;
}

// Partial evaluation as JAX's _while_partial_eval: when the predicate depends only on known
// carries, a loop over the known carries runs now, and the unknown carries come from the
// whole loop staged with the known inputs as residuals. The staged loop recomputes the known
// part: without a trip count, per-iteration residuals cannot be saved.
std::optional<PartialEvalSplit> WhilePartialEval(absl::Span<const Array> in, const std::vector<bool>& in_unknown,
                                                 const ParamMap& params) {
  const WhileParts w = Parts(params);
  const size_t nc = w.cond_nconsts, nb = w.body_nconsts, n = in.size() - nc - nb;
  std::vector<bool> body_unknown(in_unknown.begin() + static_cast<ptrdiff_t>(nc), in_unknown.end());
  PartialEvalResult pe;
  for (bool changed = true; changed;) {
    std::vector<bool> force(body_unknown.begin() + static_cast<ptrdiff_t>(nb), body_unknown.end());
    pe = PartialEvalJaxpr(w.body, body_unknown, force);
    changed = false;
    for (size_t k = 0; k < n; ++k) {
      if (pe.out_unknown[k] && !body_unknown[nb + k]) body_unknown[nb + k] = changed = true;
    }
  }
  std::vector<bool> cond_unknown(in_unknown.begin(), in_unknown.begin() + static_cast<ptrdiff_t>(nc));
  cond_unknown.insert(cond_unknown.end(), body_unknown.begin() + static_cast<ptrdiff_t>(nb), body_unknown.end());
  const PartialEvalResult pc = PartialEvalJaxpr(w.cond, cond_unknown, {});
  if (pc.out_unknown[0]) return std::nullopt;
  Arrays known_cc, known_bc, known_carry;
  for (size_t i = 0; i < nc; ++i) {
    if (!in_unknown[i]) known_cc.push_back(in[i]);
  }
  for (size_t i = 0; i < nb; ++i) {
    if (!body_unknown[i]) known_bc.push_back(in[nc + i]);
  }
  PartialEvalSplit split;
  split.known_outs.resize(n);
  for (size_t k = 0; k < n; ++k) {
    if (body_unknown[nb + k]) {
      split.unknown_from.push_back(k);
    } else {
      known_carry.push_back(in[nc + nb + k]);
    }
  }
  const size_t n_known = known_carry.size();
  Hoisted cond = TraceHoisted(
      [&](absl::Span<const Array> a) { return Arrays{Apply(pc.known.jaxpr, Cat({pc.known.consts, a}))[0]}; },
      AvalsOf(Cat({known_cc, known_carry})), "while partial_eval(cond)");
  Hoisted body = TraceHoisted(
      [&](absl::Span<const Array> a) {
        Arrays outs = Apply(pe.known.jaxpr, Cat({pe.known.consts, a}));
        return Arrays(outs.begin(), outs.begin() + static_cast<ptrdiff_t>(n_known));
      },
      AvalsOf(Cat({known_bc, known_carry})), "while partial_eval(body)");
  const Arrays known = BindWhile(cond, known_cc, body, known_bc, known_carry);
  for (size_t k = 0, j = 0; k < n; ++k) {
    if (!body_unknown[nb + k]) split.known_outs[k] = known[j++];
  }
  split.staged = kWhile;
  split.staged_inputs.assign(in.begin(), in.end());
  split.staged_params = params;
  return split;
}

BatchResult WhileBatch(absl::Span<const Array> args, absl::Span<const int64_t> dims, int64_t size,
                       const ParamMap& params) {
  const WhileParts w = Parts(params);
  const size_t nc = w.cond_nconsts, nb = w.body_nconsts, n_carry = args.size() - nc - nb;
  // Consts keep their batching; every carry is batched along axis 0.
  Arrays consts, carry;
  std::vector<int64_t> const_axes;
  for (size_t i = 0; i < nc + nb; ++i) {
    consts.push_back(dims[i] == kNotMapped ? args[i] : MoveAxis(args[i], dims[i], 0));
    const_axes.push_back(dims[i] == kNotMapped ? kNotMapped : 0);
  }
  for (size_t i = nc + nb; i < args.size(); ++i) carry.push_back(MoveBatchToFront(args[i], dims[i], size));
  const std::vector<int64_t> cond_axes = [&] {
    std::vector<int64_t> a(const_axes.begin(), const_axes.begin() + static_cast<ptrdiff_t>(nc));
    a.insert(a.end(), n_carry, 0);
    return a;
  }();
  const std::vector<int64_t> body_axes = [&] {
    std::vector<int64_t> a(const_axes.begin() + static_cast<ptrdiff_t>(nc), const_axes.end());
    a.insert(a.end(), n_carry, 0);
    return a;
  }();
  // Per-example predicates: the loop runs while any example is live, and finished examples
  // keep their carry (JAX's batched while).
  auto predicates = [&](absl::Span<const Array> cond_consts, absl::Span<const Array> c) {
    return VmapCall(AsFn(w.cond), Cat({cond_consts, c}), cond_axes, {0}, size)[0];
  };
  const std::vector<ShapedArray> cond_avals = AvalsOf(Cat({absl::MakeConstSpan(consts).subspan(0, nc), carry}));
  Hoisted cond = TraceHoisted(
      [&](absl::Span<const Array> a) {
        return Arrays{reduce_or(predicates(a.subspan(0, nc), a.subspan(nc)), {0})};
      },
      cond_avals, "while cond vmap");
  const std::vector<ShapedArray> body_avals = AvalsOf(Cat({consts, carry}));
  Hoisted body = TraceHoisted(
      [&](absl::Span<const Array> a) {
        const absl::Span<const Array> c = a.subspan(nc + nb);
        const Array live = predicates(a.subspan(0, nc), c);
        Arrays next = VmapCall(AsFn(w.body), Cat({a.subspan(nc, nb), c}), body_axes, {0}, size);
        for (size_t i = 0; i < next.size(); ++i) {
          next[i] = select_n(broadcast_in_dim(live, next[i].shape(), {0}), {c[i], next[i]});
        }
        return next;
      },
      body_avals, "while body vmap");
  // The body reads the cond consts too (to know which examples are live).
  Arrays outs = BindWhile(cond, absl::MakeConstSpan(consts).subspan(0, nc), body, consts, carry);
  return BatchResult{outs, std::vector<int64_t>(outs.size(), 0)};
}

// A DCE rule as JAX's for while: a carry is needed when its final value is used, the cond
// reads it, or the update of a needed carry reads it (a fixpoint over the body, at most
// one round per carry). The others go from the loop with their updates, and so do the consts
// neither the cond nor the pruned body reads. A loop with an effect keeps every carry (the
// effect may read any of them); one whose outputs are all unused and that has no effect goes.
DceRuleResult WhileDce(const std::vector<bool>& used_outputs, const Eqn& eqn) {
  const WhileParts w = Parts(eqn.params);
  const size_t nc = w.cond_nconsts, nb = w.body_nconsts, n = eqn.outputs.size();
  const bool effect = HasEffect(eqn);
  bool any_used = false;
  for (bool u : used_outputs) any_used |= u;
  if (!any_used && !effect) return {std::vector<bool>(eqn.inputs.size(), false), std::nullopt};
  if (effect) return {std::vector<bool>(eqn.inputs.size(), true), eqn};
  std::vector<bool> needed = used_outputs;
  const std::vector<bool> cond_reads = DceJaxpr(*w.cond.jaxpr, {true}).used_inputs;
  for (size_t k = 0; k < n; ++k) needed[k] = needed[k] || cond_reads[nc + k];
  DceResult body;
  for (bool grew = true; grew;) {
    std::vector<bool> keep(nb, false);
    keep.insert(keep.end(), needed.begin(), needed.end());
    body = DceJaxpr(*w.body.jaxpr, needed, keep);
    grew = false;
    for (size_t k = 0; k < n; ++k) {
      if (body.used_inputs[nb + k] && !needed[k]) grew = needed[k] = true;
    }
  }
  std::vector<bool> keep_cond(nc, false);
  keep_cond.insert(keep_cond.end(), needed.begin(), needed.end());
  const DceResult cond = DceJaxpr(*w.cond.jaxpr, {true}, keep_cond);
  DceRuleResult r;
  r.used_inputs.assign(cond.used_inputs.begin(), cond.used_inputs.begin() + static_cast<ptrdiff_t>(nc));
  r.used_inputs.insert(r.used_inputs.end(), body.used_inputs.begin(), body.used_inputs.begin() + static_cast<ptrdiff_t>(nb));
  r.used_inputs.insert(r.used_inputs.end(), needed.begin(), needed.end());
  Eqn out{eqn.primitive, {}, {}, eqn.params};
  for (size_t i = 0; i < eqn.inputs.size(); ++i) {
    if (r.used_inputs[i]) out.inputs.push_back(eqn.inputs[i]);
  }
  for (size_t k = 0; k < n; ++k) {
    if (needed[k]) out.outputs.push_back(eqn.outputs[k]);
  }
  int64_t cond_nconsts = 0, body_nconsts = 0;
  for (size_t i = 0; i < nc; ++i) cond_nconsts += r.used_inputs[i];
  for (size_t i = nc; i < nc + nb; ++i) body_nconsts += r.used_inputs[i];
  out.params.Set("cond_jaxpr", JaxprParamOf(ClosedJaxpr{cond.jaxpr, w.cond.consts}))
      .Set("body_jaxpr", JaxprParamOf(ClosedJaxpr{body.jaxpr, w.body.consts}))
      .Set("cond_nconsts", cond_nconsts)
      .Set("body_nconsts", body_nconsts);
  r.eqn = std::move(out);
  return r;
}

}  // namespace

void RegisterWhile(Registry& r) {
  PrimitiveRules& rules = r.Define(kWhile);
  rules.abstract_eval = WhileAbstractEval;
  rules.impl = WhileImpl;
  rules.jvp = WhileJvp;
  rules.batch = WhileBatch;
  rules.partial_eval = WhilePartialEval;
  RegisterDceRule(kWhile, WhileDce);
  rules.unsupported["transpose"] =
      "reverse-mode differentiation does not work through while_loop: its trip count is only known at run time, "
      "so the residuals of each iteration cannot be saved; use lax::scan, or lax::fori_loop with static bounds";
}

}  // namespace internal

Arrays while_loop_flat(const ArraysFn& cond_fn, const ArraysFn& body_fn, absl::Span<const Array> init) {
  using namespace internal;
  std::vector<Array> carry(init.begin(), init.end());
  std::vector<ShapedArray> avals = AvalsOf(carry);
  Hoisted body = TraceHoisted(body_fn, avals, "while_loop body");
  if (PromoteWeakCarry(carry, body.jaxpr.jaxpr->out_avals())) {
    // JAX's _promote_weak_typed_inputs: cond and body see the promoted carry.
    avals = AvalsOf(carry);
    body = TraceHoisted(body_fn, avals, "while_loop body");
  }
  Hoisted cond = TraceHoisted(cond_fn, avals, "while_loop cond");
  const std::vector<ShapedArray> pred = cond.jaxpr.jaxpr->out_avals();
  if (pred.size() != 1 || pred[0].dtype != bool_ || pred[0].ndim() != 0) {
    throw TypeError(StrCat("while_loop: cond_fn must return a bool scalar, got (", AvalsStr(pred), ")"));
  }
  const std::vector<ShapedArray> out = body.jaxpr.jaxpr->out_avals();
  if (out.size() != avals.size()) {
    throw TypeError(StrCat("while_loop: body_fn must return the carry's ", avals.size(), " leaves: the carry is (",
                           AvalsStr(avals), ") but body_fn returns (", AvalsStr(out), ")"));
  }
  CheckCarryTypes("while_loop body", avals, out);
  return BindWhile(cond, {}, body, {}, carry);
}

}  // namespace jx::lax

// Partial evaluation and transpose of scan (JAX's _scan_partial_eval and _scan_transpose).
// The body's known part runs as a forward scan that saves what the unknown part needs; the
// unknown (or linear) part runs as a second scan over those residuals. Each residual reaches
// the second scan in its cheapest form, as JAX's rules pass them:
//  - loop-invariant: the known body is split again with only its consts known, and what
//    depends on consts alone is computed once before the loop; such residuals are consts of
//    the second scan (JAX's intensive residuals), never a [length, ...] stack of copies;
//  - the xs, when a residual is an xs slice (up to reshapes, redone per step by the second
//    scan's body): no copy stacked by the known scan;
//  - the ys shifted by one step with the initial carry in front, when a residual is the carry
//    entering a step (up to reshapes) and that carry's update is also a ys output: the RNN's
//    h_{t-1} is read from the hs the loop returns anyway, not from a second stack;
//  - otherwise a stack the known scan writes, one row per step.
#include <algorithm>
#include <array>
#include <optional>
#include <vector>

#include "jx/lax/binary_ops.h"
#include "jx/lax/scan_internal.h"
#include "jx/lax/shape_ops.h"
#include "jx/lax/slicing_ops.h"
#include "jx/transforms/ad_util.h"
#include "jx/transforms/dce.h"
#include "jx/transforms/remat_partial_eval.h"

namespace jx::lax::internal {
namespace {

const Primitive kReshape = Primitive::Intern("reshape");
const Primitive kSqueeze = Primitive::Intern("squeeze");
const Primitive kExpandDims = Primitive::Intern("expand_dims");

// The body split into its known and unknown parts. A carry is unknown if it enters unknown
// or the body feeds unknown values into it (iterated to a fixpoint), so *unknown grows.
PartialEvalResult SplitBody(const ScanParts& s, std::vector<bool>* unknown) {
  PartialEvalResult pe;
  for (bool changed = true; changed;) {
    std::vector<bool> force(s.body.jaxpr->outvars.size(), false);
    for (size_t k = 0; k < s.num_carry; ++k) force[k] = (*unknown)[s.num_consts + k];
    pe = PartialEvalJaxpr(s.body, *unknown, force);
    changed = false;
    for (size_t k = 0; k < s.num_carry; ++k) {
      if (pe.out_unknown[k] && !(*unknown)[s.num_consts + k]) (*unknown)[s.num_consts + k] = changed = true;
    }
  }
  return pe;
}

// Output `out` of j computed from one input by reshapes only: that input, and the reshapes as
// a one-input jaxpr (none when the output is the input itself).
struct ReshapeChain {
  size_t input;
  std::optional<ClosedJaxpr> ops;
};
std::optional<ReshapeChain> ReshapeChainOf(const Jaxpr& j, size_t out) {
  std::vector<bool> used(j.outvars.size(), false);
  used[out] = true;
  const DceResult d = DceJaxpr(j, used);
  std::optional<size_t> input;
  for (size_t i = 0; i < d.used_inputs.size(); ++i) {
    if (!d.used_inputs[i]) continue;
    if (input) return std::nullopt;
    input = i;
  }
  if (!input) return std::nullopt;
  for (const Eqn& e : d.jaxpr->eqns) {
    if (e.primitive != kReshape && e.primitive != kSqueeze && e.primitive != kExpandDims) return std::nullopt;
  }
  if (d.jaxpr->eqns.empty()) return ReshapeChain{*input, std::nullopt};
  return ReshapeChain{*input, ClosedJaxpr{d.jaxpr, {}}};
}

// The known body (consts..., carry..., xs...) -> (carry..., ys..., residuals...) with what
// depends on its consts alone computed now (JAX's hoisting of loop-invariant residuals).
struct HoistedBody {
  ClosedJaxpr step;    // (step_consts..., carry..., xs...) -> (carry..., ys..., residuals not invariant...)
  Arrays step_consts;  // loop-invariant values the step reads (the consts themselves, or computed now)
  Arrays invariant;    // per residual: its value when loop-invariant, else undefined
};
HoistedBody HoistInvariants(const Hoisted& known, absl::Span<const Array> known_consts, size_t num_outs,
                            size_t num_res) {
  const Jaxpr& kj = *known.jaxpr.jaxpr;
  const Arrays consts = Cat({known.consts, known_consts});
  HoistedBody h{known.jaxpr, consts, Arrays(num_res)};
  bool effect = false;
  for (const Eqn& e : kj.eqns) effect = effect || HasEffect(e);
  if (consts.empty() || effect) return h;  // an effect runs once per step: nothing moves
  std::vector<bool> per_step(kj.invars.size(), true), instantiate(kj.outvars.size(), false);
  std::fill(per_step.begin(), per_step.begin() + static_cast<ptrdiff_t>(consts.size()), false);
  std::fill(instantiate.begin(), instantiate.begin() + static_cast<ptrdiff_t>(num_outs), true);
  PartialEvalResult p;
  {
    // What moves out of the loop is not a residual of the enclosing split: no remat policy.
    ScopedRematPolicy no_policy(nullptr);
    p = PartialEvalJaxpr(known.jaxpr, per_step, instantiate);
  }
  const Arrays now = Apply(p.known.jaxpr, Cat({p.known.consts, consts}));
  size_t j = 0;
  for (size_t k = num_outs; k < p.out_unknown.size(); ++k) {
    if (!p.out_unknown[k]) h.invariant[k - num_outs] = now[j++];
  }
  h.step = p.unknown;
  h.step_consts.assign(now.begin() + static_cast<ptrdiff_t>(j), now.end());
  return h;
}

// Where a residual that is not loop-invariant comes from.
struct Source {
  enum Kind { kXs, kShiftedYs, kStacked } kind = kStacked;
  size_t index = 0;  // kXs: the known xs; kShiftedYs: the known ys; kStacked: the step's output
  size_t carry = 0;  // kShiftedYs: the known carry
  std::optional<ClosedJaxpr> ops;  // reshapes the second scan's body applies to the slice
};

// Where the step's output `out` (a residual) comes from. The step takes (n_sc consts, n_kk
// carries, xs) and returns (n_kk carries, n_ky ys, residuals): an xs slice or the carry entering
// the step (up to reshapes) whose update is also a ys output need no stack of their own.
Source SourceOf(const Jaxpr& step, size_t out, size_t n_sc, size_t n_kk, size_t n_ky, bool shift_ys) {
  Source src;
  src.index = out;
  const std::optional<ReshapeChain> chain = ReshapeChainOf(step, out);
  if (!chain || chain->input < n_sc) return src;
  if (chain->input >= n_sc + n_kk) return Source{Source::kXs, chain->input - n_sc - n_kk, 0, chain->ops};
  const size_t c = chain->input - n_sc;
  const Var* carry_out = std::get_if<Var>(&step.outvars[c]);
  if (!shift_ys || carry_out == nullptr) return src;
  for (size_t y = 0; y < n_ky; ++y) {
    const Var* v = std::get_if<Var>(&step.outvars[n_kk + y]);
    if (v != nullptr && *v == *carry_out) return Source{Source::kShiftedYs, y, c, chain->ops};
  }
  return src;
}

// The carry entering each step, from the ys of the carry's update: the ys moved one row on
// (one pad with a negative high side: a single copy), then init written into the row that
// opens (the first; reverse: the last).
Array ShiftedCarry(const Array& init, const Array& ys, bool reverse) {
  std::vector<std::array<int64_t, 3>> config(static_cast<size_t>(ys.ndim()), {0, 0, 0});
  config[0] = reverse ? std::array<int64_t, 3>{-1, 1, 0} : std::array<int64_t, 3>{1, -1, 0};
  const Array moved = pad(ys, Zeros(ShapedArray{{}, ys.dtype()}), config);
  std::vector<Array> start(static_cast<size_t>(ys.ndim()), Array(int32_t{0}));
  if (reverse) start[0] = Array(static_cast<int32_t>(ys.shape()[0] - 1));
  return dynamic_update_slice(moved, expand_dims(init, {0}), start);
}

// A residual as the second scan's body sees it: the invariant value, or the slice of its
// stack with its reshapes applied.
Array Residual(const Source& src, const Array& slice_or_value) {
  return src.ops ? Apply(*src.ops, {slice_or_value})[0] : slice_or_value;
}

}  // namespace

std::optional<PartialEvalSplit> ScanPartialEval(absl::Span<const Array> in, const std::vector<bool>& in_unknown,
                                                const ParamMap& params) {
  const ScanParts s = Parts(params);
  const size_t nc = s.num_consts, nk = s.num_carry, n_in = in.size();
  std::vector<bool> unknown = in_unknown;
  const PartialEvalResult pe = SplitBody(s, &unknown);
  Arrays known_consts, known_carry, known_xs, unknown_consts, unknown_carry, unknown_xs;
  for (size_t i = 0; i < n_in; ++i) {
    const bool is_const = i < nc, is_carry = !is_const && i < nc + nk;
    if (unknown[i]) {
      (is_const ? unknown_consts : is_carry ? unknown_carry : unknown_xs).push_back(in[i]);
    } else {
      (is_const ? known_consts : is_carry ? known_carry : known_xs).push_back(in[i]);
    }
  }
  // The known body's outputs: (known carry, known ys, residuals).
  const size_t n_res = pe.residual_avals.size(), n_kk = known_carry.size();
  const size_t n_ky = pe.known.jaxpr.jaxpr->outvars.size() - n_res - n_kk;
  const HoistedBody h = HoistInvariants(pe.known, known_consts, n_kk + n_ky, n_res);
  const Jaxpr& step = *h.step.jaxpr;
  const size_t n_sc = h.step_consts.size();
  // Known ys that are an xs slice are the xs (JAX's forwarding of extensive inputs).
  std::vector<std::optional<size_t>> ys_from_xs(n_ky);
  for (size_t y = 0; y < n_ky; ++y) {
    if (const Var* v = std::get_if<Var>(&step.outvars[n_kk + y])) {
      for (size_t i = n_sc + n_kk; i < step.invars.size(); ++i) {
        if (step.invars[i] == *v) ys_from_xs[y] = i - n_sc - n_kk;
      }
    }
  }
  std::vector<Source> sources(n_res);
  for (size_t r = 0, out = n_kk + n_ky; r < n_res; ++r) {
    if (!h.invariant[r].defined()) sources[r] = SourceOf(step, out++, n_sc, n_kk, n_ky, s.length > 0);
  }
  Hoisted known_body = TraceHoisted(
      [&](absl::Span<const Array> a) {
        const Arrays outs = Apply(h.step, a);
        Arrays kept(outs.begin(), outs.begin() + static_cast<ptrdiff_t>(n_kk));
        for (size_t y = 0; y < n_ky; ++y) {
          if (!ys_from_xs[y]) kept.push_back(outs[n_kk + y]);
        }
        for (size_t r = 0; r < n_res; ++r) {
          if (!h.invariant[r].defined() && sources[r].kind == Source::kStacked) kept.push_back(outs[sources[r].index]);
        }
        return kept;
      },
      step.in_avals(), "scan partial_eval(known)");
  const Arrays known_outs = BindScan(known_body, h.step_consts, known_carry, known_xs, s.length, s.reverse, s.unroll);
  size_t next = n_kk;
  Arrays known_ys;
  for (size_t y = 0; y < n_ky; ++y) known_ys.push_back(ys_from_xs[y] ? known_xs[*ys_from_xs[y]] : known_outs[next++]);
  Arrays inv_res, stacked_res;
  for (size_t r = 0; r < n_res; ++r) {
    const Source& src = sources[r];
    if (h.invariant[r].defined()) {
      inv_res.push_back(h.invariant[r]);
    } else if (src.kind == Source::kXs) {
      stacked_res.push_back(known_xs[src.index]);
    } else if (src.kind == Source::kShiftedYs) {
      stacked_res.push_back(ShiftedCarry(known_carry[src.carry], known_ys[src.index], s.reverse));
    } else {
      stacked_res.push_back(known_outs[next++]);
    }
  }
  // The unknown scan: consts (invariant residuals, unknown consts), carry (unknown carry),
  // xs (residual stacks, unknown xs); its body restores the residuals' order and forms.
  std::vector<ShapedArray> avals = AvalsOf(Cat({inv_res, unknown_consts, unknown_carry}));
  for (const Array& x : Cat({stacked_res, unknown_xs})) avals.push_back(Unstacked(x.aval()));
  const size_t n_inv = inv_res.size(), n_uc = unknown_consts.size(), n_uk = unknown_carry.size();
  Hoisted unknown_body = TraceHoisted(
      [&](absl::Span<const Array> a) {
        Arrays args;
        for (size_t r = 0, iv = 0, st = n_inv + n_uc + n_uk; r < n_res; ++r) {
          args.push_back(h.invariant[r].defined() ? a[iv++] : Residual(sources[r], a[st++]));
        }
        const Arrays rest = Cat({a.subspan(n_inv, n_uc + n_uk), a.subspan(n_inv + n_uc + n_uk + stacked_res.size())});
        args.insert(args.end(), rest.begin(), rest.end());
        return Apply(pe.unknown, args);
      },
      avals, "scan partial_eval(unknown)");
  PartialEvalSplit split;
  const Arrays staged_consts = Cat({unknown_body.consts, inv_res, unknown_consts});
  split.staged = kScan;
  split.staged_inputs = Cat({staged_consts, unknown_carry, stacked_res, unknown_xs});
  split.staged_params = ScanParams(unknown_body.jaxpr, staged_consts.size(), n_uk, s.length, s.reverse, s.unroll);
  for (size_t k = 0, kc = 0, ky = 0; k < pe.out_unknown.size(); ++k) {
    if (pe.out_unknown[k]) {
      split.known_outs.emplace_back();
    } else {
      split.known_outs.push_back(k < nk ? known_outs[kc++] : known_ys[ky++]);
    }
  }
  return split;
}

// Transpose: split the body into its non-linear part (run forward now, saving residuals per
// iteration, loop-invariant ones once) and its linear part, then run the linear part's
// transpose as a scan in the opposite direction, accumulating the consts' cotangents in the
// carry.
Arrays ScanTranspose(absl::Span<const Array> cts_out, absl::Span<const TransposeArg> args, const ParamMap& params) {
  const ScanParts s = Parts(params);
  const size_t nc = s.num_consts, nk = s.num_carry, n_in = args.size();
  std::vector<bool> lin(n_in);
  for (size_t i = 0; i < n_in; ++i) lin[i] = args[i].is_linear();
  // A carry is linear if it enters linear or the body feeds linear values into it (a zero
  // tangent instantiated as a constant enters known).
  const PartialEvalResult pe = SplitBody(s, &lin);
  Arrays known_consts, known_carry, known_xs;
  for (size_t i = 0; i < n_in; ++i) {
    if (lin[i]) continue;
    (i < nc ? known_consts : i < nc + nk ? known_carry : known_xs).push_back(args[i].value);
  }
  // The residuals of the linear part: loop-invariant ones (consts, or computed from consts
  // once), xs slices (the xs themselves), or the known part's per-step values (stacked by a
  // forward scan of the known part, run only for these).
  const size_t n_res = pe.residual_avals.size(), n_kk = known_carry.size();
  const size_t n_known_out = pe.known.jaxpr.jaxpr->outvars.size() - n_res;
  const HoistedBody h = HoistInvariants(pe.known, known_consts, n_known_out, n_res);
  const Jaxpr& step = *h.step.jaxpr;
  std::vector<Source> sources(n_res);
  std::vector<size_t> computed;
  for (size_t r = 0, out = n_known_out; r < n_res; ++r) {
    if (h.invariant[r].defined()) continue;
    sources[r] = SourceOf(step, out++, h.step_consts.size(), n_kk, 0, /*shift_ys=*/false);
    if (sources[r].kind == Source::kStacked) computed.push_back(sources[r].index);
  }
  Arrays computed_res;
  if (!computed.empty()) {
    Hoisted forward = TraceHoisted(
        [&](absl::Span<const Array> a) {
          const Arrays outs = Apply(h.step, a);
          Arrays kept(outs.begin(), outs.begin() + static_cast<ptrdiff_t>(n_kk));
          for (size_t out : computed) kept.push_back(outs[out]);
          return kept;
        },
        step.in_avals(), "scan transpose(forward)");
    const Arrays outs = BindScan(forward, h.step_consts, known_carry, known_xs, s.length, s.reverse, s.unroll);
    computed_res.assign(outs.begin() + static_cast<ptrdiff_t>(n_kk), outs.end());
  }
  Arrays inv_res, stacked_res;
  for (size_t r = 0, c = 0; r < n_res; ++r) {
    if (h.invariant[r].defined()) {
      inv_res.push_back(h.invariant[r]);
    } else {
      stacked_res.push_back(sources[r].kind == Source::kXs ? known_xs[sources[r].index] : computed_res[c++]);
    }
  }
  // Backward: consts (invariant residuals); carry (ct of linear consts, ct of linear carries);
  // xs (stacked residuals, ct of linear ys).
  std::vector<ShapedArray> lin_const_avals;
  for (size_t i = 0; i < nc; ++i) {
    if (lin[i]) lin_const_avals.push_back(args[i].aval);
  }
  const std::vector<ShapedArray> body_out = s.body.jaxpr->out_avals();
  Arrays ct_consts, ct_carry, ct_ys;
  for (const ShapedArray& a : lin_const_avals) ct_consts.push_back(Zeros(a));
  for (size_t k = 0; k < nk; ++k) {
    if (lin[nc + k]) ct_carry.push_back(cts_out[k].defined() ? cts_out[k] : Zeros(args[nc + k].aval));
  }
  for (size_t k = nk; k < body_out.size(); ++k) {
    if (pe.out_unknown[k]) ct_ys.push_back(cts_out[k].defined() ? cts_out[k] : Zeros(Stacked(body_out[k], s.length)));
  }
  std::vector<ShapedArray> avals = AvalsOf(Cat({inv_res, ct_consts, ct_carry}));
  for (const Array& x : Cat({stacked_res, ct_ys})) avals.push_back(Unstacked(x.aval()));
  std::vector<bool> unknown_linear(n_res, false);
  for (size_t i = 0; i < n_in; ++i) {
    if (lin[i]) unknown_linear.push_back(true);
  }
  const size_t n_inv = inv_res.size(), n_cc = ct_consts.size(), n_ck = ct_carry.size(), n_st = stacked_res.size();
  Hoisted body_t = TraceHoisted(
      [&](absl::Span<const Array> a) {
        const absl::Span<const Array> inv = a.subspan(0, n_inv), acc = a.subspan(n_inv, n_cc),
                                      ck = a.subspan(n_inv + n_cc, n_ck), st = a.subspan(n_inv + n_cc + n_ck, n_st),
                                      cy = a.subspan(n_inv + n_cc + n_ck + n_st);
        Arrays res;
        for (size_t r = 0, iv = 0, j = 0; r < n_res; ++r) {
          res.push_back(h.invariant[r].defined() ? inv[iv++] : Residual(sources[r], st[j++]));
        }
        Arrays cts = TransposeJaxpr(pe.unknown, unknown_linear, res, Cat({ck, cy}));
        Arrays out;
        for (size_t i = 0; i < n_cc; ++i) out.push_back(add(acc[i], cts[i]));
        out.insert(out.end(), cts.begin() + static_cast<ptrdiff_t>(n_cc), cts.end());
        return out;
      },
      avals, "scan transpose");
  Arrays outs = BindScan(body_t, inv_res, Cat({ct_consts, ct_carry}), Cat({stacked_res, ct_ys}), s.length, !s.reverse,
                         s.unroll);
  // Carries promoted to linear entered as known constants (zeros): they get no cotangent.
  Arrays result(n_in);
  for (size_t i = 0, j = 0; i < n_in; ++i) {
    if (!lin[i]) continue;
    if (args[i].is_linear()) result[i] = outs[j];
    ++j;
  }
  return result;
}

}  // namespace jx::lax::internal

// scan: a loop over the leading axis of xs with a carry (JAX's scan_p). Inputs are
// (consts..., carry..., xs...); the body maps (consts, carry, x) -> (carry, y) and the ys
// stack along a new leading axis. Reverse mode transposes to a reverse scan over residuals
// saved by a forward scan of the body's non-linear part.
#include <algorithm>

#include "jx/core/interpreter.h"
#include "jx/lax/binary_ops.h"
#include "jx/lax/carry_types.h"
#include "jx/lax/control_flow.h"
#include "jx/transforms/jaxpr_util.h"
#include "jx/lax/op_util.h"
#include "jx/lax/rule_util.h"
#include "jx/lax/shape_ops.h"
#include "jx/lax/slicing_ops.h"
#include "jx/transforms/ad_util.h"
#include "jx/transforms/dce.h"
#include "jx/transforms/jvp.h"
#include "jx/transforms/vmap.h"

namespace jx::lax {
namespace internal {
namespace {

const Primitive kScan = Primitive::Intern("scan");

struct ScanParts {
  ClosedJaxpr body;
  int64_t length;
  bool reverse;
  size_t num_consts, num_carry;
  int64_t unroll;
};

ScanParts Parts(const ParamMap& params) {
  return ScanParts{GetJaxpr(params, "jaxpr"), params.GetInt("length"), params.GetBool("reverse"),
                   static_cast<size_t>(params.GetInt("num_consts")), static_cast<size_t>(params.GetInt("num_carry")),
                   params.GetInt("unroll")};
}

// JAX's scan params, as its jaxprs print them: `linear` marks the inputs known to be linear
// (none, as traced: JAX's transpose uses it only as a hint), `unroll` the iterations per loop
// step, and `_split_transpose` the experimental transpose split jx does not offer.
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

// Binds scan over a traced body whose hoisted consts lead the consts.
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

// Partial evaluation: a known scan runs the body's known part now and stacks the residuals
// the unknown part needs per iteration; an unknown scan over those residuals is staged. A
// residual that is a known const forwarded unchanged is passed once, not stacked.
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
  // Known body inputs are (hoisted consts, known consts, known carry, known xs); its outputs
  // (known carry, known ys, residuals). Residuals that are a const input are loop-invariant.
  const Jaxpr& kj = *pe.known.jaxpr.jaxpr;
  const size_t n_res = pe.residual_avals.size();
  const size_t n_known_out = kj.outvars.size() - n_res;
  const Arrays known_all_consts = Cat({pe.known.consts, known_consts});
  std::vector<std::optional<size_t>> invariant(n_res);  // index into known_all_consts
  for (size_t r = 0; r < n_res; ++r) {
    if (const Var* v = std::get_if<Var>(&kj.outvars[n_known_out + r])) {
      for (size_t i = 0; i < known_all_consts.size(); ++i) {
        if (kj.invars[i] == *v) invariant[r] = i;
      }
    }
  }
  std::vector<ShapedArray> known_avals = kj.in_avals();
  Hoisted known_body = TraceHoisted(
      [&](absl::Span<const Array> a) {
        Arrays outs = Apply(pe.known.jaxpr, a);
        Arrays kept(outs.begin(), outs.begin() + static_cast<ptrdiff_t>(n_known_out));
        for (size_t r = 0; r < n_res; ++r) {
          if (!invariant[r]) kept.push_back(outs[n_known_out + r]);
        }
        return kept;
      },
      known_avals, "scan partial_eval(known)");
  Arrays known_outs = BindScan(known_body, known_all_consts, known_carry, known_xs, s.length, s.reverse, s.unroll);
  Arrays inv_res, stacked_res;
  for (size_t r = 0, j = n_known_out; r < n_res; ++r) {
    if (invariant[r]) {
      inv_res.push_back(known_all_consts[*invariant[r]]);
    } else {
      stacked_res.push_back(known_outs[j++]);
    }
  }
  // The unknown scan: consts (invariant residuals, unknown consts), carry (unknown carry),
  // xs (stacked residuals, unknown xs); its body restores the residuals' order.
  std::vector<ShapedArray> avals = AvalsOf(Cat({inv_res, unknown_consts, unknown_carry}));
  for (const Array& x : Cat({stacked_res, unknown_xs})) avals.push_back(Unstacked(x.aval()));
  const size_t n_inv = inv_res.size(), n_uc = unknown_consts.size(), n_uk = unknown_carry.size();
  Hoisted unknown_body = TraceHoisted(
      [&](absl::Span<const Array> a) {
        Arrays args;
        for (size_t r = 0, iv = 0, st = 0; r < n_res; ++r) {
          args.push_back(invariant[r] ? a[iv++] : a[n_inv + n_uc + n_uk + st++]);
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
  for (size_t k = 0, j = 0; k < pe.out_unknown.size(); ++k) {
    split.known_outs.push_back(pe.out_unknown[k] ? Array() : known_outs[j++]);
  }
  return split;
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

// Transpose: split the body into its non-linear part (run forward now, saving residuals per
// iteration) and its linear part, then run the linear part's transpose as a scan in the
// opposite direction, accumulating the consts' cotangents in the carry.
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
  // Where each residual of the linear part comes from: a known const (loop-invariant, passed
  // once), a known xs slice (the xs themselves), or the known part's computation (stacked by
  // a forward scan of the known part, run only for these). Stacking a forwarded const would
  // copy it once per step (a [steps, 256, 256] weight for an RNN's grad).
  const Jaxpr& kj = *pe.known.jaxpr.jaxpr;
  const size_t n_res = pe.residual_avals.size();
  const size_t n_known_out = kj.outvars.size() - n_res;
  const Arrays known_all_consts = Cat({pe.known.consts, known_consts});
  const size_t n_kc = known_all_consts.size(), n_kk = known_carry.size();
  enum class From { kConst, kXs, kBody };
  std::vector<From> from(n_res, From::kBody);
  std::vector<size_t> index(n_res, 0);
  std::vector<size_t> computed;
  for (size_t r = 0; r < n_res; ++r) {
    if (const Var* v = std::get_if<Var>(&kj.outvars[n_known_out + r])) {
      for (size_t i = 0; i < kj.invars.size(); ++i) {
        if (kj.invars[i] != *v) continue;
        if (i < n_kc) {
          from[r] = From::kConst, index[r] = i;
        } else if (i >= n_kc + n_kk) {
          from[r] = From::kXs, index[r] = i - n_kc - n_kk;
        }
        break;
      }
    }
    if (from[r] == From::kBody) computed.push_back(r);
  }
  Arrays computed_res;
  if (!computed.empty()) {
    Hoisted forward = TraceHoisted(
        [&](absl::Span<const Array> a) {
          Arrays outs = Apply(pe.known.jaxpr, a);
          Arrays kept(outs.begin(), outs.begin() + static_cast<ptrdiff_t>(n_kk));
          for (size_t r : computed) kept.push_back(outs[n_known_out + r]);
          return kept;
        },
        kj.in_avals(), "scan transpose(forward)");
    Arrays outs = BindScan(forward, known_all_consts, known_carry, known_xs, s.length, s.reverse, s.unroll);
    computed_res.assign(outs.begin() + static_cast<ptrdiff_t>(n_kk), outs.end());
  }
  Arrays inv_res, stacked_res;
  for (size_t r = 0, c = 0; r < n_res; ++r) {
    if (from[r] == From::kConst) inv_res.push_back(known_all_consts[index[r]]);
    if (from[r] == From::kXs) stacked_res.push_back(known_xs[index[r]]);
    if (from[r] == From::kBody) stacked_res.push_back(computed_res[c++]);
  }
  // Backward: consts (invariant residuals); carry (ct of linear consts, ct of linear carries);
  // xs (stacked residuals, ct of linear ys).
  std::vector<ShapedArray> lin_const_avals, lin_carry_avals, lin_x_avals;
  for (size_t i = 0; i < n_in; ++i) {
    if (!lin[i]) continue;
    (i < nc ? lin_const_avals : i < nc + nk ? lin_carry_avals : lin_x_avals).push_back(args[i].aval);
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
        for (size_t r = 0, iv = 0, j = 0; r < n_res; ++r) res.push_back(from[r] == From::kConst ? inv[iv++] : st[j++]);
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

// cond: picks one of several branch jaxprs by an int32 index (JAX's cond_p; lax::cond turns a
// predicate into index 0/1). Branches take (hoisted consts..., operands...).
#include <algorithm>

#include "jx/core/interpreter.h"
#include "jx/lax/binary_ops.h"
#include "jx/lax/control_flow.h"
#include "jx/transforms/jaxpr_util.h"
#include "jx/lax/convert_ops.h"
#include "jx/lax/op_util.h"
#include "jx/lax/shape_ops.h"
#include "jx/transforms/ad_util.h"
#include "jx/transforms/dce.h"
#include "jx/transforms/jvp.h"
#include "jx/transforms/vmap.h"

namespace jx::lax {
namespace internal {
namespace {

const Primitive kCond = Primitive::Intern("cond");

std::vector<ClosedJaxpr> Branches(const ParamMap& params) {
  std::vector<ClosedJaxpr> out;
  for (const Param& p : params.GetList("branches")) {
    out.push_back(static_cast<const JaxprParam&>(*std::get<std::shared_ptr<const ParamObject>>(p.value)).closed());
  }
  return out;
}

// A cond equation over branches traced separately (their hoisted consts become operands).
struct CondEqn {
  Arrays inputs;
  ParamMap params;
};
CondEqn MakeCond(const Array& index, const std::vector<Hoisted>& traced, absl::Span<const ShapedArray> arg_avals,
                 absl::Span<const Array> args) {
  std::vector<Array> consts;
  const std::vector<ClosedJaxpr> branches = JoinHoisted(traced, arg_avals, &consts);
  ParamList list;
  for (const ClosedJaxpr& b : branches) list.push_back(JaxprParamOf(b));
  return CondEqn{Cat({absl::MakeConstSpan(&index, 1), consts, args}), ParamMap{{"branches", list}}};
}
Arrays BindCond(const Array& index, const std::vector<Hoisted>& traced, absl::Span<const ShapedArray> arg_avals,
                absl::Span<const Array> args) {
  CondEqn eqn = MakeCond(index, traced, arg_avals, args);
  return BindOp(kCond, eqn.inputs, eqn.params);
}

Avals CondAbstractEval(InAvals in, const ParamMap& params) {
  const std::vector<ClosedJaxpr> branches = Branches(params);
  if (in.empty() || in[0]->ndim() != 0 || in[0]->dtype != int32) {
    ThrowOpError<TypeError>("cond", "the branch index must be an int32 scalar, got ", in.empty() ? "nothing" : in[0]->str());
  }
  for (size_t b = 0; b < branches.size(); ++b) {
    const std::vector<ShapedArray> want = branches[b].jaxpr->in_avals();
    bool ok = want.size() + 1 == in.size();
    for (size_t i = 0; ok && i < want.size(); ++i) ok = SameShapeDType(want[i], *in[i + 1]);
    if (!ok) ThrowOpError<TypeError>("cond", "branch ", b, " takes (", AvalsStr(want), ") but the operands are (",
                                     AvalsToString(in.subspan(1)), ")");
  }
  const std::vector<ShapedArray> outs = branches[0].jaxpr->out_avals();
  return Avals(outs.begin(), outs.end());
}

Arrays CondImpl(absl::Span<const Array> in, const ParamMap& params, absl::Span<const ShapedArray>) {
  const std::vector<ClosedJaxpr> branches = Branches(params);
  const int64_t i = std::clamp<int64_t>(in[0].item<int64_t>(), 0, static_cast<int64_t>(branches.size()) - 1);
  return Apply(branches[static_cast<size_t>(i)], in.subspan(1));
}

JvpResult CondJvp(absl::Span<const Array> primals, absl::Span<const Array> tangents, const ParamMap& params) {
  const std::vector<ClosedJaxpr> branches = Branches(params);
  const absl::Span<const Array> ops = primals.subspan(1);
  std::vector<ShapedArray> avals = AvalsOf(ops);
  Arrays nonzero;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (tangents[i + 1].defined()) {
      nonzero.push_back(tangents[i + 1]);
      avals.push_back(tangents[i + 1].aval());
    }
  }
  const std::vector<ShapedArray> out_avals = branches[0].jaxpr->out_avals();
  std::vector<Hoisted> traced;
  for (const ClosedJaxpr& b : branches) {
    traced.push_back(TraceHoisted(
        [&](absl::Span<const Array> args) {
          Arrays ps(args.begin(), args.begin() + ops.size()), ts(ops.size());
          for (size_t i = 0, j = ops.size(); i < ops.size(); ++i) {
            if (tangents[i + 1].defined()) ts[i] = args[j++];
          }
          auto [po, to] = JvpCall(AsFn(b), ps, ts);
          // (primal outputs, tangents): every float output gets a tangent in every branch,
          // so the branches agree.
          Arrays out = po;
          for (size_t k = 0; k < to.size(); ++k) {
            if (HasTangentSpace(out_avals[k].dtype)) out.push_back(to[k].defined() ? to[k] : Zeros(out_avals[k]));
          }
          return out;
        },
        avals, "cond jvp"));
  }
  // One cond computes primals and tangents. Under linearize its partial_eval rule splits it:
  // a known cond runs now and returns residuals, and only the tangent cond is staged.
  Arrays outs = BindCond(primals[0], traced, avals, Cat({ops, nonzero}));
  JvpResult r;
  r.primals_out.assign(outs.begin(), outs.begin() + static_cast<ptrdiff_t>(out_avals.size()));
  for (size_t k = 0, j = out_avals.size(); k < out_avals.size(); ++k) {
    r.tangents_out.push_back(HasTangentSpace(out_avals[k].dtype) ? outs[j++] : Array());
  }
  return r;
}

BatchResult CondBatch(absl::Span<const Array> args, absl::Span<const int64_t> dims, int64_t size,
                      const ParamMap& params) {
  const std::vector<ClosedJaxpr> branches = Branches(params);
  Arrays ops;
  std::vector<int64_t> in_axes;
  for (size_t i = 1; i < args.size(); ++i) {
    ops.push_back(dims[i] == kNotMapped ? args[i] : MoveAxis(args[i], dims[i], 0));
    in_axes.push_back(dims[i] == kNotMapped ? kNotMapped : 0);
  }
  const size_t num_out = branches[0].jaxpr->outvars.size();
  if (dims[0] == kNotMapped) {
    const std::vector<ShapedArray> avals = AvalsOf(ops);
    std::vector<Hoisted> traced;
    for (const ClosedJaxpr& b : branches) {
      traced.push_back(TraceHoisted(
          [&](absl::Span<const Array> a) { return VmapCall(AsFn(b), a, in_axes, {0}, size); }, avals, "cond vmap"));
    }
    return BatchResult{BindCond(args[0], traced, avals, ops), std::vector<int64_t>(num_out, 0)};
  }
  // A batched index: every branch runs on the whole batch and select_n picks per example.
  const int32_t last = static_cast<int32_t>(branches.size()) - 1;
  const Array which = clamp(Array::Scalar(0, int32), MoveAxis(args[0], dims[0], 0), Array::Scalar(last, int32));
  std::vector<Arrays> per_branch;
  for (const ClosedJaxpr& b : branches) per_branch.push_back(VmapCall(AsFn(b), ops, in_axes, {0}, size));
  BatchResult r;
  for (size_t k = 0; k < num_out; ++k) {
    std::vector<Array> cases;
    for (const Arrays& outs : per_branch) cases.push_back(outs[k]);
    if (cases.size() == 1) {
      r.outs.push_back(cases[0]);
    } else {
      const Shape& shape = cases[0].shape();
      Array w = broadcast_in_dim(cases.size() == 2 ? ne(which, Array::Scalar(0, int32)) : which, shape, {0});
      r.outs.push_back(select_n(w, cases));
    }
    r.out_dims.push_back(0);
  }
  return r;
}

// Partial evaluation with a known index: each branch splits into known and unknown parts
// (an output unknown in any branch is unknown in all). The known cond returns the known
// outputs plus every branch's residuals (zeros for the branches not taken); the staged cond
// gives each branch its own residuals. An unknown index stages the whole cond.
std::optional<PartialEvalSplit> CondPartialEval(absl::Span<const Array> in, const std::vector<bool>& in_unknown,
                                                const ParamMap& params) {
  if (in_unknown[0]) return std::nullopt;
  const std::vector<ClosedJaxpr> branches = Branches(params);
  const std::vector<bool> ops_unknown(in_unknown.begin() + 1, in_unknown.end());
  const size_t num_out = branches[0].jaxpr->outvars.size();
  std::vector<bool> out_unknown(num_out, false);
  std::vector<PartialEvalResult> pes;
  for (int pass = 0; pass < 2; ++pass) {
    pes.clear();
    for (const ClosedJaxpr& b : branches) pes.push_back(PartialEvalJaxpr(b, ops_unknown, out_unknown));
    bool same = true;
    for (const PartialEvalResult& pe : pes) {
      for (size_t k = 0; k < num_out; ++k) {
        if (pe.out_unknown[k] != out_unknown[k]) same = false;
        out_unknown[k] = out_unknown[k] || pe.out_unknown[k];
      }
    }
    if (same) break;
  }
  Arrays known_ops, unknown_ops;
  for (size_t i = 1; i < in.size(); ++i) (in_unknown[i] ? unknown_ops : known_ops).push_back(in[i]);
  // JAX's _merge_branch_residuals: only one branch runs, so branches share residual slots;
  // each branch's k-th residual of a type takes the k-th slot of that type (slot[b][r]).
  std::vector<ShapedArray> res_avals;
  std::vector<std::vector<size_t>> slot(pes.size());
  for (size_t b = 0; b < pes.size(); ++b) {
    std::vector<bool> taken(res_avals.size(), false);
    for (const ShapedArray& aval : pes[b].residual_avals) {
      size_t s = 0;
      while (s < res_avals.size() && (taken[s] || !(res_avals[s] == aval))) ++s;
      if (s == res_avals.size()) {
        res_avals.push_back(aval);
        taken.push_back(false);
      }
      taken[s] = true;
      slot[b].push_back(s);
    }
  }
  const std::vector<ShapedArray> known_avals = AvalsOf(known_ops);
  std::vector<Hoisted> known_branches, unknown_branches;
  for (size_t b = 0; b < pes.size(); ++b) {
    known_branches.push_back(TraceHoisted(
        [&](absl::Span<const Array> a) {
          Arrays outs = Apply(pes[b].known.jaxpr, Cat({pes[b].known.consts, a}));
          const size_t n_known = outs.size() - pes[b].residual_avals.size();
          Arrays result(outs.begin(), outs.begin() + static_cast<ptrdiff_t>(n_known));
          Arrays slots(res_avals.size());
          for (size_t r = 0; r < slot[b].size(); ++r) slots[slot[b][r]] = outs[n_known + r];
          for (size_t s = 0; s < res_avals.size(); ++s) {
            result.push_back(slots[s].defined() ? slots[s] : Zeros(res_avals[s]));
          }
          return result;
        },
        known_avals, "cond partial_eval(known)"));
  }
  Arrays known_outs = BindCond(in[0], known_branches, known_avals, known_ops);
  const size_t n_known = known_outs.size() - res_avals.size();
  const Arrays residuals(known_outs.begin() + static_cast<ptrdiff_t>(n_known), known_outs.end());
  std::vector<ShapedArray> unknown_avals = res_avals;
  for (const Array& x : unknown_ops) unknown_avals.push_back(x.aval());
  for (size_t b = 0; b < pes.size(); ++b) {
    unknown_branches.push_back(TraceHoisted(
        [&](absl::Span<const Array> a) {
          Arrays mine;
          for (size_t s : slot[b]) mine.push_back(a[s]);
          return Apply(pes[b].unknown, Cat({mine, a.subspan(res_avals.size())}));
        },
        unknown_avals, "cond partial_eval(unknown)"));
  }
  CondEqn staged = MakeCond(in[0], unknown_branches, unknown_avals, Cat({residuals, unknown_ops}));
  PartialEvalSplit split;
  split.staged = kCond;
  split.staged_inputs = std::move(staged.inputs);
  split.staged_params = std::move(staged.params);
  for (size_t k = 0, j = 0; k < num_out; ++k) split.known_outs.push_back(out_unknown[k] ? Array() : known_outs[j++]);
  return split;
}

Arrays CondTranspose(absl::Span<const Array> cts_out, absl::Span<const TransposeArg> args, const ParamMap& params) {
  const std::vector<ClosedJaxpr> branches = Branches(params);
  if (args[0].is_linear()) throw InternalError("cond transpose: the index cannot be linear");
  std::vector<bool> linear;
  Arrays known;
  for (size_t i = 1; i < args.size(); ++i) {
    linear.push_back(args[i].is_linear());
    if (!args[i].is_linear()) known.push_back(args[i].value);
  }
  const std::vector<ShapedArray> out_avals = branches[0].jaxpr->out_avals();
  Arrays cts;
  for (size_t k = 0; k < cts_out.size(); ++k) cts.push_back(cts_out[k].defined() ? cts_out[k] : Zeros(out_avals[k]));
  const std::vector<ShapedArray> avals = AvalsOf(Cat({known, cts}));
  std::vector<Hoisted> traced;
  for (const ClosedJaxpr& b : branches) {
    traced.push_back(TraceHoisted(
        [&](absl::Span<const Array> a) {
          return TransposeJaxpr(b, linear, a.subspan(0, known.size()), a.subspan(known.size()));
        },
        avals, "cond transpose"));
  }
  Arrays outs = BindCond(args[0].value, traced, avals, Cat({known, cts}));
  Arrays result(args.size());
  for (size_t i = 1, j = 0; i < args.size(); ++i) {
    if (args[i].is_linear()) result[i] = outs[j++];
  }
  return result;
}

// JAX's _cond_dce_rule: every branch drops the unused outputs; the operands any branch still
// reads stay operands of all of them (the index always stays).
DceRuleResult CondDce(const std::vector<bool>& used_outputs, const Eqn& eqn) {
  bool any_used = false;
  for (bool u : used_outputs) any_used |= u;
  if (!any_used && !HasEffect(eqn)) return {std::vector<bool>(eqn.inputs.size(), false), std::nullopt};
  const std::vector<ClosedJaxpr> branches = Branches(eqn.params);
  std::vector<bool> used_ops(eqn.inputs.size() - 1, false);
  for (const ClosedJaxpr& b : branches) {
    const std::vector<bool> read = DceJaxpr(*b.jaxpr, used_outputs).used_inputs;
    for (size_t i = 0; i < read.size(); ++i) used_ops[i] = used_ops[i] || read[i];
  }
  ParamList pruned;
  for (const ClosedJaxpr& b : branches) {
    pruned.push_back(JaxprParamOf(ClosedJaxpr{DceJaxpr(*b.jaxpr, used_outputs, used_ops).jaxpr, {}}));
  }
  DceRuleResult r;
  r.used_inputs.push_back(true);
  r.used_inputs.insert(r.used_inputs.end(), used_ops.begin(), used_ops.end());
  Eqn out{eqn.primitive, {eqn.inputs[0]}, {}, eqn.params};
  for (size_t i = 0; i < used_ops.size(); ++i) {
    if (used_ops[i]) out.inputs.push_back(eqn.inputs[i + 1]);
  }
  for (size_t o = 0; o < eqn.outputs.size(); ++o) {
    if (used_outputs[o]) out.outputs.push_back(eqn.outputs[o]);
  }
  out.params.Set("branches", std::move(pruned));
  r.eqn = std::move(out);
  return r;
}

}  // namespace

void RegisterCond(Registry& r) {
  PrimitiveRules& rules = r.Define(kCond);
  rules.abstract_eval = CondAbstractEval;
  rules.impl = CondImpl;
  rules.jvp = CondJvp;
  rules.batch = CondBatch;
  rules.transpose = CondTranspose;
  rules.partial_eval = CondPartialEval;
  RegisterDceRule(kCond, CondDce);
}

}  // namespace internal

Array cond_index_from_predicate(const Array& pred) {
  if (!pred.defined() || pred.ndim() != 0) {
    throw TypeError(StrCat("cond: the predicate must be a scalar, got ", pred.defined() ? pred.aval().str() : "an empty Array"));
  }
  const Array truth = pred.dtype() == bool_ ? pred : ne(pred, Array::Scalar(0, pred.dtype()));
  return convert_element_type(truth, int32);
}

Array switch_index(const Array& index, size_t num_branches) {
  if (!index.defined() || index.ndim() != 0 || !(IsInteger(index.dtype()) || index.dtype() == bool_)) {
    throw TypeError(StrCat("switch_: the branch index must be an integer scalar, got ",
                           index.defined() ? index.aval().str() : "an empty Array"));
  }
  if (num_branches == 0) throw ValueError("switch_ requires at least one branch");
  // As jax.lax.switch: convert to int32, then clamp, so the jaxpr shows
  // `clamp 0:i32[] c 2:i32[]` before the cond.
  return clamp(Array::Scalar(0, int32), convert_element_type(index, int32),
               Array::Scalar(static_cast<double>(num_branches - 1), int32));
}

Arrays cond_flat(const Array& index, const std::vector<ArraysFn>& branches, absl::Span<const Array> operands,
                 const std::vector<std::string>& branch_names) {
  using namespace internal;
  if (branches.empty()) throw ValueError("cond/switch_ requires at least one branch");
  if (!index.defined() || index.ndim() != 0 || !(IsInteger(index.dtype()) || index.dtype() == bool_)) {
    throw TypeError(StrCat("switch_: the branch index must be an integer scalar, got ",
                           index.defined() ? index.aval().str() : "an empty Array"));
  }
  const Array idx = convert_element_type(index, int32);
  const std::vector<ShapedArray> avals = AvalsOf(operands);
  std::vector<Hoisted> traced;
  for (size_t b = 0; b < branches.size(); ++b) traced.push_back(TraceHoisted(branches[b], avals, StrCat("cond branch ", b)));
  const std::vector<ShapedArray> first = traced[0].jaxpr.jaxpr->out_avals();
  for (size_t b = 1; b < traced.size(); ++b) {
    const std::vector<ShapedArray> other = traced[b].jaxpr.jaxpr->out_avals();
    bool same = other.size() == first.size();
    for (size_t k = 0; same && k < first.size(); ++k) same = SameShapeDType(first[k], other[k]);
    if (!same) {
      auto name = [&](size_t i) { return i < branch_names.size() ? branch_names[i] : StrCat("branch ", i); };
      throw TypeError(StrCat("cond: ", name(0), " returns (", AvalsStr(first), ") but ", name(b), " returns (",
                             AvalsStr(other), "); every branch must return the same shapes and dtypes"));
    }
  }
  return BindCond(idx, traced, avals, operands);
}
}  // namespace jx::lax
